#!/usr/bin/env bash
# The scale study (issue 37): one command that builds nothing, runs for a
# bounded time and writes JSON, the tables as text, and plots:
#   1. the node-contention table (Wang-Lin-Ranka Table 2: switchyard contention);
#   2. the Fig. 7 exchanges at 1 KiB and 64 KiB for every scheduler on
#      1 (a baseline), 2, 4, 8, ... cores up to all of them (switchyard exchange --cores);
#   3. the regime sweep: ac, rsn, drsn and optimal against the message size,
#      interleaved in one job per size (switchyard exchange --interleave).
# It adapts to the CPUs this process may use, and sizes the repetitions to
# the budget; each step also runs under `timeout` with its share of what is
# left, so the whole stays within --budget (a step cut short is named).
#
#   scripts/scale_study.sh [--budget SECONDS] [--out DIR] [--cli PATH]
#   scripts/scale_study.sh --bundle DIR     # a copy to run on a machine where nothing can be installed
#
# --cli: the switchyard binary (default: $SWITCHYARD_CLI, else build/apps/switchyard
# beside this script's repository). --bundle DIR copies the binary, the shared
# libraries that ldd lists beyond glibc, this script and plot.py into DIR,
# with DIR/run.sh, which sets LD_LIBRARY_PATH and runs the study there
# (`DIR/run.sh --budget 480 --out results`).
# Exit: 0 done (every step complete), 1 a step failed or was cut by the
# budget, 2 bad options.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
budget=110
out=""
cli=${SWITCHYARD_CLI:-$here/../build/apps/switchyard}
bundle=""

