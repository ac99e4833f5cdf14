#!/usr/bin/env python3
"""How far back-to-back calibrations agree, and whether it matters.

Runs `switchyard model calibrate` N times in a row (or reads machine files
already written, --machines) and prints:
 1. every measured parameter of the core level per calibration, and its worst
    pair |a - b| / min(a, b), marked where it exceeds 10 % (the issue's
    target: two runs within 10 %);
 2. the collectives' `auto` choice (ring-sync) on the regret grid of
    collective_regret.py, per calibration, and the cases where the
    calibrations do not all choose alike;
 3. the exchange schedulers' `auto` choice (ExchangePlan) on the grid of
    auto_regret.py, likewise (one short run of `exchange --schedulers auto`
    per matrix and calibration: the choice is made before the run); with
    --measure-exchanges K, the grid's candidates are measured once (as
    auto_regret.py does, K interleaved repetitions, lower quartile) and each
    calibration's choices get their regret;
 1a. the host's figures recorded during each calibration (model/host_state.hpp),
    and, for the pairs of calibrations whose host figures agree within 10 %,
    the parameters that still differ by more;
 4. with --rescore DIR ...: the regret of `auto` on each run directory of
    collective_regret.py, rescored with every calibration (the same
    measurements, each calibration's choices): what the parameters' spread
    costs a user.
A calibration that found the cores co-located all through describes another
state of the host (colocation.hpp): it is listed, and left out of the pairs.
One whose exchange corrections were measured while the state probes around
them disagreed with the file (calibrate's warning, measured
"exchange_probes_in_other_state" > 0) keeps its other parameters in the pairs,
and its exchange ratios are listed, not paired.

  scripts/calibration_repeatability.py BUILD OUT_DIR [--runs N] [--machines FILE ...] [--rescore DIR ...]
                                       [--measure-exchanges K]
"""
import argparse
import itertools
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

import auto_regret
import collective_regret

# Fields of the core level that calibrate does not measure (the hardware's,
# the runtime's defaults, the shape).
NOT_MEASURED = {"cols", "cores", "eager_limit", "packet_bytes", "ring_bytes", "private_cache_bytes", "rows"}
TARGET = 0.10
# The exchange grid's matrices: auto_regret.py's default seed.
EXCHANGE_SEED = 7


def calibrations(a):
    if a.machines:
        return [pathlib.Path(m) for m in a.machines]
    out = []
    for k in range(1, a.runs + 1):
        path = a.out / f"calibration{k}.json"
        subprocess.run([f"{a.build}/apps/switchyard", "model", "calibrate", "--out", str(path)], check=True,
                       stdout=subprocess.DEVNULL)
        out.append(path)
    return out


def core_level(path):
    """The core level's measured parameters, the exchange correction's ratios
    flattened into them (exchange_correction.SCHEDULER@BYTES[@MESSAGES/core]) unless they were
    measured in the other state, whether they were, and whether the file
    describes the co-located state."""
    level = json.loads(path.read_text())["levels"]["core"]
    out = {k: v for k, v in level.items()
           if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in NOT_MEASURED}
    exchange_in_other_state = level.get("measured", {}).get("exchange_probes_in_other_state", 0) > 0
    correction = level.get("exchange_correction") or {"bytes": [], "ratio": {}}
    scales = correction.get("messages_per_core")
    for name, tables in correction["ratio"].items():
        for scale, ratios in zip(scales, tables) if scales else [(None, tables)]:
            for b, r in zip(correction["bytes"], ratios):
                if not exchange_in_other_state:
                    out[f"exchange_correction.{name}@{b}" + (f"@{scale:g}/core" if scale else "")] = r
    return out, exchange_in_other_state, bool(level.get("colocated"))


def host_state(path):
    """The host's figures recorded during the calibration (model/host_state.hpp): measured["host_*"]."""
    measured = json.loads(path.read_text())["levels"]["core"].get("measured", {})
    return {k: v for k, v in measured.items() if k.startswith("host_")}


def worst_pair(values):
    return max((abs(x - y) / min(x, y) if min(x, y) > 0 else (0 if x == y else float("inf"))
                for x, y in itertools.combinations(values, 2)), default=0.0)


