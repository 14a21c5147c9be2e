#!/usr/bin/env bash
# scripts/gpu-check on a machine without a CUDA device: exit status 2 and one line on stderr that
# says so, nothing on stdout, and nothing built. Skipped (77) on a machine with the NVIDIA driver.
# Usage: check_gpu_check_without_a_gpu.sh <source dir> <build dir>
set -u
source_dir=$1 build_dir=$2
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
if "$ldconfig" -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then echo "the NVIDIA driver is here: skipped"; exit 77; fi
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
check() { # what; runs the rest
  local what=$1; shift
  "$@" > "$out" 2> "$err"
  local status=$?
  if [ "$status" != 2 ] || [ -s "$out" ] || [ "$(wc -l < "$err")" != 1 ] || ! grep -q '^gpu-check: no CUDA device here: ' "$err"; then
    echo "FAILED ($what): exit $status; stdout:"; cat "$out"; echo "stderr:"; cat "$err"; exit 1
  fi
  echo "ok ($what): $(cat "$err")"
}
# No driver: refused before building anything.
check "no driver" env -u CTORCH_CUDA_DRIVER "$source_dir/scripts/gpu-check" --build-dir "$build_dir/gpu-check-never-built"
[ -e "$build_dir/gpu-check-never-built" ] && { echo "FAILED: it built"; exit 1; }
# A driver named but no device that ctorch can use: refused after asking the built ctorch.
check "no device" env CTORCH_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$source_dir/scripts/gpu-check" --no-build --build-dir "$build_dir"
exit 0
