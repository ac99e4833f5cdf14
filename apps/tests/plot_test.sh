#!/usr/bin/env bash
# ctest cli.plots: scripts/plot.py makes its six plots from JSON that the CLI
# writes here (small runs, seconds) and a hand-written `dynamic --sweep` file;
# each must be a non-empty PNG. Exit 77 (skipped) without matplotlib.
#
#   plot_test.sh <switchyard> <plot.py> <out dir> <dynamic sweep json>
set -euo pipefail
cli=$1 plot=$2 out=$3 dynamic=$4

# plot.py finds Debian's matplotlib under /usr/bin/python3 when another python3 comes first.
if ! python3 -c "import matplotlib" 2>/dev/null && ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  echo "plot_test: matplotlib is not installed (python3-matplotlib): skipped"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
for d in 1 2 4 8; do
  "$cli" phases -n 32 -d "$d" --samples 20 --scheduler cgm --json "$out/phases_cgm_$d.json" >/dev/null
done
"$cli" exchange -n 8 -d 3 --bytes 64,4096 --repeat 2 --schedulers cgm,ac,drsn --json "$out/exchange.json" >/dev/null
# Guo-Nakata-Yamashita's Fig. 9 layouts (K = 3 and K = 6 on enough processes) on 2, 4 and 8 processes.
for p in 2 4 8; do
  for from in 6 12; do
    "$cli" redistribute --extent 12000 --from "cyclic($from)@$p" --to "cyclic(2)@$p" --schedule all --repeat 1 \
      --json "$out/redistribute_${from}_$p.json" >/dev/null
  done
done
"$cli" contention --senders 1,2,4 --bytes 256,4096 --repeat 2 --json "$out/contention.json" >/dev/null
python3 "$plot" --out "$out" "$out"/*.json "$dynamic"
# Exchanges on 1 and on every core: time against the core count instead.
mkdir -p "$out/scaling"
cores=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
for list in "${cores%%[,-]*}" "$cores"; do
  "$cli" exchange -n 8 -d 3 --bytes 64,4096 --repeat 1 --schedulers ac,optimal --cores "$list" \
    --json "$out/scaling/exchange_${list//[,-]/_}.json" >/dev/null
done
python3 "$plot" --out "$out" "$out"/scaling/*.json
for name in table4_phases exchange_time redistribution_time dynamic_delay contention_growth exchange_scaling; do
  file="$out/$name.png"
  if [[ ! -s $file ]] || [[ $(head -c 4 "$file" | tail -c 3) != PNG ]]; then
    echo "plot_test: $file is missing, empty or not a PNG" >&2
    exit 1
  fi
done
# Not switchyard's JSON: bad input, exit 2.
echo '{"something": 1}' >"$out/other.json.txt"
code=0
python3 "$plot" --out "$out" "$out/other.json.txt" 2>/dev/null || code=$?
if [[ $code -ne 2 ]]; then
  echo "plot_test: plot.py on foreign JSON exited $code, expected 2" >&2
  exit 1
fi
echo "plot_test: 6 plots in $out"
