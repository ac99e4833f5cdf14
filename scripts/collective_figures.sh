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
# samples are interleaved within one job per (op, p, L). Each run's `model
# probe` before and after goes beside its JSON (<name>.state.txt); the runs
# with a co-located probe are listed at the end.
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
# The state of the two cores (colocation.hpp) before and after each run, beside
# its JSON: a run taken while they were co-located does not describe the state
# a normal machine file does (collective_regret.py leaves such runs out).
probe() { "$bin" model probe | head -n 1 >> "$1"; }
run() {  # op p sizes file; a run whose JSON is there already is kept (resumable)
  [[ -s "$4" ]] && return
  local state=${4%.json}.state.txt
  : > "$state"
  probe "$state"
  "$bin" collective --op "$1" --algorithm all --processes "$2" --bytes "$3" --repeat "$repeat" --batch "$batch" "${extra[@]}" \
    --json "$4" > "${4%.json}.txt"
  probe "$state"
}
if [[ -n "${MACHINE:-}" ]] && grep -q '"colocated": *true' "$MACHINE"; then
  echo "collective_figures: warning: $MACHINE was calibrated with the cores co-located;" \
    "calibrate again in the normal state" >&2
fi
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
colocated=$(grep -l -v "model probe: 0 of " "$out"/*/*.state.txt 2>/dev/null || true)
[[ -z $colocated ]] || printf '%s %s\n%s\n' "collective_figures: runs with a co-located probe before or after" \
  "(leave them out or run them again):" "$colocated" >&2
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
