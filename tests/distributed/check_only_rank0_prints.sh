#!/bin/sh
# check_only_rank0_prints.sh COMMAND...: runs an MPI job whose launcher marks each line of output
# with the rank that printed it (OpenMPI's --tag-output: "[job,rank]<stdout>:"), and passes when
# the job ends with status 0, rank 0 printed, and no other rank printed to standard output.
set -u
output=$("$@")
status=$?
printf '%s\n' "$output"
if [ "$status" -ne 0 ]; then
  echo "check_only_rank0_prints: FAILED: the job ended with status $status" >&2
  exit 1
fi
if ! printf '%s\n' "$output" | grep -q '^\[[0-9]*,0\]<stdout>:'; then
  echo "check_only_rank0_prints: FAILED: rank 0 printed nothing" >&2
  exit 1
fi
others=$(printf '%s\n' "$output" | grep -c '^\[[0-9]*,[1-9][0-9]*\]<stdout>:')
if [ "$others" -ne 0 ]; then
  echo "check_only_rank0_prints: FAILED: ranks other than 0 printed $others lines" >&2
  exit 1
fi
echo "check_only_rank0_prints: passed"
