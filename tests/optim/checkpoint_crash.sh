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
# Background saves killed at moments through their writing: the file is the previous
# checkpoint, or the new one complete, and it loads.
for ms in 0 2 5 10 20 40 80; do
  "$@" -n 2 "$prog" save "$path" > /dev/null 2>&1 || { echo "FAIL: the save before async $ms failed"; exit 1; }
  "$@" -n 2 "$prog" async "$path" "$ms" > "$dir/async.log" 2>&1
  [ $? -ne 0 ] || { echo "FAIL: the job killed at $ms ms exited 0"; exit 1; }
  grep -q "dies $ms ms into the background save" "$dir/async.log" ||
    { cat "$dir/async.log"; echo "FAIL: rank 1 did not die at $ms ms"; exit 1; }
  "$@" -n 2 "$prog" check-any "$path" || { echo "FAIL: killed at $ms ms, $path does not load"; exit 1; }
done