def print_table(paths, levels, what="parameters"):
    """Each figure per calibration, its worst pair, and how many are within 10 %."""
    names = list(dict.fromkeys(name for level in levels for name in level))
    print(f"{what[:-1]:<36}" + "".join(f"{p.stem[-12:]:>13}" for p in paths) + "   worst pair")
    missed = []
    for name in names:
        values = [level.get(name) for level in levels]
        worst = worst_pair([v for v in values if v is not None])
        if worst > TARGET:
            missed.append(name)
        print(f"{name:<36}" + "".join(f"{v:>13.4g}" if v is not None else f"{'-':>13}" for v in values) +
              f"   {100 * worst:6.1f} %" + ("  over 10 %" if worst > TARGET else ""))
    print(f"\n{len(names) - len(missed)} of {len(names)} {what} within 10 % over every pair" +
          (f"; over: {', '.join(missed)}" if missed else ""))


def print_like_state_pairs(paths, levels, hosts):
    """The parameters over 10 % in the pairs of calibrations whose host figures were all within 10 %."""
    like = [(i, j) for i, j in itertools.combinations(range(len(paths)), 2)
            if hosts[i].keys() == hosts[j].keys()
            and all(worst_pair([hosts[i][k], hosts[j][k]]) <= TARGET for k in hosts[i])]
    print(f"\npairs taken in a like host state (its figures within 10 %): "
          f"{', '.join(f'{paths[i].stem}-{paths[j].stem}' for i, j in like) or 'none'}")
    for i, j in like:
        over = [name for name in levels[i] if name in levels[j]
                and worst_pair([levels[i][name], levels[j][name]]) > TARGET]
        print(f"  {paths[i].stem} / {paths[j].stem}: {len(levels[i]) - len(over)} of {len(levels[i])} within 10 %" +
              (f"; over: {', '.join(over)}" if over else ""))


