#!/bin/sh
# check_job_fails.sh [--says TEXT]... LIMIT COMMAND...: runs an MPI job in which one rank fails, and
# passes when the job ends with a non-zero status within LIMIT seconds (a hang is cut at twice the
# limit) and its output holds every TEXT.
set -u
says_file=$(mktemp)
trap 'rm -f "$says_file"' EXIT
while [ "$1" = "--says" ]; do
  printf '%s\n' "$2" >>"$says_file"
  shift 2
done
limit=$1
shift
start=$(date +%s)
output=$(timeout --kill-after=10 $((limit * 2)) "$@" 2>&1)
status=$?
elapsed=$(( $(date +%s) - start ))
printf '%s\n' "$output"
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
while IFS= read -r text; do
  if ! printf '%s\n' "$output" | grep -qF -- "$text"; then
    echo "check_job_fails: FAILED: the output does not say '$text'" >&2
    exit 1
  fi
done <"$says_file"
echo "check_job_fails: passed"
