#!/bin/sh
# out_of_tree.sh <cmake> <switchyard build dir> <hello-plugin source dir> [<switchyard CLI>]
#
# What a third party does: install the SDK into a prefix, build the example plugin against it
# with find_package(Switchyard), run the installed conformance kit on the result, and (when the
# CLI is built) check that `switchyard plugins --plugin <so> --json` lists it.
set -eu
cmake=$1
build=$2
example=$3
cli=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-sdk-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== install $build into $work/prefix"
"$cmake" --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in include/switchyard/plugin.h include/switchyard/sdk.hpp include/switchyard/reference.hpp \
         include/switchyard/conformance.hpp bin/switchyard-conformance; do
    [ -e "$work/prefix/$f" ] || { echo "the install lacks $f" >&2; exit 1; }
done
for f in SwitchyardConfig.cmake SwitchyardConfigVersion.cmake SwitchyardTargets.cmake \
         SwitchyardPlugin.cmake; do
    [ -n "$(find "$work/prefix" -path "*/cmake/Switchyard/$f")" ] ||
        { echo "the install lacks lib/cmake/Switchyard/$f" >&2; exit 1; }
done

echo "== configure and build $example against the installed SDK"
"$cmake" -S "$example" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$work/build"
so="$work/build/libswitchyard-hello.so"
[ -f "$so" ] || { echo "the build did not produce $so" >&2; exit 1; }

echo "== conformance kit on $so"
"$work/prefix/bin/switchyard-conformance" "$so"

if [ -n "$cli" ]; then
    echo "== $cli plugins --plugin $so --json"
    out=$("$cli" plugins --plugin "$so" --json)
    echo "$out"
    echo "$out" | grep -q '"name": *"hello"' || { echo "'switchyard plugins' does not list the hello plugin" >&2; exit 1; }
fi
echo "out-of-tree SDK check passed"
