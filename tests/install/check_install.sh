#!/bin/sh
# Installs the built ctorch into a temporary prefix and moves the tree elsewhere, then:
# - the installed command starts (its RPATH finds the installed library) and trains on the
#   installed data set, run from another folder with nothing pointing back at the build;
# - another CMake project builds with find_package(ctorch) against the shared library while none
#   of ctorch's private dependencies can be found, and against the static library (the component
#   "static") with them;
# - the installed examples are there, and the training example builds with pkg-config and runs;
# - the same with pkg-config, where the system's .pc files cannot be found (no libcjson.pc), and
#   without -fopenmp forced on the consumer.
set -eu
source_dir=$1
build_dir=$2
consumer_dir=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install: $*" >&2; exit 1; }
cmake --install "$build_dir" --prefix "$work/installed" >/dev/null
mv "$work/installed" "$work/prefix" # a tree that moved: nothing may depend on where it was installed
prefix=$work/prefix
# The shipped data set and its attribution (ct_default_dataset_path finds them there).
test -f "$prefix/share/ctorch/digits.csv.gz"
test -f "$prefix/share/ctorch/README.md"
test -f "$prefix/share/ctorch/tinyshakespeare.txt"
# The examples' sources, which the README points a user at.
test -f "$prefix/share/ctorch/examples/train_custom_module.c" || fail "the examples are not installed under share/ctorch/examples"

# ---- the installed command, run from elsewhere, with no variable pointing anywhere ----
mkdir "$work/elsewhere"
installed() { (cd "$work/elsewhere" && env -u LD_LIBRARY_PATH -u CTORCH_DATA -u CTORCH_DEVICE "$prefix/bin/ctorch" "$@"); }
installed --version >/dev/null || fail "the installed ctorch does not start: $(installed --version 2>&1 || true)"
library=$(cd "$work/elsewhere" && env -u LD_LIBRARY_PATH ldd "$prefix/bin/ctorch" | awk '/libctorch/ {print $3}')
case "$library" in
  "$prefix"/*) ;;
  *) fail "the installed ctorch loads libctorch from '$library', not from $prefix" ;;
esac
data=$(installed info --json | sed -n 's/.*"data_path":"\([^"]*\)".*/\1/p')
case "$data" in
  "$prefix/share/ctorch/digits.csv.gz") ;;
  *) fail "the installed ctorch reads its data from '$data', not from $prefix/share/ctorch" ;;
esac
installed train --epochs 1 --device cpu >"$work/train.log" 2>&1 || { cat "$work/train.log" >&2; fail "installed train failed"; }
grep -q "Test accuracy" "$work/train.log" || fail "installed train printed no accuracy"
# Without its data file the installed tree says so: it never reads the build's source tree.
mv "$prefix/share/ctorch/digits.csv.gz" "$work/digits.csv.gz"
if installed train --epochs 1 --device cpu >"$work/nodata.log" 2>&1; then
  fail "installed train without its data file trained on: $(cat "$work/nodata.log")"
fi
grep -q "digits.csv.gz is in none of" "$work/nodata.log" || fail "installed train without its data: $(cat "$work/nodata.log")"
if grep -q "$source_dir" "$work/nodata.log"; then fail "the installed tree looked in the source tree: $(cat "$work/nodata.log")"; fi
mv "$work/digits.csv.gz" "$prefix/share/ctorch/digits.csv.gz"

# ---- find_package: the shared library asks for none of ctorch's private dependencies ----
none=""
for package in OpenMP Threads ZLIB cJSON OpenCL CLBlast MPI BLAS; do
  none="$none -DCMAKE_DISABLE_FIND_PACKAGE_$package=ON"
done
# shellcheck disable=SC2086 # one argument per package
cmake -S "$consumer_dir" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release $none \
  >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log" >&2; fail "find_package(ctorch) needs a private dependency"; }
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer"
# The static library (component "static") brings its dependencies along.
cmake -S "$consumer_dir" -B "$work/consumer_static" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCONSUMER_STATIC=ON >/dev/null
cmake --build "$work/consumer_static" >/dev/null
"$work/consumer_static/consumer"

# ---- pkg-config, with only ctorch's .pc file in reach ----
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -n 1)
flags=$(PKG_CONFIG_LIBDIR="$libdir" PKG_CONFIG_PATH="" pkg-config --cflags --libs ctorch) ||
  fail "pkg-config ctorch needs other .pc files"
case "$flags" in
  *-fopenmp*) fail "pkg-config ctorch forces -fopenmp: $flags" ;;
esac
# shellcheck disable=SC2086 # pkg-config's flags are several arguments
cc -o "$work/consumer_pc" "$consumer_dir/main.c" $flags
LD_LIBRARY_PATH="$(dirname "$libdir")" "$work/consumer_pc"
# The installed training example builds the way the README says (cc ... $(pkg-config ...)) and runs.
# shellcheck disable=SC2086
cc -o "$work/train_custom_module" "$prefix/share/ctorch/examples/train_custom_module.c" $flags
(cd "$work/elsewhere" && LD_LIBRARY_PATH="$(dirname "$libdir")" CTORCH_DEVICE=cpu "$work/train_custom_module" >/dev/null) ||
  fail "the installed examples/train_custom_module.c does not build and run against the installed ctorch"
echo "install: the installed command trains; find_package(ctorch) and pkg-config work (source $source_dir)"
