#!/usr/bin/env bash
# Fresh Debian 12 machine -> dependencies, a Release build, and the main job: a synthetic model
# (none can be downloaded), text generated from it, and a short benchmark table.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)"
./build/bin/switchyard plugins
./build/bin/switchyard make-model --arch deepseek2 --preset tiny --type q8_0 -o build/tiny-q8_0.gguf
./build/bin/switchyard inspect build/tiny-q8_0.gguf
./build/bin/switchyard run -m build/tiny-q8_0.gguf -p "The quick brown fox" -n 32 --temp 0
./build/bin/switchyard bench -m build/tiny-q8_0.gguf -p 128 -n 32 -r 3 -mla 2,3
