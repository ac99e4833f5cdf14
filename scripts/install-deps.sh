#!/usr/bin/env bash
# Installs the Debian 12 packages switchyard needs to build and test, and only
# those that are missing: with everything present it changes nothing and needs
# no network. Installing needs root (apt-get); it never prompts.
set -euo pipefail

packages=(
  build-essential g++ cmake ninja-build pkg-config
  libtbb-dev libboost-dev libhwloc-dev
  libbenchmark-dev libgtest-dev libcli11-dev nlohmann-json3-dev
  # scripts/plot.py (the plots of the CLI's JSON; its ctest is skipped without it)
  python3-matplotlib
  # optional: Open MPI for jobs across nodes (SWITCHYARD_WITH_MPI, the mpi
  # ctest group) and the MPI baselines of bench/; Clang and its
  # libFuzzer runtime for the fuzz harnesses (scripts/fuzz.sh)
  libopenmpi-dev openmpi-bin clang libclang-rt-14-dev
  # optional: ScaLAPACK for Open MPI, bench_redistribution's pdgemr2d baseline
  libscalapack-openmpi-dev
  # optional: Doxygen for the API reference (the docs target), clang-format
  # for the house style (scripts/format.sh, checked by .ci/run)
  doxygen clang-format
)

die() {
  echo "install-deps: error: $*" >&2
  exit 1
}

command -v dpkg >/dev/null 2>&1 || die "dpkg not found: this script is for Debian 12 (or a derivative). Install these yourself: ${packages[*]}"

missing=()
for p in "${packages[@]}"; do
  # dpkg -s also succeeds for removed packages whose config files remain: check the status line.
  if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed$'; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  die "installing packages needs root. Run as root, or run: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
fi
command -v apt-get >/dev/null 2>&1 || die "apt-get not found. Install these yourself: ${missing[*]}"

export DEBIAN_FRONTEND=noninteractive
apt-get update </dev/null || die "apt-get update failed (is the network or the package mirror reachable?)"
apt-get install -y --no-install-recommends "${missing[@]}" </dev/null || die "apt-get install ${missing[*]} failed"
echo "install-deps: installed ${missing[*]}"
