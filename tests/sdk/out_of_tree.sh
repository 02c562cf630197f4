#!/bin/sh
# out_of_tree.sh <cmake> <switchyard build dir> <switchyard CLI or -> <example source dir>...
#
# What a third party does: install the SDK into a prefix, build each example plugin against it
# with find_package(Switchyard), run the installed conformance kit on the result, and (when the
# CLI is given) check that `switchyard plugins --plugin <so> --json` lists it.
set -eu
cmake=$1
build=$2
cli=$3
shift 3
[ "$cli" = - ] && cli=""
work=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-sdk-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== install $build into $work/prefix"
"$cmake" --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in include/switchyard/plugin.h include/switchyard/plugin.hpp include/switchyard/sdk.hpp \
         include/switchyard/host_buffers.hpp include/switchyard/reference.hpp \
         include/switchyard/conformance.hpp bin/switchyard-conformance; do
    [ -e "$work/prefix/$f" ] || { echo "the install lacks $f" >&2; exit 1; }
done
for f in SwitchyardConfig.cmake SwitchyardConfigVersion.cmake SwitchyardTargets.cmake \
         SwitchyardPlugin.cmake; do
    [ -n "$(find "$work/prefix" -path "*/cmake/Switchyard/$f")" ] ||
        { echo "the install lacks lib/cmake/Switchyard/$f" >&2; exit 1; }
done

n=0
for example in "$@"; do
    n=$((n + 1))
    echo "== configure and build $example against the installed SDK"
    "$cmake" -S "$example" -B "$work/build-$n" -DCMAKE_PREFIX_PATH="$work/prefix" \
        -DCMAKE_BUILD_TYPE=Release
    "$cmake" --build "$work/build-$n"
    so=$(find "$work/build-$n" -maxdepth 1 -name 'libswitchyard-*.so' | head -n 1)
    [ -n "$so" ] || { echo "the build of $example produced no libswitchyard-*.so" >&2; exit 1; }
    name=$(basename "$so" .so)
    name=${name#libswitchyard-}

    echo "== conformance kit on $so"
    "$work/prefix/bin/switchyard-conformance" "$so"

    if [ -n "$cli" ]; then
        echo "== $cli plugins --plugin $so --json"
        out=$("$cli" plugins --plugin "$so" --json)
        echo "$out"
        echo "$out" | grep -q "\"name\": *\"$name\"" ||
            { echo "'switchyard plugins' does not list the $name plugin" >&2; exit 1; }
    fi
done
echo "out-of-tree SDK check passed ($n plugins)"
