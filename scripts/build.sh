#!/usr/bin/env bash
# Installs what is missing and builds switchyard (Release, Ninja) in build/ or
# $SWITCHYARD_BUILD_DIR. With --with-tests, the test suite and the benchmarks
# are built too; without, only the library, the tool and the examples.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${SWITCHYARD_BUILD_DIR:-build}
with_tests=OFF
[[ "${1:-}" == "--with-tests" ]] && with_tests=ON

bash scripts/install-deps.sh

# An existing build directory keeps the generator it was made with.
generator=()
[[ -f "$build_dir/CMakeCache.txt" ]] || generator=(-G Ninja)
# The options are explicit so that a cached configuration cannot leave anything out.
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DSWITCHYARD_BUILD_APPS=ON -DSWITCHYARD_BUILD_EXAMPLES=ON \
  -DSWITCHYARD_BUILD_TESTS=$with_tests -DSWITCHYARD_BUILD_BENCHMARKS=$with_tests -DSWITCHYARD_SANITIZE=
cmake --build "$build_dir" -j 2
