#!/bin/sh
# libctorch.so exports the public API and nothing else: every dynamic symbol it defines is a
# function declared in include/ctorch.h or include/ctorch/*.h,
# and every such function is there. libctorch_internal.so, the tests' copy, exports the internals
# too (so that a broken version script, which would hide them, is told apart from this check).
set -eu
source_dir=$1
library=$2
internal=$3
command -v nm >/dev/null || { echo "nm is not installed: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# names followed by '(' in the headers with their comments taken out, as cmake/PublicSymbols.cmake does
for header in "$source_dir"/include/ctorch.h "$source_dir"/include/ctorch/*.h; do
  perl -0pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{ }g' "$header"
done | grep -oE 'ct_[A-Za-z0-9_]+[[:space:]]*\(' | sed -E 's/[[:space:]]*\($//' | sort -u >"$work/declared"
nm -D --defined-only "$library" | awk '{print $3}' | sort -u >"$work/exported"
extra=$(comm -13 "$work/declared" "$work/exported")
if [ -n "$extra" ]; then
  echo "libctorch.so exports $(echo "$extra" | wc -l) symbols the public headers do not declare:"
  echo "$extra" | head -20
  exit 1
fi
# every public function is defined (a declared name that is a type, as ct_status in a function
# pointer's declaration, is not a function: only names the internal library defines count)
nm -D --defined-only "$internal" | awk '{print $3}' | sort -u >"$work/internal"
missing=$(comm -12 "$work/declared" "$work/internal" | comm -23 - "$work/exported")
if [ -n "$missing" ]; then
  echo "libctorch.so hides public functions:"
  echo "$missing" | head -20
  exit 1
fi
hidden=$(comm -23 "$work/internal" "$work/exported" | grep -c '^ct_' || true)
[ "$hidden" -gt 0 ] || { echo "libctorch_internal.so exports no more than libctorch.so"; exit 1; }
echo "libctorch.so exports $(wc -l <"$work/exported") public functions; $hidden internal ct_ functions are hidden"
