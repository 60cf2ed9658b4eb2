#!/usr/bin/env bash
# The Fortran module covers the C API: gen_fortran.py accounts for every ZRT_API function
# of the headers (generated, bound by hand, or C-only with a reason), and refuses, naming
# it, a function it cannot bind (here one that takes a C MPI_Comm and has no Fortran
# variant, and one that returns a string).
#   check_binding_coverage.sh SOURCE_DIR
set -euo pipefail
src=$1
gen=$src/api/fortran/gen_fortran.py
# Every layer's public headers (runtime, memory, comm, optim, api), and libzerort_nn's
# model.h, which the module binds where that library is built.
headers=("$src"/{runtime,memory,comm,optim,api}/include/zerort/*.h)
if [ -f "$src/nn/include/zerort/model.h" ]; then
  python3 "$gen" --check --template "$src/api/fortran/zerort.F90.in" "${headers[@]}"
  headers+=("$src/nn/include/zerort/model.h")
fi
python3 "$gen" --check --template "$src/api/fortran/zerort.F90.in" "${headers[@]}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/extra.h" <<'H'
ZRT_API zrt_status_t zrt_comm_split_somehow(zrt_comm_h comm, MPI_Comm other, int color);
ZRT_API const char *zrt_some_name(zrt_comm_h comm);
H
if python3 "$gen" --check --template "$src/api/fortran/zerort.F90.in" "${headers[@]}" \
    "$tmp/extra.h" 2> "$tmp/err"; then
  echo "FAILED: gen_fortran.py accepted functions it cannot bind" >&2
  exit 1
fi
cat "$tmp/err"
grep -q "zrt_comm_split_somehow (takes an MPI_Comm" "$tmp/err"
grep -q "zrt_some_name (returns const char" "$tmp/err"
echo "every ZRT_API function is accounted for, and an unbindable one is refused by name"
