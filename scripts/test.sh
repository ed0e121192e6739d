#!/usr/bin/env bash
# README command 2 (and what CI runs): installs the missing Debian packages, builds Ablate and
# runs the whole test suite with ctest, first as a Release build (build/), then with
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/). --no-sanitize skips the second.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitize) sanitize=0 ;;
    *) echo "usage: scripts/test.sh [--no-sanitize]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh

# The house style (.clang-format) is checked, not hoped for: a source clang-format would change
# fails the run before anything is built (fix with `clang-format -i FILE`).
echo "== clang-format --dry-run --Werror (every tracked C++ and CUDA source)"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs -0 clang-format --dry-run --Werror
else
  echo "not a git checkout: the style check needs the list of tracked sources; skipped"
fi

echo "== Release build and tests (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# A failed test is run once more, alone, at the end, and then its output from the first run is
# printed again: both are then the log's last lines (what a CI that keeps only the tail shows), and
# whether it fails again alone says flaky or not. The first failure fails the run either way.
run_ctest() {
  local log="$1/ctest-first-run.log"
  ctest --test-dir "$1" --output-on-failure -j2 2>&1 | tee "$log" && return 0
  echo "== the failed tests of $1 once more, one at a time (the run fails either way)"
  ctest --test-dir "$1" --rerun-failed --output-on-failure || true
  echo "== what the failed tests of $1 printed in the first run (the last 60 lines)"
  # A failed test's output follows its "***Failed" line up to the next test's Start or result line.
  awk '/Test +#[0-9]+: .*\*\*\*/ { keep = 1; n = 0 }
       keep && n > 0 && /^ *(Start +[0-9]+:|[0-9]+\/[0-9]+ Test +#)/ { keep = 0 }
       keep { print; n++ }' "$log" | tail -n 60
  return 1
}
run_ctest build

if [ "$sanitize" -eq 1 ]; then
  echo "== ASan + UBSan build and tests (build-asan/)"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DABLATE_SANITIZE=ON
  cmake --build build-asan
  run_ctest build-asan
fi
