#!/usr/bin/env bash
# The C3 paper's Figs. 4-7 on this machine: `switchyard collective --algorithm
# all` for every operation, p in {16, 64, 256, 1024} and L from 16 B to 16 KiB
# (all-to-all at p = 1024 up to 1 KiB: 16 KiB would need 16 GiB per buffer),
# then the regret grid (p and L the figures and the calibration do not use;
# all-to-all at p = 300 up to 3000 B).
# JSON files go to $1 (default collective-results/), then the same
# measurements charged again (--rescore, no run) by every model variant and
# ranked by median and by min into $1/<variant>-<rank>/; summarize with
#   python3 scripts/collective_tables.py DIR/<variant>-<rank>
#   MACHINE=machine.json REPEAT=5 BATCH=1 bash scripts/collective_figures.sh DIR
#   RESCORE_ONLY=1 MACHINE=machine.json bash scripts/collective_figures.sh DIR
# GRIDS="regret" runs only the regret grid, FIGURE_P="256" only those p of
# the figures. BATCH runs per sample (collective --batch): the algorithms'
# samples are interleaved within one job per (op, p, L).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-collective-results}
bin=${SWITCHYARD_BIN:-build/apps/switchyard}
repeat=${REPEAT:-5}
batch=${BATCH:-1}
grids=${GRIDS:-figures regret}
figure_p=${FIGURE_P:-16 64 256 1024}
extra=()
[[ -n "${MACHINE:-}" ]] && extra+=(--machine "$MACHINE")
mkdir -p "$out/figures" "$out/regret"
run() {  # op p sizes file; a run whose JSON is there already is kept (resumable)
  [[ -s "$4" ]] && return
  "$bin" collective --op "$1" --algorithm all --processes "$2" --bytes "$3" --repeat "$repeat" --batch "$batch" "${extra[@]}" \
    --json "$4" > "${4%.json}.txt"
}
if [[ -z "${RESCORE_ONLY:-}" && $grids == *figures* ]]; then
  for op in one-to-all all-to-one all-to-all; do
    for p in $figure_p; do
      sizes=16,64,256,1K,4K,16K
      [[ $op == all-to-all && $p == 1024 ]] && sizes=16,64,256,1K
      run "$op" "$p" "$sizes" "$out/figures/$op-$p.json"
    done
  done
fi
if [[ -z "${RESCORE_ONLY:-}" && $grids == *regret* ]]; then
  for op in one-to-all all-to-one all-to-all; do
    for p in 24 100 300; do
      sizes=40,400,3000,12000
      [[ $op == all-to-all && $p == 300 ]] && sizes=40,400,3000
      run "$op" "$p" "$sizes" "$out/regret/$op-$p.json"
    done
  done
fi
for variant in ring-sync calibrated paper; do
  for rank in median min; do
    for grid in figures regret; do
      mkdir -p "$out/$variant-$rank/$grid"
      for f in "$out/$grid"/*.json; do
        [[ -e $f ]] || continue
        "$bin" collective --rescore "$f" --variant "$variant" --rank-by "$rank" "${extra[@]}" \
          --json "$out/$variant-$rank/$grid/$(basename "$f")" > /dev/null
      done
    done
  done
done
