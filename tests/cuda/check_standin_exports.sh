#!/usr/bin/env bash
# A stand-in exports its library's functions and standin.h's (ctorch_standin_*) only: any other
# name could interpose on one of the process that loads it. The driver's are cu*, cuBLAS's cublas*.
# Usage: check_standin_exports.sh <nm> <library> [<a symbol it must have> <its functions' regex>]
set -u
nm=$1 library=$2 required=${3:-cuInit} functions=${4:-'cu[A-Z][A-Za-z0-9_]*'}
symbols=$("$nm" -D --defined-only "$library" | awk '{print $NF}')
grep -qx "$required" <<< "$symbols" || { echo "FAILED: $library exports no $required"; exit 1; }
others=$(grep -Evx "$functions|ctorch_standin_[a-z_]+" <<< "$symbols")
if [ -n "$others" ]; then echo "FAILED: $library exports other names:"; echo "$others"; exit 1; fi
echo "ok: $(wc -l <<< "$symbols") symbols, all $functions or ctorch_standin_*"
