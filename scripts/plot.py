#!/usr/bin/env python3
"""Plots of the JSON that `switchyard` writes (--json), with matplotlib.

    scripts/plot.py [--out DIR] [--format png|svg] FILE.json...

Each file is recognized by its fields, and every file of one kind goes into
that kind's plot (one PNG each, in DIR, default the current directory):

  table4_phases.png         `switchyard phases --json`, several densities:
                            average phases (min..max bars) against d per
                            scheduler and n, with Ranka-Wang-Fox Table 4's
                            CGM points and the lower bound d.
  exchange_time.png         `switchyard exchange --json`: communication time
                            (median, min..max bars) against message size per
                            scheduler, with the machine's floor (floor_ms).
  redistribution_time.png   `switchyard redistribute --json`, several process
                            counts: time against P per schedule kind, one
                            panel per change of layout (Guo-Nakata-Yamashita
                            Figs. 10-11: cyclic(6) -> cyclic(2), K = 3, and
                            cyclic(12) -> cyclic(2), K = 6 on enough processes).
  dynamic_delay.png         `switchyard dynamic --sweep ... --json` rows
                            {scheme, topology, processes, k, rate,
                            stability_limit, stable, broadcast_delay,
                            reception_delay, generated, delivered}: delays
                            against load (rate / stability_limit) per scheme,
                            unstable points hollow.
  contention_growth.png     `switchyard contention --json`: the receiver's
                            time and the senders' average against d, each as
                            a ratio to d = 1, beside Wang-Lin-Ranka Table 2's
                            CM-5 ratios (dashed); a panel per message size and
                            busy lock, a line per placement.
  exchange_scaling.png      `switchyard exchange --json` files of several core
                            counts (scripts/scale_study.sh): time against the
                            cores per scheduler, a panel per message size
                            (drawn instead of exchange_time.png).

Exit status: 0 with every plot written, 2 for bad input (unreadable or
unrecognized JSON), 77 when matplotlib is missing (install python3-matplotlib:
scripts/install-deps.sh).
"""

import argparse
import json
import os
import re
import sys
from collections import defaultdict

EXIT_USAGE = 2
EXIT_NO_MATPLOTLIB = 77

# Ranka-Wang-Fox Table 4, CGM's average phases ("perm"), as (n, d, phases);
# bench/table4_reproduction.cpp holds the same rows.
TABLE4_CGM = [
    (32, 1, 1.0), (32, 2, 3.0), (32, 4, 5.6), (32, 8, 10.2), (32, 16, 18.5), (32, 24, 26.5), (32, 31, 34.2),
    (128, 1, 1.0), (128, 2, 3.0), (128, 4, 6.0), (128, 8, 10.7), (128, 16, 19.5), (128, 32, 36.3),
    (128, 64, 68.8), (128, 96, 100.7), (128, 127, 132.4),
    (512, 1, 1.0), (512, 2, 3.0), (512, 4, 6.1), (512, 8, 11.1), (512, 16, 20.0), (512, 32, 37.1),
    (512, 64, 70.3), (512, 128, 135.4), (512, 256, 263.7), (512, 384, 391.2), (512, 511, 519.0),
]

DYNAMIC_FIELDS = {"scheme", "rate", "stability_limit", "stable", "broadcast_delay", "reception_delay"}


