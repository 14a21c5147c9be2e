#!/bin/sh
# Installs the built ctorch into a temporary prefix, then builds a small consumer project with
# find_package(ctorch) and again with pkg-config, and runs both.
set -eu
source_dir=$1
build_dir=$2
consumer_dir=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# The shipped data set and its attribution (ct_default_dataset_path finds them there).
test -f "$work/prefix/share/ctorch/digits.csv.gz"
test -f "$work/prefix/share/ctorch/README.md"
cmake -S "$consumer_dir" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/consumer"
libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -n 1)
PKG_CONFIG_PATH="$libdir" cc -o "$work/consumer_pc" "$consumer_dir/main.c" \
  $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs ctorch)
LD_LIBRARY_PATH="$(dirname "$libdir")" "$work/consumer_pc"
echo "install: find_package(ctorch) and pkg-config both work (source $source_dir)"
