#!/usr/bin/env bash
# README command 1, the main job: installs the missing Debian packages, builds Ablate (Release,
# in build/), and runs it. Today that shows the version and every discovered plugin; the
# default ablation sweep joins here once `ablate sweep` exists.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

echo
build/bin/ablate --version
echo
build/bin/ablate plugins
