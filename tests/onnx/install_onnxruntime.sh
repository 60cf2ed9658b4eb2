#!/usr/bin/env bash
# The ONNX tests' ONNX Runtime: onnxruntime-node from npm into DIR (once; 290 MB), with
# --ignore-scripts: its install script only downloads GPU providers from outside, and the CPU
# library ships in the package.
#   install_onnxruntime.sh DIR
set -euo pipefail
dir=$1
version=1.30.0
if [ -f "$dir/node_modules/onnxruntime-node/package.json" ] &&
  grep -q "\"version\": \"$version\"" "$dir/node_modules/onnxruntime-node/package.json"; then
  echo "onnxruntime-node $version in $dir"
  exit 0
fi
command -v npm > /dev/null || { echo "install_onnxruntime: npm not found (scripts/install-deps installs it)" >&2; exit 1; }
mkdir -p "$dir"
npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$dir" "onnxruntime-node@$version"
echo "onnxruntime-node $version installed in $dir"
