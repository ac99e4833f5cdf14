#!/usr/bin/env python3
"""Regret of the exchange scheduler "auto" (ExchangePlan, C3 model) on a grid.

For each (processes, density, bytes) of the grid, `switchyard exchange
--interleave` runs the six candidates and auto in one job (same matrix), K
repetitions in which each runs once, each after every other equally often (a
Williams design: with 7 contestants, a full cycle is 14 repetitions, the
default); regret = auto's time
/ the best candidate's time, a time
being the lower quartile of the K repetitions (the machine is shared: other
tenants only add time, and a median of a few runs still catches their
descheduling; --statistic median uses the medians instead, --statistic min the fastest
repetition: on a machine so loaded that most repetitions are descheduled for
milliseconds, only the minimum still measures the exchange). The grid's
matrices (n, d, seed) are not those of the calibration (16 processes,
density 4, seed 1001).
Also the regret of always taking one fixed scheduler (ac, optimal), and of a
size-keyed table like Open MPI's (ac below 8 KiB, optimal from 8 KiB up).

The schedulers' samples are interleaved, so a burst of the machine's other
tenants hits them alike (--separate runs each scheduler in its own job, one
after the other, as before). With --rounds R the grid is measured R times,
round after round, and each candidate's time is the least of its R
statistics. "auto" and "auto's choice" differ only by noise now: the same
schedule, run in the same job.

  scripts/auto_regret.py BUILD_DIR MACHINE_JSON [--repeat K] [--rounds R] [--seed S] [--statistic quartile|median|min]
                         [--grid small|large]
                         [--separate]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile

CANDIDATES = ["ac", "lp", "cgm", "optimal", "optimal-bytes", "drsn"]
# Each grid: (processes, density, message sizes) per matrix. "small" is the
# regret grid; "large" the scale beyond it, where a flood of small messages
# costs ac far more per message than at 16 x 4 and a phased scheduler can win
# (the calibration's two scales are 16 x 4 and 64 x 16 messages, seed 1001).
GRIDS = {
    "small": [(n, d, [256, 2048, 8192, 32768]) for n in (8, 24, 48) for d in (2, 6)],
    "large": [(128, 32, [128, 256, 4096]), (256, 64, [128, 1024]), (256, 16, [128, 2048]), (96, 24, [256, 2048]),
              (192, 12, [128, 512])],
}


def run(build, machine, n, d, sizes, repeat, seed, separate, schedulers=CANDIDATES + ["auto"]):
    """`switchyard exchange`'s JSON results for one matrix of the grid."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [f"{build}/apps/switchyard", "exchange", "--processes", str(n), "--density", str(d),
               "--bytes", ",".join(map(str, sizes)), "--repeat", str(repeat), "--seed", str(seed),
               "--schedulers", ",".join(schedulers), "--machine", machine, "--json", out.name] + ([] if separate else ["--interleave"])
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out.name))["results"]


def statistic(result, which):
    if which == "median":
        return result["comm_ms"]["median"]
    if which == "min":
        return min(result["samples_ms"])
    samples = sorted(result["samples_ms"])
    return samples[len(samples) // 4]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("machine")
    ap.add_argument("--repeat", type=int, default=14)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--statistic", choices=["quartile", "median", "min"], default="quartile")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--grid", choices=sorted(GRIDS), default="small")
    ap.add_argument("--separate", action="store_true", help="one job per scheduler (not interleaved)")
    a = ap.parse_args()
    rows = []
    grid = GRIDS[a.grid]
    measured = {(n, d): [] for n, d, _ in grid}
    for _ in range(a.rounds):
        for n, d, sizes in grid:
            measured[(n, d)].append(run(a.build, a.machine, n, d, sizes, a.repeat, a.seed, a.separate))
    for n, d, sizes in grid:
        for b in sizes:
            rounds = [{r["scheduler"]: r for r in results if r["bytes"] == b} for results in measured[(n, d)]]
            by = rounds[0]
            times = {s: min(statistic(r[s], a.statistic) for r in rounds) for s in CANDIDATES + ["auto"]}
            best = min(CANDIDATES, key=times.get)
            table = "ac" if b < 8192 else "optimal"
            rows.append(dict(n=n, d=d, bytes=b, chosen=by["auto"]["chosen"], best=best,
                             auto=times["auto"] / times[best],
                             chosen_in_run=times[by["auto"]["chosen"]] / times[best],
                             ac=times["ac"] / times[best], optimal=times["optimal"] / times[best],
                             table=times[table] / times[best]))
    print(f"{'n':>4} {'d':>3} {'bytes':>6} {'chosen':>14} {'best':>14} {'auto':>7} {'chosen*':>8} "
          f"{'ac':>7} {'optimal':>8} {'table':>7}")
    for r in rows:
        print(f"{r['n']:>4} {r['d']:>3} {r['bytes']:>6} {r['chosen']:>14} {r['best']:>14} {r['auto']:>7.2f} "
              f"{r['chosen_in_run']:>8.2f} {r['ac']:>7.2f} {r['optimal']:>8.2f} {r['table']:>7.2f}")
    print("\nregret (median, worst) over", len(rows), "cases:")
    for key, what in [("auto", "auto (its own run)"), ("chosen_in_run", "auto's choice (as a candidate)"),
                      ("ac", "always ac"), ("optimal", "always optimal"), ("table", "size-keyed table")]:
        v = [r[key] for r in rows]
        print(f"  {what:<40} {statistics.median(v):6.2f} {max(v):6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
