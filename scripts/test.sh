#!/usr/bin/env bash
# Installs what is missing, builds everything (Release, Ninja, in build/ or
# $SWITCHYARD_BUILD_DIR) and runs the whole test suite with CTest.
#   SWITCHYARD_TEST_TIMEOUT  seconds for the whole ctest run (default 1800)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${SWITCHYARD_BUILD_DIR:-build}
total_timeout=${SWITCHYARD_TEST_TIMEOUT:-1800}

bash scripts/build.sh --with-tests

# Each test gets at most 600 s unless it sets its own TIMEOUT; the whole run at
# most $total_timeout s, after which it is stopped (and killed 30 s later).
timeout --kill-after=30 "$total_timeout" \
  ctest --test-dir "$build_dir" --output-on-failure -j 2 --timeout 600 </dev/null
