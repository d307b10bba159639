#!/usr/bin/python3
"""Plots drtmx-bench JSON reports as PNG files.

    scripts/plot.py REPORT.json [REPORT2.json ...] [--out DIR]

Understands the three shapes drtmx-bench writes with --json:
  * one run                   -> <name>-timeline.png (committed/s over the run)
  * several presets (--policy=a,b or all; {"runs": [...]})
                              -> <name>-policies.png (throughput, p50/p99 bars)
                                 <name>-timeline.png (one line per preset)
  * a sweep (--sweep=KEY=V1,V2,...; {"sweep": ..., "points": [...]})
                              -> <name>-sweep.png (throughput and p50/p99 vs KEY)
                                 <name>-timeline.png (one line per point)
With --rounds=N (a "summary" of medians in the report) each preset or point
is drawn once: its medians, the range of committed/s as an error bar, and
the timeline of its median run.
A sweep of a count (coroutines, threads, nodes, ...) plots its points at even
steps labelled with their values; a quantity with a unit (--fabric-delay-ns)
on a linear axis.
Writes next to each report unless --out DIR is given (created if missing),
and prints every file written.
Needs matplotlib (Debian: python3-matplotlib; scripts/setup.sh installs it).
"""

import argparse
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(
        "plot.py: matplotlib is missing: install the Debian package python3-matplotlib "
        "(scripts/setup.sh does) and run this script with /usr/bin/python3"
    )


class BadReport(Exception):
    pass


def runs_of(report):
    """(label, run) pairs of a report, and its kind: 'run', 'policies' or 'sweep'."""
    kind, runs = all_runs_of(report)
    if report.get("rounds", 1) > 1 and isinstance(report.get("summary"), list):
        runs = medians_of(report, kind, runs)
    return kind, runs


def medians_of(report, kind, runs):
    """One (label, run) per preset or point of a report with rounds: the run
    nearest the median committed/s, its numbers replaced by the medians."""
    key = report.get("sweep", {}).get("key", "value")
    out = []
    for s in report["summary"]:
        if not s.get("runs") or s.get("tps_median") is None:
            continue
        label = "%s=%s" % (key, s["label"]) if kind == "sweep" else s["label"]
        mine = [r for lab, r in runs if lab == label]
        if not mine:
            continue
        nearest = min(mine, key=lambda r: abs(r["tps"] - s["tps_median"]))
        run = dict(nearest)
        run["tps"] = s["tps_median"]
        run["p50_us"] = s.get("p50_us_median") or run.get("p50_us", 0)
        run["p99_us"] = s.get("p99_us_median") or run.get("p99_us", 0)
        run["tps_range"] = (s.get("tps_min", run["tps"]), s.get("tps_max", run["tps"]))
        if s.get("vs_first_median") is not None:
            run["vs_first"] = s["vs_first_median"]  # within rounds, as the table
        out.append((label, run))
    return out


def error_bars(runs):
    """Below/above each median, for matplotlib's yerr; None without rounds."""
    if not all("tps_range" in r for _, r in runs):
        return None
    return [[r["tps"] - r["tps_range"][0] for _, r in runs],
            [r["tps_range"][1] - r["tps"] for _, r in runs]]


def all_runs_of(report):
    if "points" in report and "sweep" in report:
        key = report["sweep"].get("key", "value")
        out = []
        for p in report["points"]:
            if "report" in p:
                rep = p["report"]
                # A point that ran several presets would nest them; take each.
                if "runs" in rep:
                    for r in rep["runs"]:
                        out.append(("%s=%s %s" % (key, p["value"], policy_of(r)), r))
                else:
                    out.append(("%s=%s" % (key, p["value"]), rep))
        return "sweep", out
    if "runs" in report:
        return "policies", [(policy_of(r), r) for r in report["runs"] if "tps" in r]
    if "tps" in report:
        return "run", [(policy_of(report), report)]
    raise BadReport("not a drtmx-bench report (no tps, runs or points)")


def policy_of(run):
    return run.get("config", {}).get("policy", run.get("policy", "?"))


def numeric(values):
    try:
        return [float(v) for v in values]
    except ValueError:
        return None


