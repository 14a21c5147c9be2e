#!/usr/bin/env bash
# The stand-in driver exports the driver's functions (cu*) and standin.h's (ctorch_standin_*)
# only: any other name could interpose on one of the process that loads it.
# Usage: check_standin_exports.sh <nm> <library>
set -u
nm=$1 library=$2
symbols=$("$nm" -D --defined-only "$library" | awk '{print $NF}')
grep -qx cuInit <<< "$symbols" || { echo "FAILED: $library exports no cuInit"; exit 1; }
others=$(grep -Evx 'cu[A-Z][A-Za-z0-9_]*|ctorch_standin_[a-z_]+' <<< "$symbols")
if [ -n "$others" ]; then echo "FAILED: $library exports other names:"; echo "$others"; exit 1; fi
echo "ok: $(wc -l <<< "$symbols") symbols, all cu* or ctorch_standin_*"
