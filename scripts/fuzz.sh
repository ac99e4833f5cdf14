#!/usr/bin/env bash
# Builds the libFuzzer harnesses with Clang, ASan and UBSan (in build-fuzz/ or
# $SWITCHYARD_FUZZ_DIR) and runs each for $SWITCHYARD_FUZZ_RUNS executions
# (default 20000) from its seed corpus in tests/fuzz/corpus/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${SWITCHYARD_FUZZ_DIR:-build-fuzz}
runs=${SWITCHYARD_FUZZ_RUNS:-20000}

bash scripts/install-deps.sh
generator=()
[[ -f "$build_dir/CMakeCache.txt" ]] || generator=(-G Ninja)
CC=clang CXX=clang++ cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSWITCHYARD_SANITIZE=address -DSWITCHYARD_BUILD_FUZZERS=ON -DSWITCHYARD_FUZZ_RUNS="$runs" \
  -DSWITCHYARD_BUILD_TESTS=OFF -DSWITCHYARD_BUILD_BENCHMARKS=OFF -DSWITCHYARD_BUILD_APPS=OFF \
  -DSWITCHYARD_BUILD_EXAMPLES=OFF
# The harnesses and what they link, not every library of the tree under Clang.
cmake --build "$build_dir" -j 2 --target fuzzers
ctest --test-dir "$build_dir" -L fuzz --output-on-failure -j 2 </dev/null