usage() {
  echo "usage: scale_study.sh [--budget SECONDS] [--out DIR] [--cli PATH] | --bundle DIR" >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case $1 in
    --budget) [[ $# -ge 2 ]] || usage; budget=$2; shift 2 ;;
    --out) [[ $# -ge 2 ]] || usage; out=$2; shift 2 ;;
    --cli) [[ $# -ge 2 ]] || usage; cli=$2; shift 2 ;;
    --bundle) [[ $# -ge 2 ]] || usage; bundle=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scale_study.sh: error: unknown option '$1'" >&2; usage ;;
  esac
done
if ! [[ $budget =~ ^[0-9]+$ ]] || (( budget < 10 || budget > 86400 )); then
  echo "scale_study.sh: error: --budget: '$budget' is not a whole number of seconds between 10 and 86400" >&2
  exit 2
fi
if [[ ! -x $cli ]]; then
  echo "scale_study.sh: error: --cli: '$cli' is not an executable switchyard (it builds nothing: build first, or give --cli)" >&2
  exit 2
fi

if [[ -n $bundle ]]; then
  mkdir -p "$bundle/lib"
  cp "$cli" "$bundle/switchyard"
  cp "${BASH_SOURCE[0]}" "$here/plot.py" "$bundle/"
  # Everything ldd resolves but glibc's own libraries and the loader.
  ldd "$cli" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
  cat >"$bundle/run.sh" <<'EOF'
#!/usr/bin/env bash
# The scale study on this machine with the bundled switchyard and libraries.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec bash "$here/scale_study.sh" --cli "$here/switchyard" "$@"
EOF
  chmod +x "$bundle/run.sh" "$bundle/switchyard"
  echo "bundled into $bundle: $(ls "$bundle/lib" | wc -l) libraries; run $bundle/run.sh --budget SECONDS --out DIR"
  exit 0
fi

out=${out:-scale_study_$(date +%Y%m%d_%H%M%S)}
mkdir -p "$out"
start=$(date +%s)
failed=()

# The CPUs this process may use, one per line, in order.
expand_cpus() {
  local list=$1 part
  for part in ${list//,/ }; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}
mapfile -t cpus < <(expand_cpus "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)")
ncpus=${#cpus[@]}
# 1 (the baseline: no other core to contend), 2, 4, 8, ... and all of them.
counts=()
for ((k = 1; k < ncpus; k *= 2)); do counts+=("$k"); done
counts+=("$ncpus")
first_cpus() { local IFS=,; echo "${cpus[*]:0:$1}"; }

# Repetitions grow with the budget: the 20-second form runs each step a few times.
scale=$(( budget / 20 ))
(( scale >= 1 )) || scale=1
# On 2 cores the 20-second form takes about 6 s and the default (110 s) about 20 s.
rep_contention=$(( scale * 20 )); (( rep_contention <= 200 )) || rep_contention=200
rep_exchange=$(( scale * 4 )); (( rep_exchange <= 40 )) || rep_exchange=40
rep_regime=$(( scale * 10 )); (( rep_regime <= 100 )) || rep_regime=100
senders=1,2,4,8,16,31
regime_bytes=16,64,256,1K,4K,16K,64K

elapsed() { echo $(( $(date +%s) - start )); }
# step NAME SHARE(percent of what is left) COMMAND...: runs it under timeout, its output into NAME.txt.
step() {
  local name=$1 share=$2
  shift 2
  local left=$(( budget - $(elapsed) - 2 ))
  local limit=$(( left * share / 100 ))
  if (( limit < 1 )); then
    echo "scale_study: $name: no time left in the budget: skipped" | tee -a "$out/summary.txt"
    failed+=("$name (no time left)")
    return
  fi
  local code=0
  timeout --signal=INT --kill-after=2 "$limit" "$@" >"$out/$name.txt" 2>"$out/$name.err" || code=$?
  if (( code == 124 || code == 130 || code == 137 )); then
    echo "scale_study: $name: cut by the budget after ${limit} s" | tee -a "$out/summary.txt"
    failed+=("$name (cut by the budget)")
  elif (( code != 0 )); then
    echo "scale_study: $name: failed (exit $code): $(tail -1 "$out/$name.err")" | tee -a "$out/summary.txt"
    failed+=("$name (exit $code)")
  else
    echo "scale_study: $name: done in $(elapsed) s of $budget" >>"$out/summary.txt"
  fi
}

{
  echo "scale study: $ncpus CPUs (${cpus[*]}), budget $budget s, $(date -Is)"
  echo "core counts: ${counts[*]}; repetitions: contention $rep_contention, exchanges $rep_exchange, regime $rep_regime"
} | tee "$out/summary.txt"
"$cli" topology >"$out/topology.txt"

step contention 20 "$cli" contention --senders "$senders" --bytes 256,4096 --busy-lock both --placement spread \
  --repeat "$rep_contention" --json "$out/contention.json"
step contention_distance 15 "$cli" contention --senders "$senders" --bytes 256,4096 --busy-lock off --placement distance \
  --repeat "$rep_contention" --json "$out/contention_distance.json"
for k in "${counts[@]}"; do
  # Fig. 7: density 8 on 32 processes, or two processes a core beyond 16 cores.
  n=$(( k > 16 ? 2 * k : 32 ))
  share=$(( 100 / (${#counts[@]} + 1) ))
  step "exchange_cores_$k" "$share" "$cli" exchange --cores "$(first_cpus "$k")" -n "$n" -d 8 --bytes 1K,64K \
    --repeat "$rep_exchange" --json "$out/exchange_cores_$k.json"
done
step regime 90 "$cli" exchange -n 32 -d 8 --bytes "$regime_bytes" --schedulers ac,rsn,drsn,optimal --interleave \
  --repeat "$rep_regime" --json "$out/regime.json"

# Plots, where matplotlib is installed: the contention growth and the regime
# sweep in one folder, the exchanges against the core count in another.
if python3 "$here/plot.py" --out "$out" "$out/contention.json" "$out/regime.json" >"$out/plots.txt" 2>&1 &&
   { (( ${#counts[@]} < 2 )) || python3 "$here/plot.py" --out "$out" "$out"/exchange_cores_*.json >>"$out/plots.txt" 2>&1; }; then
  echo "scale_study: plots: $(grep -c '^wrote' "$out/plots.txt") in $out" | tee -a "$out/summary.txt"
else
  echo "scale_study: plots not drawn: $(tail -1 "$out/plots.txt")" | tee -a "$out/summary.txt"
fi

echo "scale_study: $(elapsed) s of a $budget s budget; results in $out" | tee -a "$out/summary.txt"
if (( ${#failed[@]} )); then
  echo "scale_study: incomplete: ${failed[*]}" | tee -a "$out/summary.txt"
  exit 1
fi
