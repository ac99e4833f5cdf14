#!/usr/bin/env bash
# Counts what one process's share of a small exchange costs, in instructions
# and simulated cache misses, for switchyard (bench_exchange's shape: a
# barrier, then the bound AC run; and the bound runs back to back, with no
# barrier) beside its process floor, all processes on one core
# (bench/count_exchange.cpp). Counts, not times: they hold on a host
# whose speed swings. Each side runs under valgrind's callgrind for K and 3K
# exchanges; the difference over 2K exchanges and N processes is one process's
# share of one exchange, what a run does once left out. The cache simulation
# is an L1 of 32 KiB, 8-way, and a last level of 1 MiB, 16-way (this VM's L1D
# and L2), lines of 64 bytes.
#
#   scripts/count-instructions.sh [N D BYTES [K]]     (defaults: 32 8 16 200)
#
# Needs valgrind and a build with bench/count_exchange ($SWITCHYARD_BUILD_DIR,
# default build). Prints a Markdown table; exit 2 on bad arguments or a
# missing tool.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${SWITCHYARD_BUILD_DIR:-build}
n=${1:-32} d=${2:-8} bytes=${3:-16} k=${4:-200}
program="$build_dir/bench/count_exchange"

die() {
  echo "count-instructions: $*" >&2
  exit 2
}
for v in "$n" "$d" "$bytes" "$k"; do
  [[ "$v" =~ ^[1-9][0-9]{0,5}$ ]] || die "N, D, BYTES and K are whole numbers from 1 to 999999, not '$v'"
done
command -v valgrind >/dev/null 2>&1 || die "valgrind not found (apt-get install valgrind)"
[[ -x "$program" ]] || die "$program not found: build it first (cmake --build $build_dir --target count_exchange)"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The totals of one run: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw, callgrind's order.
totals() {
  local out="$scratch/callgrind.$1.$2"
  valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64 --callgrind-out-file="$out" \
    "$program" --processes "$n" --density "$d" --bytes "$bytes" --exchanges "$2" $3 >/dev/null 2>"$scratch/log" ||
    { cat "$scratch/log" >&2; die "count_exchange failed under valgrind"; }
  grep '^summary:' "$out" | cut -d' ' -f2-
}

# One side's row: per process and exchange, over the 2K exchanges between the two runs.
row() {
  local name=$1 flag=$2 short long
  short=$(totals "$name" "$k" "$flag")
  long=$(totals "$name" $((3 * k)) "$flag")
  python3 - "$n" "$k" "$short" "$long" <<'EOF'
import sys
n, k = int(sys.argv[1]), int(sys.argv[2])
a, b = ([int(x) for x in s.split()] for s in sys.argv[3:5])
per = [(y - x) / (2 * k * n) for x, y in zip(a, b)]
ir, dr, dw, _, d1r, d1w, _, dlr, dlw = per
print(f"{ir:.0f} {max(d1r + d1w, 0):.1f} {max(dlr + dlw, 0):.1f} {dr + dw:.0f}")
EOF
}

read -r sy_ir sy_l1 sy_ll sy_mem <<<"$(row switchyard "")"
read -r bb_ir bb_l1 bb_ll bb_mem <<<"$(row back-to-back --back-to-back)"
read -r pf_ir pf_l1 pf_ll pf_mem <<<"$(row floor --floor)"
ratio() { python3 -c "print(f'{$1 / $2:.2f}' if $2 else '-')"; }
echo "n=$n d=$d $bytes B, one core, per process and exchange (callgrind, $((2 * k)) exchanges):"
echo
echo "| | instructions | data accesses | L1 misses | L2 misses |"
echo "| --- | ---: | ---: | ---: | ---: |"
echo "| switchyard (barrier, bound AC run) | $sy_ir | $sy_mem | $sy_l1 | $sy_ll |"
echo "| switchyard (bound AC runs back to back) | $bb_ir | $bb_mem | $bb_l1 | $bb_ll |"
echo "| process floor | $pf_ir | $pf_mem | $pf_l1 | $pf_ll |"
echo "| ratio, barrier and run | $(ratio "$sy_ir" "$pf_ir") | $(ratio "$sy_mem" "$pf_mem") | $(ratio "$sy_l1" "$pf_l1") | $(ratio "$sy_ll" "$pf_ll") |"
echo "| ratio, back to back | $(ratio "$bb_ir" "$pf_ir") | $(ratio "$bb_mem" "$pf_mem") | $(ratio "$bb_l1" "$pf_l1") | $(ratio "$bb_ll" "$pf_ll") |"
