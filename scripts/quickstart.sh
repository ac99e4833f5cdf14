#!/usr/bin/env bash
# From a fresh clone: installs what is missing, builds switchyard (Release,
# Ninja, in build/ or $SWITCHYARD_BUILD_DIR) and runs the main job.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${SWITCHYARD_BUILD_DIR:-build}

bash scripts/build.sh

echo
echo "== $build_dir/apps/switchyard topology"
"$build_dir/apps/switchyard" topology
echo
echo "== $build_dir/apps/switchyard exchange"
"$build_dir/apps/switchyard" exchange
