#!/usr/bin/env bash
# zrt-ckpt end to end on a real checkpoint: inspect, verify, export to safetensors and back
# (equal to the original), a bf16 export (close, not equal), diff, a corrupted file, paths
# that are not regular files (a FIFO, a folder, a device: refused at once, named), and
# exports onto a full disk (the system's reason, no partial file, no crash).
#   test_zrt_ckpt.sh ZRT_CKPT MAKE_CHECKPOINT MPIEXEC [FLAGS...]
set -euo pipefail
ckpt=$1 make=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$@" -n 2 "$make" save "$dir/model.h5" > /dev/null
"$ckpt" inspect "$dir/model.h5" | tee "$dir/inspect.txt"
grep -q "params/w .*ok" "$dir/inspect.txt" || fail "inspect does not list params/w as ok"
grep -q "optimizer/exp_avg/w" "$dir/inspect.txt" || fail "inspect does not list the optimizer state"
"$ckpt" inspect --json "$dir/model.h5" > "$dir/inspect.json"
grep -q '"checksum": "ok"' "$dir/inspect.json" || fail "inspect --json"
# --attributes: the header alone, no table (the job scripts read the step from it).
"$ckpt" inspect --attributes "$dir/model.h5" > "$dir/attributes.txt"
grep -q ", step [0-9]*, saved at stage" "$dir/attributes.txt" || fail "inspect --attributes: no step"
grep -q "params/w" "$dir/attributes.txt" && fail "inspect --attributes lists tensors"
"$ckpt" verify "$dir/model.h5" || fail "verify of a good file"

"$ckpt" export "$dir/model.h5" --format safetensors -o "$dir/model.safetensors"
"$ckpt" import-safetensors "$dir/model.safetensors" "$dir/back.h5"
"$ckpt" export "$dir/model.h5" --format hdf5-fp32 -o "$dir/weights.h5"
"$ckpt" diff "$dir/weights.h5" "$dir/back.h5" || fail "safetensors round trip changed the weights"

"$ckpt" export "$dir/model.h5" --format safetensors --dtype bf16 -o "$dir/bf16.safetensors"
"$ckpt" import-safetensors "$dir/bf16.safetensors" "$dir/bf16.h5"
if "$ckpt" diff "$dir/weights.h5" "$dir/bf16.h5" > "$dir/diff.txt"; then fail "bf16 export equals fp32"; fi
cat "$dir/diff.txt"
rel=$(awk '$1 == "params/w" {print $3}' "$dir/diff.txt")
awk -v r="$rel" 'BEGIN { exit !(r > 0 && r <= 0.00390625) }' || fail "bf16 relative error $rel above 2^-8"

cp "$dir/model.h5" "$dir/bad.h5"
size=$(stat -c %s "$dir/bad.h5")
printf '\x55' | dd of="$dir/bad.h5" bs=1 seek=$((size / 2)) conv=notrunc status=none
if "$ckpt" verify "$dir/bad.h5" > "$dir/verify.txt"; then fail "verify accepted a corrupted file"; fi
grep -q "corrupted" "$dir/verify.txt" || fail "verify does not say corrupted"
cat "$dir/verify.txt"
# inspect prints the table, BAD on the damaged tensor, and fails.
set +e
"$ckpt" inspect "$dir/bad.h5" > "$dir/inspect-bad.txt" 2> "$dir/inspect-bad.err"
rc=$?
set -e
cat "$dir/inspect-bad.txt" "$dir/inspect-bad.err"
[ $rc -eq 1 ] || fail "inspect of a damaged file gave status $rc"
grep -q "BAD" "$dir/inspect-bad.txt" || fail "inspect does not mark the damaged tensor BAD"
grep -q "fail their checksum" "$dir/inspect-bad.err" || fail "inspect does not say which tensors fail"
# A weights-only file is no engine's: no stage to report.
"$ckpt" inspect "$dir/back.h5" | tee "$dir/inspect-weights.txt"
grep -q "weights only (no engine state)" "$dir/inspect-weights.txt" || fail "a weights-only file is described as saved by an engine"

head -c 1000 "$dir/model.h5" > "$dir/short.h5"
set +e
"$ckpt" inspect "$dir/short.h5" 2> "$dir/short.txt"
rc=$?
set -e
[ $rc -eq 2 ] || fail "a truncated file gave status $rc"
grep -q "cannot open" "$dir/short.txt" || fail "truncated: unclear message: $(cat "$dir/short.txt")"
# Not regular files: each refused at once (open(2) of a FIFO would wait for ever for a
# writer), saying what it is.
mkfifo "$dir/fifo"
mkdir "$dir/folder"
for spec in "$dir/fifo:a FIFO" "$dir/folder:a directory" "/dev/null:a character device"; do
  path=${spec%%:*} kind=${spec#*:}
  for command in inspect verify export-safetensors export-hdf5 export-onnx import; do
    case $command in
      export-safetensors) args=(export "$path" --format safetensors -o "$dir/nr.safetensors") ;;
      export-hdf5) args=(export "$path" --format hdf5-fp32 -o "$dir/nr.h5") ;;
      export-onnx) args=(export "$path" --format onnx --model gpt2 -o "$dir/nr.onnx") ;;
      import) args=(import-safetensors "$path" "$dir/nr.h5") ;;
      *) args=("$command" "$path") ;;
    esac
    set +e
    timeout 10 "$ckpt" "${args[@]}" > /dev/null 2> "$dir/nr.err"
    rc=$?
    set -e
    [ $rc -ne 124 ] || fail "$command $path blocked"
    [ $rc -eq 2 ] || fail "$command $path: status $rc"
    grep -qF "$path: it is $kind" "$dir/nr.err" || fail "$command $path: $(cat "$dir/nr.err")"
  done
  echo "ok: $path refused at once as $kind"
done

# Exports onto a full disk: a 1 MiB tmpfs where mounting is allowed (root), else a file size
# limit of 1 MiB with SIGXFSZ ignored (writes fail with "File too large"). Each export fails
# with status 2 and the system's reason, leaves no partial file, keeps an earlier export
# whole, prints none of HDF5's diagnostics, and does not crash at exit.
full="$dir/full"
mkdir "$full"
limit=()
if mount -t tmpfs -o size=1m zrt-test-full "$full" 2> /dev/null; then
  trap 'umount "$full"; rm -rf "$dir"' EXIT
  reason="No space left on device"
else
  reason="File too large"
  limit=(bash -c 'trap "" XFSZ; ulimit -f 1024; exec "$@"' limit)
fi
for format in safetensors hdf5-fp32; do
  echo "earlier" > "$full/out"
  set +e
  timeout 60 "${limit[@]}" "$ckpt" export "$dir/model.h5" --format $format -o "$full/out" \
    > /dev/null 2> "$dir/full.err"
  rc=$?
  set -e
  cat "$dir/full.err"
  [ $rc -eq 2 ] || fail "export --format $format onto a full disk: status $rc (139: a crash)"
  grep -q "$reason" "$dir/full.err" || fail "export --format $format: no '$reason'"
  if grep -q "HDF5-DIAG" "$dir/full.err"; then fail "export --format $format: HDF5 diagnostics"; fi
  [ "$(ls -A "$full")" = out ] || fail "export --format $format left $(ls -A "$full")"
  [ "$(cat "$full/out")" = earlier ] || fail "export --format $format changed the earlier file"
  echo "ok: export --format $format onto a full disk: $reason, nothing left"
done

echo "ok: zrt-ckpt inspect, verify, diff, export, import"
