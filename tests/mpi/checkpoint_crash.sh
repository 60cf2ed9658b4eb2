#!/usr/bin/env bash
# Saves a checkpoint, kills a rank during the next save, and checks the first one loads.
#   checkpoint_crash.sh PROGRAM MPIEXEC [MPIEXEC FLAGS...]
set -u
prog=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
path=$dir/model.h5
"$@" -n 2 "$prog" save "$path" || { echo "FAIL: the first save failed"; exit 1; }
"$@" -n 2 "$prog" crash "$path" > "$dir/crash.log" 2>&1
rc=$?
cat "$dir/crash.log" | grep checkpoint_crash
if [ $rc -eq 0 ]; then echo "FAIL: the crashing job exited 0"; exit 1; fi
grep -q "dies during the save" "$dir/crash.log" || { echo "FAIL: rank 1 did not die mid-save"; exit 1; }
"$@" -n 2 "$prog" check "$path" || { echo "FAIL: the previous checkpoint did not survive"; exit 1; }