def chosen(build, machine, op, p, L):
    out = subprocess.run([f"{build}/apps/switchyard", "model", "predict", "--op", op, "--processes", str(p),
                          "--bytes", str(L), "--machine", str(machine)], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        if "chosen:" in line:
            return line.split("chosen:")[1].split()[0]
    raise SystemExit(f"calibration_repeatability.py: no choice in model predict's output: {out!r}")


def print_choices(build, paths):
    grid = list(collective_regret.cases(collective_regret.PROCESSES, collective_regret.SIZES))
    split = []
    for op, p, L in grid:
        picks = [chosen(build, m, op, p, L) for m in paths]
        if len(set(picks)) > 1:
            split.append((op, p, L, {name: picks.count(name) for name in sorted(set(picks))}))
    print(f"\nauto's choice on the regret grid ({len(grid)} cases): {len(grid) - len(split)} chosen alike by every "
          f"calibration")
    for op, p, L, counts in split:
        print(f"  {op} p = {p}, L = {L}: " + ", ".join(f"{name} by {n}" for name, n in counts.items()))


def exchange_choices(build, machine):
    """auto's scheduler per (n, d, bytes) of auto_regret.py's grid."""
    picks = {}
    for n, d, sizes in auto_regret.GRIDS["small"]:
        for r in auto_regret.run(build, str(machine), n, d, sizes, 1, EXCHANGE_SEED, True, schedulers=["auto"]):
            picks[(n, d, r["bytes"])] = r["chosen"]
    return picks


def exchange_times(build, machine, repeat):
    """Each candidate's time (auto_regret.py's statistic) per (n, d, bytes) of its grid."""
    times = {}
    for n, d, sizes in auto_regret.GRIDS["small"]:
        for r in auto_regret.run(build, str(machine), n, d, sizes, repeat, EXCHANGE_SEED, False):
            if r["scheduler"] in auto_regret.CANDIDATES:
                times.setdefault((n, d, r["bytes"]), {})[r["scheduler"]] = auto_regret.statistic(r, "quartile")
    return times


def print_exchange_choices(build, paths, repeat):
    per_machine = [exchange_choices(build, m) for m in paths]
    split = [(case, [picks[case] for picks in per_machine]) for case in per_machine[0]]
    split = [(case, picks) for case, picks in split if len(set(picks)) > 1]
    print(f"\nExchangePlan auto's choice on the grid of auto_regret.py ({len(per_machine[0])} cases): "
          f"{len(per_machine[0]) - len(split)} chosen alike by every calibration")
    for (n, d, b), picks in split:
        print(f"  n = {n}, d = {d}, {b} B: " +
              ", ".join(f"{name} by {picks.count(name)}" for name in sorted(set(picks))))
    if not repeat:
        return
    times = exchange_times(build, paths[0], repeat)
    print(f"ExchangePlan auto's regret with each calibration's choices, on one measurement of the grid "
          f"({repeat} interleaved repetitions, lower quartile), median / worst:")
    worst = []
    for m, picks in zip(paths, per_machine):
        regrets = [times[case][picks[case]] / min(times[case].values()) for case in times]
        worst.append(max(regrets))
        print(f"  {m.name:<28} {statistics.median(regrets):6.3f} {max(regrets):6.3f}")
    print(f"  worst regret from {min(worst):.3f} to {max(worst):.3f}")


def rescored_regret(build, machine, run_dir):
    """auto's (ring-sync) median and worst regret on run_dir's measurements,
    charged with `machine` (in a scratch copy: rescoring writes its files beside the runs)."""
    with tempfile.TemporaryDirectory() as scratch:
        for run in pathlib.Path(run_dir).glob("*-run*.json"):
            shutil.copy(run, scratch)
        a = argparse.Namespace(build=build, machine=str(machine), out=pathlib.Path(scratch), no_run=True, again=2,
                               threshold=1.25, check="ring-sync", no_probe=True, repeat=0, batch=1)
        rows = collective_regret.regret_rows(a, collective_regret.PROCESSES, collective_regret.SIZES)
    regrets = [r["ring-sync"][1] for r in rows if not r["colocated"]]
    if not regrets:
        raise SystemExit(f"calibration_repeatability.py: no runs of the regret grid in {run_dir}")
    return statistics.median(regrets), max(regrets)


def print_rescored(build, paths, run_dirs):
    for run_dir in run_dirs:
        print(f"\nauto's regret on {run_dir}, rescored with each calibration (median / worst):")
        worst = []
        for m in paths:
            median, top = rescored_regret(build, m, run_dir)
            worst.append(top)
            print(f"  {m.name:<28} {median:6.3f} {top:6.3f}")
        print(f"  worst regret from {min(worst):.3f} to {max(worst):.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--runs", type=int, default=5, help="calibrations to run, back to back")
    ap.add_argument("--machines", nargs="+", help="machine files already written (nothing is calibrated)")
    ap.add_argument("--rescore", nargs="+", default=[], help="run directories of collective_regret.py")
    ap.add_argument("--measure-exchanges", type=int, default=0, metavar="K",
                    help="measure the exchange grid once, K repetitions, and give each calibration's choices' regret")
    a = ap.parse_args()
    if not a.machines and a.runs < 2:
        ap.error("--runs must be at least 2")
    a.out.mkdir(parents=True, exist_ok=True)
    paths = calibrations(a)
    levels = [core_level(p) for p in paths]
    colocated = [p.name for p, (_, _, co) in zip(paths, levels) if co]
    normal = [(p, level) for p, (level, _, co) in zip(paths, levels) if not co]
    exchange_apart = [p.name for p, (_, other, co) in zip(paths, levels) if other and not co]
    print(f"{len(paths)} calibrations, {len(colocated)} of them co-located all through" +
          (f" (left out of the pairs: {', '.join(colocated)})" if colocated else ""))
    if exchange_apart:
        print(f"exchange corrections measured in the other state (not paired): {', '.join(exchange_apart)}")
    if len(normal) < 2:
        raise SystemExit("calibration_repeatability.py: fewer than two calibrations in the normal state")
    print_table([p for p, _ in normal], [level for _, level in normal])
    hosts = [host_state(p) for p, _ in normal]
    if all(hosts):
        print("\nthe host's state during each calibration (not parameters: what the host let the machine do):")
        print_table([p for p, _ in normal], hosts, "host figures")
        print_like_state_pairs([p for p, _ in normal], [level for _, level in normal], hosts)
    print_choices(a.build, [p for p, _ in normal])
    print_exchange_choices(a.build, [p for p, _ in normal], a.measure_exchanges)
    print_rescored(a.build, [p for p, _ in normal], a.rescore)
    return 0


if __name__ == "__main__":
    sys.exit(main())
