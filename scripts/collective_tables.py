#!/usr/bin/env python3
"""Summarizes the JSON files of scripts/collective_figures.sh: per (operation,
p) the predicted-units / measured-ms table (the paper's Figs. 4-7 side by
side), the Spearman agreement per (operation, p), and the regret of `auto` and
of the fixed size-keyed table (measured median over the best algorithm's
median, in the same run) over the regret grid."""
import json
import pathlib
import statistics
import sys


def load(directory):
    return [json.loads(f.read_text()) for f in sorted(pathlib.Path(directory).glob("*.json"))]


def figure(run):
    sizes = run["bytes"]
    algorithms = list(dict.fromkeys(r["algorithm"] for r in run["results"]))
    cell = {(r["algorithm"], r["bytes"]): r for r in run["results"]}
    head = "| algorithm | " + " | ".join(f"L={s}" for s in sizes) + " |"
    lines = [f"#### {run['op']}, p = {run['processes']} ({run['variant']} model, ranked by {run['rank_by']}): "
             "units / median ms (min ms)", "", head,
             "|---" * (len(sizes) + 1) + "|"]
    for a in algorithms:
        cells = []
        for s in sizes:
            if (a, s) not in cell:
                cells.append("left out (memory)")
                continue
            r = cell[(a, s)]
            mark = (" (auto)" if r["chosen"] else "") + (" (table)" if r.get("table") else "")
            ms = r["measured_ms"]
            cells.append(f"{r['predicted_units']:.0f} / {ms['median']:.3f} ({ms['min']:.3f}){mark}")
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    rho = [f"{b['bytes']}: {b['spearman']:.2f}" if b["spearman"] is not None else f"{b['bytes']}: n/a"
           for b in run["by_bytes"]]
    lines.append("")
    lines.append(f"Spearman per L: {', '.join(rho)}; mean {run['spearman']:.2f}")
    return "\n".join(lines)


def regrets(runs):
    auto, table = [], []
    for run in runs:
        for b in run["by_bytes"]:
            auto.append(b["regret"]["auto"])
            table.append(b["regret"]["table"])
    return auto, table


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "collective-results")
    figures = load(root / "figures")
    for run in figures:
        print(figure(run) + "\n")
    print("| operation | p | Spearman (mean over L) |")
    print("|---|---|---|")
    for run in figures:
        print(f"| {run['op']} | {run['processes']} | {run['spearman']:.2f} |")
    for name, runs in (("figures grid", figures), ("regret grid", load(root / "regret"))):
        if not runs:
            continue
        auto, table = regrets(runs)
        auto = [a for a in auto if a is not None]
        table = [t for t in table if t is not None]
        print(f"\n{name}: {len(auto)} cases; auto regret median {statistics.median(auto):.3f}, worst {max(auto):.3f}; "
              f"fixed table median {statistics.median(table):.3f}, worst {max(table):.3f}")


if __name__ == "__main__":
    main()
