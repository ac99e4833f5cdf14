#!/usr/bin/env bash
# From a fresh clone: installs what is missing, builds switchyard (Release,
# Ninja, in build/ or $SWITCHYARD_BUILD_DIR) and runs the exchange demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${SWITCHYARD_BUILD_DIR:-build}

bash scripts/install-deps.sh

# An existing build directory keeps the generator it was made with.
generator=()
[[ -f "$build_dir/CMakeCache.txt" ]] || generator=(-G Ninja)
# The options are explicit so that a cached configuration cannot leave the tool out.
# Tests and benchmarks are not needed here; scripts/test.sh turns them on in the same directory.
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DSWITCHYARD_BUILD_APPS=ON -DSWITCHYARD_BUILD_EXAMPLES=ON \
  -DSWITCHYARD_BUILD_TESTS=OFF -DSWITCHYARD_BUILD_BENCHMARKS=OFF -DSWITCHYARD_SANITIZE=
cmake --build "$build_dir" -j 2

echo
echo "== $build_dir/apps/switchyard topology"
"$build_dir/apps/switchyard" topology
echo
echo "== $build_dir/apps/switchyard exchange"
"$build_dir/apps/switchyard" exchange
