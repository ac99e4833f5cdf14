#!/usr/bin/env bash
# The C3 paper's Figs. 4-7 on this machine: `switchyard collective --algorithm
# all` for every operation, p in {16, 64, 256, 1024} and L from 16 B to 16 KiB
# (all-to-all at p = 1024 up to 1 KiB: 16 KiB would need 16 GiB per buffer),
# then the regret grid (p and L the figures and the calibration do not use).
# JSON files go to $1 (default collective-results/); summarize them with
#   python3 scripts/collective_tables.py DIR
#   MACHINE=machine.json VARIANT=paper|calibrated REPEAT=5 bash scripts/collective_figures.sh DIR
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-collective-results}
bin=${SWITCHYARD_BIN:-build/apps/switchyard}
repeat=${REPEAT:-5}
extra=()
[[ -n "${MACHINE:-}" ]] && extra+=(--machine "$MACHINE")
[[ -n "${VARIANT:-}" ]] && extra+=(--variant "$VARIANT")
mkdir -p "$out/figures" "$out/regret"
run() {  # op p sizes file
  "$bin" collective --op "$1" --algorithm all --processes "$2" --bytes "$3" --repeat "$repeat" "${extra[@]}" \
    --json "$4" > "${4%.json}.txt"
}
for op in one-to-all all-to-one all-to-all; do
  for p in 16 64 256 1024; do
    sizes=16,64,256,1K,4K,16K
    [[ $op == all-to-all && $p == 1024 ]] && sizes=16,64,256,1K
    run "$op" "$p" "$sizes" "$out/figures/$op-$p.json"
  done
done
for op in one-to-all all-to-one all-to-all; do
  for p in 24 100 300; do
    run "$op" "$p" 40,400,3000,12000 "$out/regret/$op-$p.json"
  done
done
