#!/usr/bin/env python3
"""Regret of the collectives' `auto` for every model variant, and of the fixed
size-keyed table, on the regret grid (p in {24, 100, 300} x L in {40, 400,
3000, 12000}; all-to-all at p = 300 up to 3000 B: 35 cases, none of them the
calibration's or the figures').

Each case is one `switchyard collective --algorithm all` job: every
algorithm's K samples interleaved (collective --batch B runs per sample). An
algorithm's time is the least of its samples over every run of the case:
other tenants of the machine (and the kernel descheduling a worker for
milliseconds) only ever add time, so the minimum is what the algorithm costs
here; a median of K is ruined whenever more than half of the samples are hit.
A case whose regret (for --check, default ring-sync) exceeds --threshold is
measured again, --again times, and its samples pooled: a worst case is only
believed once re-measured.

The machine's two cores are probed before and after every run (`model
probe`, 0.2 s): a run taken while they were co-located (colocation.hpp; the
machine file describes the normal state) is left out of a case's times
when the case has a run in the normal state, and a case with none is measured
again (--again) and then reported apart, as measured co-located.

Regret = time of the variant's choice / time of the fastest algorithm.
Spearman per (op, p) = mean over L of the rank correlation of predicted units
and times.

  scripts/collective_regret.py BUILD MACHINE.json OUT_DIR [--repeat K] [--batch B] [--again N] [--no-run] [--no-probe]
                              [--processes P,P,...] [--sizes L,L,...]

--no-run summarizes the runs already in OUT_DIR (cases without one are left out;
runs without a .state.json beside them count as normal). --no-probe skips the probes.
--processes / --sizes measure another grid (e.g. to study the model away from
the regret grid); all-to-all with p > 100 and L > 3000 is left out (its
1-level algorithms take minutes).
"""
import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys

VARIANTS = ["ring-sync", "calibrated", "paper"]
OPS = ["one-to-all", "all-to-one", "all-to-all"]
PROCESSES = [24, 100, 300]
SIZES = [40, 400, 3000, 12000]


def cases(processes, sizes):
    for op in OPS:
        for p in processes:
            for L in sizes:
                if op == "all-to-all" and p > 100 and L > 3000:  # the 1-level algorithms take minutes here
                    continue
                yield op, p, L


def colocated_now(a):
    """Whether the machine's two cores are in the co-located state right now
    (model/include/switchyard/model/colocation.hpp): `model probe`, 7 rounds
    of 5 hand-offs each way, with most of its rounds found co-located (a round
    of a few runs can be slowed into looking co-located by one hiccup)."""
    out = subprocess.run([f"{a.build}/apps/switchyard", "model", "probe", "--rounds", "7", "--repeat", "5"],
                         check=True, capture_output=True, text=True).stdout
    found = re.match(r"model probe: (\d+) of 7 rounds co-located", out)
    if not found:
        raise SystemExit(f"collective_regret.py: unexpected output of model probe: {out!r}")
    return int(found.group(1)) >= 4