def fail(message):
    print(f"plot.py: error: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def kind_of(path, data):
    """The command that wrote `data`, and the records to plot."""
    if isinstance(data, dict) and data.get("command") == "contention" and "results" in data:
        return "contention", [data]
    if isinstance(data, dict) and "phases" in data and "density" in data and "samples" in data:
        return "phases", [data]
    if isinstance(data, dict) and "results" in data and "density" in data:
        return "exchange", [data]
    if isinstance(data, dict) and "results" in data and "K" in data and "extent" in data:
        return "redistribute", [data]
    rows = data.get("rows", data.get("results")) if isinstance(data, dict) else data
    if isinstance(rows, list) and rows and all(isinstance(r, dict) and DYNAMIC_FIELDS <= r.keys() for r in rows):
        return "dynamic", rows
    fail(f"{path}: not the JSON of switchyard phases, exchange, redistribute, contention or dynamic --sweep")


def plot_phases(plt, records, out):
    fig, ax = plt.subplots(figsize=(7, 5))
    series = defaultdict(list)
    for r in records:
        p = r["phases"]
        series[(r["scheduler"], r["processes"])].append((r["density"], p["avg"], p["min"], p["max"]))
    for (scheduler, n), points in sorted(series.items()):
        points.sort()
        d = [x[0] for x in points]
        avg = [x[1] for x in points]
        err = [[x[1] - x[2] for x in points], [x[3] - x[1] for x in points]]
        ax.errorbar(d, avg, yerr=err, marker="o", capsize=3, label=f"{scheduler}, n = {n} (ours)")
        paper = [(pd, pp) for pn, pd, pp in TABLE4_CGM if pn == n and min(d) <= pd <= max(d)]
        if paper and scheduler == "cgm":
            ax.plot([x[0] for x in paper], [x[1] for x in paper], "kx", markersize=9, label=f"CGM, n = {n} (paper)")
    all_d = sorted({r["density"] for r in records})
    ax.plot(all_d, all_d, "k:", label="lower bound: d phases")
    ax.set_xlabel("density d (messages sent and received per process)")
    ax.set_ylabel("phases (average; bars: min..max)")
    ax.set_title("Phases against density: Ranka-Wang-Fox Table 4 (perm)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return save(plt, fig, out, "table4_phases")


def plot_exchange(plt, records, out):
    if len({r.get("cores") for r in records}) > 1:
        return plot_exchange_scaling(plt, records, out)
    fig, ax = plt.subplots(figsize=(7, 5))
    series = defaultdict(dict)
    floor = {}
    titles = set()
    for r in records:
        titles.add(f"{r['processes']} processes, density {r['density']}, {r.get('cores', '?')} core(s)")
        for row in r["results"]:
            t = row["comm_ms"]
            series[row["scheduler"]][row["bytes"]] = (t["median"], t["min"], t["max"])
            if "floor_ms" in row:
                floor[row["bytes"]] = row["floor_ms"]
    for scheduler, by_size in sorted(series.items()):
        sizes = sorted(by_size)
        med = [by_size[s][0] for s in sizes]
        err = [[by_size[s][0] - by_size[s][1] for s in sizes], [by_size[s][2] - by_size[s][0] for s in sizes]]
        ax.errorbar(sizes, med, yerr=err, marker="o", capsize=3, label=scheduler)
    if floor:
        sizes = sorted(floor)
        ax.plot(sizes, [floor[s] for s in sizes], "k--", linewidth=2, label="floor (memcpy of every byte once)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("communication time (ms, median; bars: min..max)")
    ax.set_title("Exchange time against message size\n" + "; ".join(sorted(titles)), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(plt, fig, out, "exchange_time")


def plot_exchange_scaling(plt, records, out):
    by_size = defaultdict(lambda: defaultdict(dict))  # bytes -> scheduler -> cores -> median ms
    for r in records:
        for row in r["results"]:
            by_size[row["bytes"]][row["scheduler"]][r["cores"]] = row["comm_ms"]["median"]
    sizes = sorted(by_size)
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.5), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for scheduler, by_cores in sorted(by_size[size].items()):
            cores = sorted(by_cores)
            ax.plot(cores, [by_cores[c] for c in cores], marker="o", label=scheduler)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("cores")
        ax.set_ylabel("communication time (ms, median)")
        ax.set_title(f"Fig. 7 exchange, {size} bytes", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return save(plt, fig, out, "exchange_scaling")


def plot_contention(plt, records, out):
    panels = defaultdict(lambda: defaultdict(dict))  # (bytes, busy) -> placement -> d -> ratios
    paper = {}
    for r in records:
        for row in r["results"]:
            if row["ratio_to_d1"] is None:
                continue
            where = row["placement"] + (f" {row['distance']}" if row.get("distance") else "")
            panels[(row["bytes"], row["busy_lock"])][where][row["senders"]] = row["ratio_to_d1"]
            if row.get("paper_ratio_to_d1"):
                paper[(row["bytes"], row["senders"])] = row["paper_ratio_to_d1"]
    if not panels:
        fail("the contention JSON has no row with a ratio to d = 1 (run it with d = 1 among --senders)")
    sizes = sorted({size for size, _ in panels})
    locks = sorted({busy for _, busy in panels})
    fig, axes = plt.subplots(len(sizes), len(locks), figsize=(5.5 * len(locks), 4.5 * len(sizes)), squeeze=False)
    for size, busy in sorted(panels):
        ax = axes[sizes.index(size)][locks.index(busy)]
        for where, by_d in sorted(panels[(size, busy)].items()):
            ds = sorted(by_d)
            ax.plot(ds, [by_d[d]["recv"] for d in ds], marker="o", label=f"recv, {where}")
            ax.plot(ds, [by_d[d]["ave"] for d in ds], marker="s", label=f"send ave, {where}")
        ds = sorted(d for (b, d) in paper if b == size)
        if ds:
            ax.plot(ds, [paper[(size, d)]["recv"] for d in ds], "k--", marker="o", label="recv, CM-5 (Table 2)")
            ax.plot(ds, [paper[(size, d)]["ave"] for d in ds], "k:", marker="s", label="send ave, CM-5 (Table 2)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("senders d")
        ax.set_ylabel("time / time at d = 1")
        ax.set_title(f"{size} bytes, busy lock {'on' if busy else 'off'}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Node contention: growth with d, measured beside the CM-5", fontsize=11)
    return save(plt, fig, out, "contention_growth")


def plot_redistribution(plt, records, out):
    # One panel per change of layout (the distributions without their process
    # grids): Fig. 10 is cyclic(6) -> cyclic(2) (K = 3), Fig. 11 K = 6.
    def layout(r):
        return re.sub(r"@\S+", "", r["from"]) + " -> " + re.sub(r"@\S+", "", r["to"])
    by_layout = defaultdict(list)
    for r in records:
        by_layout[layout(r)].append(r)
    fig, axes = plt.subplots(1, len(by_layout), figsize=(6 * len(by_layout), 5), squeeze=False)
    for ax, (name, runs) in zip(axes[0], sorted(by_layout.items())):
        series = defaultdict(list)
        for r in runs:
            for row in r["results"]:
                if row.get("available"):
                    series[row["schedule"]].append((r["processes"], row["redistribute_ms"]["median"]))
        for schedule, points in sorted(series.items()):
            points.sort()
            ax.plot([p for p, _ in points], [t for _, t in points], marker="o", label=schedule)
        ks = sorted({r["K"] for r in runs})
        ax.set_title(f"{name}, extent {runs[0]['extent']} (K = {', '.join(map(str, ks))})", fontsize=9)
        ax.set_xlabel("processes P")
        ax.set_xticks(sorted({r["processes"] for r in runs}))
        ax.set_ylabel("redistribution time (ms, median)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Redistribution time against P per schedule (Guo-Nakata-Yamashita Figs. 10-11)")
    return save(plt, fig, out, "redistribution_time")


def plot_dynamic(plt, rows, out):
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    series = defaultdict(list)
    for r in rows:
        if r["stability_limit"] and r["stability_limit"] > 0:
            series[(r["scheme"], r.get("topology", ""), r.get("processes", ""))].append(r)
    for ax, field, title in ((axes[0], "broadcast_delay", "broadcast delay"),
                             (axes[1], "reception_delay", "reception delay")):
        for (scheme, topology, processes), points in sorted(series.items()):
            points.sort(key=lambda r: r["rate"] / r["stability_limit"])
            load = [r["rate"] / r["stability_limit"] for r in points]
            delay = [r[field] for r in points]
            line, = ax.plot(load, delay, marker="o", label=f"{scheme} ({topology}, {processes} processes)")
            unstable = [(x, y) for x, y, r in zip(load, delay, points) if not r["stable"]]
            if unstable:
                ax.plot([x for x, _ in unstable], [y for _, y in unstable], "o", markersize=11,
                        markerfacecolor="none", markeredgecolor=line.get_color())
        ax.axvline(1.0, color="k", linestyle=":", label="stability limit")
        ax.set_xlabel("load (arrival rate / stability limit)")
        ax.set_ylabel(f"{title} (slots)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Dynamic schemes: delay against load (hollow rings: unstable)")
    return save(plt, fig, out, "dynamic_delay")


def save(plt, fig, out, name):
    fig.tight_layout()
    path = os.path.join(out.dir, f"{name}.{out.format}")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", metavar="FILE.json")
    parser.add_argument("--out", dest="dir", default=".", help="directory for the plots (default: .)")
    parser.add_argument("--format", default="png", choices=["png", "svg"])
    out = parser.parse_args()
    kinds = defaultdict(list)
    for path in out.files:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"{path}: {e}")
        kind, records = kind_of(path, data)
        kinds[kind].extend(records)
    if not os.path.isdir(out.dir):
        fail(f"--out: '{out.dir}' is not a directory")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # Debian's python3-matplotlib belongs to /usr/bin/python3; another
        # python3 may come first on PATH (pyenv, a virtualenv).
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
                and not os.environ.get("SWITCHYARD_PLOT_REEXEC"):
            os.environ["SWITCHYARD_PLOT_REEXEC"] = "1"
            os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
        print("plot.py: matplotlib is not installed (Debian: python3-matplotlib; scripts/install-deps.sh)",
              file=sys.stderr)
        sys.exit(EXIT_NO_MATPLOTLIB)
    plotters = {"phases": plot_phases, "exchange": plot_exchange, "redistribute": plot_redistribution,
                "dynamic": plot_dynamic, "contention": plot_contention}
    for kind, records in kinds.items():
        try:
            plotters[kind](plt, records, out)
        except (KeyError, TypeError, ZeroDivisionError) as e:
            fail(f"the {kind} JSON lacks a field or has a wrong one: {e!r}")


if __name__ == "__main__":
    main()