def plot_timeline(runs, title, path):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = 0
    for label, run in runs:
        tl = run.get("timeline")
        if not tl or not tl.get("tps"):
            continue
        step = tl["interval_ms"] / 1000.0
        xs = [step * (i + 1) for i in range(len(tl["tps"]))]
        ax.plot(xs, tl["tps"], label=label, linewidth=1.2)
        drawn += 1
    if drawn == 0:
        plt.close(fig)
        return None
    ax.set_xlabel("seconds into the measured run")
    ax.set_ylabel("committed / s")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if drawn > 1:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_bars(runs, title, path):
    labels = [label for label, _ in runs]
    tps = [r["tps"] for _, r in runs]
    p50 = [r.get("p50_us", 0) for _, r in runs]
    p99 = [r.get("p99_us", 0) for _, r in runs]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.5))
    a.bar(labels, tps, color="tab:blue", yerr=error_bars(runs), capsize=4)
    a.set_ylabel("committed / s")
    a.set_title("throughput")
    for i, (t, (_, r)) in enumerate(zip(tps, runs)):
        ratio = r.get("vs_first", t / tps[0] if tps[0] else 0)
        top = r["tps_range"][1] if "tps_range" in r else t
        a.annotate("%.2fx" % ratio, (i, top), ha="center", va="bottom", fontsize="small")
    xs = range(len(labels))
    b.bar([x - 0.2 for x in xs], p50, width=0.4, label="p50")
    b.bar([x + 0.2 for x in xs], p99, width=0.4, label="p99")
    b.set_xticks(list(xs), labels)
    b.set_yscale("log")
    b.set_ylabel("latency, us")
    b.set_title("latency")
    b.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# Sweep keys whose values are quantities with a unit (a delay, a size, a
# share): their distances mean something, so they plot on a linear axis.
QUANTITY_SUFFIXES = ("-ns", "-us", "-ms", "-kb", "-mb", "-pct", "-theta")


def sweep_positions(key, labels):
    """Where each sweep point goes on the x axis, and whether the axis is
    categorical. Counts (coroutines, threads, nodes, replicas: usually 1, 2,
    4, 8) and anything not numeric sit at even steps, labelled with their
    values; quantities with a unit (--fabric-delay-ns, ...) on a linear
    axis."""
    xs = numeric(labels)
    if xs is not None and key.endswith(QUANTITY_SUFFIXES):
        return xs, False
    return list(range(len(labels))), True


def plot_sweep(report, runs, title, path):
    key = report["sweep"].get("key", "value")
    labels = [label.split("=", 1)[1] if "=" in label else label for label, _ in runs]
    positions, categorical = sweep_positions(key, labels)
    tps = [r["tps"] for _, r in runs]
    p50 = [r.get("p50_us", 0) for _, r in runs]
    p99 = [r.get("p99_us", 0) for _, r in runs]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.5))
    a.errorbar(positions, tps, yerr=error_bars(runs), marker="o", capsize=4)
    a.set_xlabel(key)
    a.set_ylabel("committed / s")
    a.set_ylim(bottom=0)
    a.set_title("throughput")
    a.grid(alpha=0.3)
    b.plot(positions, p50, marker="o", label="p50")
    b.plot(positions, p99, marker="s", label="p99")
    b.set_xlabel(key)
    b.set_ylabel("latency, us")
    b.set_yscale("log")
    b.set_title("latency")
    b.grid(alpha=0.3)
    b.legend()
    if categorical:
        for ax in (a, b):
            ax.set_xticks(positions, labels)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_report(path, out_dir):
    try:
        with open(path) as f:
            report = json.load(f)
    except OSError as e:
        raise BadReport("cannot read it: %s" % e.strerror)
    except json.JSONDecodeError as e:
        raise BadReport("not JSON (%s)" % e)
    if not isinstance(report, dict):
        raise BadReport("not a drtmx-bench report (not a JSON object)")
    kind, runs = runs_of(report)
    if not runs:
        raise BadReport("holds no successful run")
    base = os.path.splitext(os.path.basename(path))[0]
    out = out_dir if out_dir else (os.path.dirname(path) or ".")
    cfg = runs[0][1].get("config", {})
    title = "%s, %s nodes x %s threads x %s coroutines" % (
        cfg.get("bench", "?"), cfg.get("nodes", "?"), cfg.get("threads", "?"),
        cfg.get("coroutines", "?"))
    if kind == "sweep":
        title = "%s, --%s swept" % (cfg.get("bench", "?"), report["sweep"].get("key", "?"))
    if report.get("rounds", 1) > 1:
        title += ", medians of %d rounds" % report["rounds"]
    written = []
    if kind == "sweep":
        written.append(plot_sweep(report, runs, title, os.path.join(out, base + "-sweep.png")))
    elif kind == "policies":
        written.append(plot_bars(runs, title, os.path.join(out, base + "-policies.png")))
    tl = plot_timeline(runs, title, os.path.join(out, base + "-timeline.png"))
    if tl:
        written.append(tl)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", help="JSON files written by drtmx-bench --json")
    ap.add_argument("--out", help="directory for the PNG files, created if missing "
                    "(default: beside each report)")
    a = ap.parse_args()
    if a.out:
        if os.path.exists(a.out) and not os.path.isdir(a.out):
            sys.exit("plot.py: --out %s exists and is not a directory" % a.out)
        try:
            os.makedirs(a.out, exist_ok=True)
        except OSError as e:
            sys.exit("plot.py: --out %s: cannot create the directory (%s)" % (a.out, e.strerror))
    failed = False
    for path in a.reports:
        try:
            for w in plot_report(path, a.out):
                print(w)
        except BadReport as e:
            print("plot.py: %s: %s" % (path, e), file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