def measure(a, op, p, L, run):
    """One run of the case, with the cores' state probed before and after it
    (kept beside it in .state.json; --no-probe: not probed, taken as normal)."""
    out = a.out / f"{op}-{p}-{L}-run{run}.json"
    state = out.with_suffix(".state.json")
    if not out.exists():
        before = not a.no_probe and colocated_now(a)
        subprocess.run([f"{a.build}/apps/switchyard", "collective", "--op", op, "--algorithm", "all", "--processes",
                        str(p), "--bytes", str(L), "--repeat", str(a.repeat), "--batch", str(a.batch), "--machine",
                        a.machine, "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
        after = not a.no_probe and colocated_now(a)
        state.write_text(json.dumps({"colocated_before": before, "colocated_after": after}))
    run_json = json.loads(out.read_text())
    states = json.loads(state.read_text()) if state.exists() else {}
    run_json["colocated"] = states.get("colocated_before", False) or states.get("colocated_after", False)
    return run_json


def charged(a, op, p, L, variant):
    """Each algorithm's predicted units and the auto / table choice under `variant`."""
    src = a.out / f"{op}-{p}-{L}-run0.json"
    out = a.out / f"{op}-{p}-{L}-{variant}.json"
    subprocess.run([f"{a.build}/apps/switchyard", "collective", "--rescore", str(src), "--variant", variant,
                    "--machine", a.machine, "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
    j = json.loads(out.read_text())
    units = {r["algorithm"]: r["predicted_units"] for r in j["results"]}
    return units, j["by_bytes"][0]["auto"], j["by_bytes"][0]["table"]


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x, y):
    a, b = ranks(x), ranks(y)
    n = len(a)
    m = (n + 1) / 2
    sab = sum((a[i] - m) * (b[i] - m) for i in range(n))
    saa = sum((a[i] - m) ** 2 for i in range(n))
    sbb = sum((b[i] - m) ** 2 for i in range(n))
    return None if saa == 0 or sbb == 0 else sab / (saa * sbb) ** 0.5


def pooled_min(runs):
    """Each algorithm's least sample over the runs taken in the normal state
    (over all of them when none was)."""
    normal = [run for run in runs if not run["colocated"]]
    best = {}
    for run in normal or runs:
        for r in run["results"]:
            best[r["algorithm"]] = min(best.get(r["algorithm"], float("inf")), min(r["samples_ms"]))
    return best


def regret_rows(a, processes, sizes):
    """Per case of the grid: the runs (measured now, or those in a.out with
    --no-run), each variant's choice, its regret and Spearman, and the fixed
    table's."""
    rows = []
    for op, p, L in cases(processes, sizes):
        first = a.out / f"{op}-{p}-{L}-run0.json"
        if a.no_run and not (first.exists() and first.stat().st_size > 0):  # absent, or a run still writing it
            continue
        runs = [measure(a, op, p, L, 0)]
        charges = {v: charged(a, op, p, L, v) for v in VARIANTS}
        times = pooled_min(runs)
        check = charges[a.check][1]
        for k in range(a.again):
            again = a.out / f"{op}-{p}-{L}-run{k + 1}.json"
            believed = times[check] / min(times.values()) <= a.threshold and not all(r["colocated"] for r in runs)
            if believed or (a.no_run and not (again.exists() and again.stat().st_size > 0)):
                break
            runs.append(measure(a, op, p, L, k + 1))
            times = pooled_min(runs)
        best = min(times, key=times.get)
        row = dict(op=op, p=p, L=L, runs=len(runs), best=best, table=charges[a.check][2],
                   colocated=all(r["colocated"] for r in runs),
                   table_regret=times[charges[a.check][2]] / times[best])
        for v in VARIANTS:
            units, chosen, _ = charges[v]
            names = sorted(times)
            row[v] = (chosen, times[chosen] / times[best], spearman([units[n] for n in names], [times[n] for n in names]))
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("machine")
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--again", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=1.25)
    ap.add_argument("--check", default="ring-sync")
    ap.add_argument("--no-run", action="store_true")
    ap.add_argument("--no-probe", action="store_true", help="do not probe the cores' state around each run")
    ap.add_argument("--processes", default=",".join(map(str, PROCESSES)),
                    help="comma-separated p (another grid, e.g. to study the model away from the regret grid)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated L in bytes")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    processes = [int(x) for x in a.processes.split(",")]
    rows = regret_rows(a, processes, [int(x) for x in a.sizes.split(",")])
    print(f"{'op':>10} {'p':>4} {'L':>6} {'runs':>4} {'best':>18} | " +
          " | ".join(f"{v:>28}" for v in VARIANTS) + f" | {'table':>24}")
    for r in rows:
        cells = [f"{r[v][0]:>20} {r[v][1]:6.2f}" for v in VARIANTS]
        print(f"{r['op']:>10} {r['p']:>4} {r['L']:>6} {r['runs']:>4} {r['best']:>18} | " + " | ".join(cells) +
              f" | {r['table']:>17} {r['table_regret']:6.2f}" + ("  co-located" if r["colocated"] else ""))
    # The machine file describes the normal state (calibration.cpp); a case
    # whose every run found the cores co-located measured another machine.
    normal = [r for r in rows if not r["colocated"]]
    for label, chosen in [("every case", rows), ("the cases measured in the normal state", normal)]:
        if not chosen:
            continue
        print(f"\nregret over {label}, {len(chosen)} (time: least sample over the runs), median / worst:")
        for v in VARIANTS:
            g = [r[v][1] for r in chosen]
            print(f"  auto, {v:<11} {statistics.median(g):6.3f} {max(g):6.3f}")
        g = [r["table_regret"] for r in chosen]
        print(f"  fixed table       {statistics.median(g):6.3f} {max(g):6.3f}")
    print("\nSpearman, mean over L, per (op, p):  " + "  ".join(VARIANTS))
    for op in OPS:
        for p in processes:
            cells = []
            for v in VARIANTS:
                rho = [r[v][2] for r in normal or rows if r["op"] == op and r["p"] == p and r[v][2] is not None]
                cells.append(f"{statistics.mean(rho):6.2f}" if rho else "   n/a")
            print(f"  {op:>10} {p:>4}  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
