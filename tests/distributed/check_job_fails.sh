#!/bin/sh
# check_job_fails.sh LIMIT COMMAND...: runs an MPI job in which one rank fails, and passes when
# the job ends with a non-zero status within LIMIT seconds (a hang is cut at twice the limit).
set -u
limit=$1
shift
start=$(date +%s)
timeout --kill-after=10 $((limit * 2)) "$@"
status=$?
elapsed=$(( $(date +%s) - start ))
echo "check_job_fails: the job ended with status $status after $elapsed s (limit $limit s)"
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "check_job_fails: FAILED: the job hung and was killed" >&2
  exit 1
fi
if [ "$status" -eq 0 ]; then
  echo "check_job_fails: FAILED: the job ended with status 0 although a rank failed" >&2
  exit 1
fi
if [ "$elapsed" -gt "$limit" ]; then
  echo "check_job_fails: FAILED: the job took longer than $limit s to end" >&2
  exit 1
fi
echo "check_job_fails: passed"
