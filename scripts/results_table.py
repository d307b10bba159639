#!/usr/bin/python3
"""Prints the summary table of docs/performance.md from the reports in docs/results/.

    scripts/results_table.py [--dir DIR] [--update FILE]

Reads what scripts/results.sh wrote into DIR (default docs/results): the JSON
reports of drtmx-bench, r2-bench, store-bench, rdpma-bench and micro-bench,
silo.txt (scripts/compare-silo.sh's lines), commands.tsv (each step's exact
commands, when and on which code they ran) and machine.txt. Prints markdown:
the machine, the table (each number with its baseline, the ratio and the
command), and the plots found in DIR. With --update FILE it replaces FILE's
block between the lines "<!-- results:begin" and "<!-- results:end -->"
instead, with links relative to FILE.

Medians are over the rounds of a step; a ratio is the median over the rounds
of the ratio within each round (both sides ran in the same round, so the
machine's drift between rounds cancels), with the range of the per-round
ratios in brackets when there were several rounds.
"""

import argparse
import json
import os
import re
import statistics
import sys


class Missing(Exception):
    """A report a row needs is not in the directory."""


def load_json(d, name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        raise Missing(name)
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------------- drtmx-bench


def policy_of(run):
    return run.get("config", {}).get("policy", run.get("policy", "?"))


def rounds_of(report):
    """The report's runs as a list of rounds, each {label: run}: presets of a
    --policy list (runs in the order run, n labels per round) or the points
    of a --sweep (labelled by value, grouped by their "round")."""
    if "points" in report:
        rounds = {}
        for p in report["points"]:
            rounds.setdefault(p.get("round", 1), {})[str(p["value"])] = p.get("report", {})
        return [rounds[k] for k in sorted(rounds)]
    runs = report.get("runs")
    if runs is None:
        return [{policy_of(report): report}]
    if "summary" in report:
        n = len(report["summary"])
    else:
        n = len(runs)
    return [{policy_of(r): r for r in runs[i:i + n]} for i in range(0, len(runs), n)]


def tps_of(rounds, label):
    vals = [r[label]["tps"] for r in rounds if label in r and "tps" in r[label]]
    if not vals:
        raise Missing("a successful run of %s" % label)
    return statistics.median(vals)


def ratio_of(rounds, a, b):
    """Median and range of the per-round ratios tps(a) / tps(b)."""
    vals = [r[a]["tps"] / r[b]["tps"] for r in rounds
            if a in r and b in r and "tps" in r[a] and r[b].get("tps")]
    if not vals:
        raise Missing("a round with both %s and %s" % (a, b))
    return statistics.median(vals), min(vals), max(vals), len(vals)


def fmt_ratio(r):
    med, lo, hi, n = r
    if n > 1:
        return "**%.2fx** (%.2f-%.2f)" % (med, lo, hi)
    return "**%.2fx**" % med


def num(x):
    """391460.3 -> '391 460'."""
    return "{:,}".format(int(round(x))).replace(",", " ")


def rate(label, rounds, key=None):
    return "%s %s/s" % (label, num(tps_of(rounds, key or label)))


def ro_aborts(rounds, label):
    """Aborted attempts of the read-only types under label, summed over rounds."""
    total = 0
    for r in rounds:
        run = r.get(label, {})
        for t, n in run.get("per_type_aborts", {}).items():
            if t in ("Balance", "Audit", "OrderStatus", "StockLevel", "Order-Status", "Stock-Level",
                     "BrokerVolume", "CustomerPosition", "MarketWatch", "SecurityDetail",
                     "TradeLookup", "TradeStatus") or "read-only" in t:
                total += n
    return total


def type_abort_pct(rounds, label, typename):
    """Median over rounds of the share of typename's attempts that aborted."""
    vals = []
    for r in rounds:
        run = r.get(label)
        if not run:
            continue
        secs = run.get("config", {}).get("seconds", 0)
        key = next((k for k in run.get("per_type", {}) if typename in k.replace("-", "")), None)
        if key is None or not secs:
            continue
        committed = run["per_type"][key] * secs
        aborted = run.get("per_type_aborts", {}).get(key, 0)
        if committed + aborted > 0:
            vals.append(100.0 * aborted / (committed + aborted))
    return statistics.median(vals) if vals else None


# -------------------------------------------------------------------- the rows


def rows_presets(d, bench, step, what):
    rounds = rounds_of(load_json(d, step + ".json"))
    out = []
    for base, system in (("fasst", "FaSST"), ("farm", "FaRM"), ("drtm-r", "DrTM+R")):
        out.append(("%s: drtmh (DrTM+H) against %s (%s)" % (what, base, system),
                    rate("drtmh", rounds), rate(base, rounds),
                    fmt_ratio(ratio_of(rounds, "drtmh", base))))
    out.append(("%s: drtmx (DrTM+X) against drtmh" % what,
                rate("drtmx", rounds), rate("drtmh", rounds),
                fmt_ratio(ratio_of(rounds, "drtmx", "drtmh"))))
    return out


def rows_pair(d, step, what, a, b, extra=None):
    rounds = rounds_of(load_json(d, step + ".json"))
    measured = rate(a, rounds)
    if extra:
        measured += extra(rounds)
    return [(what, measured, rate(b, rounds), fmt_ratio(ratio_of(rounds, a, b)))]


def rows_sweep_pair(d, step, what, a, b, name):
    rounds = rounds_of(load_json(d, step + ".json"))
    return [(what, "%s %s/s" % (name(a), num(tps_of(rounds, a))),
             "%s %s/s" % (name(b), num(tps_of(rounds, b))), fmt_ratio(ratio_of(rounds, a, b)))]


def rows_districts(d):
    rounds = rounds_of(load_json(d, "tpcc-districts20.json"))
    sl = type_abort_pct(rounds, "drtmh", "StockLevel")
    note = "; read-only aborts %d" % ro_aborts(rounds, "drtmx")
    base = rate("drtmh", rounds)
    if sl is not None:
        base += " (%.0f %% of its Stock-Level attempts abort)" % sl
    return [
        ("TPC-C, 3 nodes, Stock-Level over 20 districts: drtmx (DST snapshots) against drtmh (OCC)",
         rate("drtmx", rounds) + note, base, fmt_ratio(ratio_of(rounds, "drtmx", "drtmh"))),
        ("the same: DST against the centralized timestamp oracle (drtmx-gts)",
         rate("drtmx", rounds), rate("drtmx-gts", rounds),
         fmt_ratio(ratio_of(rounds, "drtmx", "drtmx-gts"))),
    ]


def rows_tpce(d):
    return rows_pair(d, "tpce", "TPC-E, 3 nodes: drtmx against drtmh", "drtmx", "drtmh",
                     lambda rounds: "; read-only aborts %d" % ro_aborts(rounds, "drtmx"))


def rows_recovery(d):
    rep = load_json(d, "recovery.json")
    rec = rep["durability"]["recovery"]
    chk = rep["durability"].get("recovery_check", {})
    return [("SmallBank, 3 nodes, durable: restart after every node was SIGKILLed",
             "serving again after %.0f ms (rebuild %.0f + log replay %.0f ms); %s acknowledged "
             "commits verified, recovery check %s" % (
                 rec["serve_ms"], rec["rebuild_ms"], rec["log_replay_ms"],
                 num(chk.get("acknowledged_verified", 0)), chk.get("status", "?")),
             "—", "—")]


def rows_failover(d, step, what):
    runs = []
    i = 1
    while os.path.exists(os.path.join(d, "%s-r%d.json" % (step, i))):
        runs.append(load_json(d, "%s-r%d.json" % (step, i))["failover"])
        i += 1
    if not runs:
        raise Missing(step + "-r1.json")

    def med(k):
        return statistics.median(r[k] for r in runs if r.get(k) is not None)

    def span(k):
        vals = sorted(r[k] for r in runs if r.get(k) is not None and r[k] >= 0)
        if not vals:
            return None
        return num(vals[0]) if vals[0] == vals[-1] else "%s-%s" % (num(vals[0]), num(vals[-1]))

    lowest = span("min_tps")
    during = span("reconfiguring_tps")
    return [(what,
             "detected after %.0f ms, every partition served after %.0f ms, back to 80 %% of the "
             "survivors' rate after %.0f ms%s%s%s" % (
                 med("detect_ms"), med("serving_ms"), med("back_to_80pct_ms"),
                 "; lowest 10-ms interval %s/s" % lowest if lowest else "",
                 "; %s/s while reconfiguring" % during if during else "",
                 " (median of %d runs)" % len(runs) if len(runs) > 1 else ""),
             "survivors' rate before %s/s" % span("before_tps"), "—")]


def rows_one_node(d):
    rounds = rounds_of(load_json(d, "tpcc-one-node.json"))
    return [("TPC-C, one node, one worker, one warehouse: 8 coroutines against 1",
             "8 coroutines %s/s (2: %s/s)" % (num(tps_of(rounds, "8")), num(tps_of(rounds, "2"))),
             "1 coroutine %s/s" % num(tps_of(rounds, "1")), fmt_ratio(ratio_of(rounds, "8", "1")))]


def rows_silo(d):
    path = os.path.join(d, "silo.txt")
    if not os.path.exists(path):
        raise Missing("it needs scripts/results.sh --silo=PATH/dbtest, see Against Silo")
    pairs = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("pair "):
                continue
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            pairs.setdefault(kv["coroutines"], []).append(
                (float(kv["drtmx"]), float(kv["silo"]), float(kv["ratio"])))
    out = []
    for c in sorted(pairs, key=int):
        p = pairs[c]
        rs = [x[2] for x in p]
        out.append(("TPC-C, one node, one worker, one warehouse: drtmx (%s coroutine%s) against Silo"
                    % (c, "" if c == "1" else "s"),
                    "drtmx %s/s" % num(statistics.median(x[0] for x in p)),
                    "Silo %s/s" % num(statistics.median(x[1] for x in p)),
                    fmt_ratio((statistics.median(rs), min(rs), max(rs), len(rs)))))
    if not out:
        raise Missing("pair lines in silo.txt")
    return out


def rows_r2(d):
    rep = load_json(d, "r2.json")
    ex = {e["name"]: e for e in rep["experiments"]}
    ratios = rep["ratios"]

    def mops(name):
        e = ex[name]
        return "%.2f Mops/s, p50 %.2f us" % (e["mops"], e["p50_us"])

    return [
        ("r2-bench, 2 nodes, 8 coroutines: one-sided READ against RPC echo, 64 B",
         "READ " + mops("fig2-4 read 64B"), "RPC " + mops("fig2-4 rpc 64B"),
         "**%.2fx**" % ratios["one-sided READ / RPC, 64B"]),
        ("the same: one-sided WRITE against RPC echo, 64 B",
         "WRITE " + mops("fig2-4 write 64B"), "RPC " + mops("fig2-4 rpc 64B"),
         "**%.2fx**" % ratios["one-sided WRITE / RPC, 64B"]),
        ("the same, 2 us fabric delay: 8 coroutines against 1 (READ)",
         "8: " + mops("co=8 read delay=2us"), "1: " + mops("co=1 read delay=2us"),
         "**%.2fx**" % ratios["CO: 8 vs 1, READ, 2us delay"]),
    ]


def rows_store(d, table, what):
    reps = []
    i = 1
    while os.path.exists(os.path.join(d, "store-%s-r%d.json" % (table, i))):
        reps.append(load_json(d, "store-%s-r%d.json" % (table, i)))
        i += 1
    if not reps:
        raise Missing("store-%s-r1.json" % table)

    def path(rep, name):
        return next(p for p in rep["paths"] if p["path"] == name)

    one = statistics.median(path(r, "onesided")["mops"] for r in reps)
    rpc = statistics.median(path(r, "rpc")["mops"] for r in reps)
    reads = statistics.median(path(r, "onesided")["reads_per_get"] for r in reps)
    sp = [r["speedup"] for r in reps]
    return [(what, "one-sided %.2f Mops/s, %.2f READs per GET" % (one, reads),
             "RPC %.2f Mops/s" % rpc, fmt_ratio((statistics.median(sp), min(sp), max(sp), len(sp))))]


def rows_rdpma(d):
    rep = load_json(d, "rdpma.json")
    run = next((r for r in rep["runs"] if r.get("delay_ns") == 2000), rep["runs"][0])
    ex = run["experiments"]

    def span(v, fmt):
        lo, hi = fmt % min(v), fmt % max(v)
        return lo if lo == hi else "%s-%s" % (lo, hi)

    def p50(method):
        return span([e["p50_us"] for e in ex if e["method"] == method], "%.2f") + " us"

    def ratios(prefix):
        return "**%sx**" % span([r["value"] for r in run["ratios"] if r["name"].startswith(prefix)],
                                "%.2f")

    payloads = sorted({e["payload"] for e in ex})
    sizes = "%d B-%d %s" % (payloads[0], payloads[-1] if payloads[-1] < 1024 else payloads[-1] // 1024,
                            "B" if payloads[-1] < 1024 else "KiB")
    return [
        ("rdpma-bench, 2 nodes, 1 coroutine, 2 us delay: persistent WRITE by H9 (WRITE + flushing "
         "READ, one doorbell) against the strawman (two round trips), %s" % sizes,
         "H9 p50 " + p50("h9"), "strawman p50 " + p50("strawman"),
         ratios("h9/strawman throughput") + " throughput"),
        ("the same: H9 against two-sided (the owner's CPU persists)",
         "H9 p50 " + p50("h9"), "two-sided p50 " + p50("two-sided"),
         ratios("h9/two-sided throughput") + " throughput"),
    ]


def rows_micro(d):
    rep = load_json(d, "micro.json")
    b = {x["name"]: x for x in rep["benchmarks"]}

    def ns(name):
        x = b[name]
        scale = {"ns": 1, "us": 1e3, "ms": 1e6}.get(x.get("time_unit", "ns"), 1)
        return x["real_time"] * scale

    one, hinted = ns("BM_LocationCacheGet/300000/0"), ns("BM_LocationCacheGet/300000/1")
    return [
        ("micro-bench: 16 location-cache lookups (64 MiB cache), keys hinted first against one at a time",
         "hinted %s ns" % num(hinted), "one at a time %s ns" % num(one),
         "**%.2fx** faster" % (one / hinted)),
        ("micro-bench: the GTS oracle's issue + install (the drtmx-gts baseline's central step)",
         "%.1f ns" % ns("BM_GtsOracleIssueInstall"), "—", "—"),
    ]


def names(v):
    return {"off": "durability off", "pmem": "pmem"}.get(v, v)


# (step, rows function, the command filter): in the order of the table.
ROWS = [
    ("smallbank-presets", lambda d: rows_presets(d, "smallbank", "smallbank-presets",
                                                 "SmallBank, 3 nodes"), None),
    ("smallbank-delay", lambda d: rows_pair(
        d, "smallbank-delay", "SmallBank, 3 nodes, 3 us fabric delay: drtmx against drtmh",
        "drtmx", "drtmh"), None),
    ("tpcc-presets", lambda d: rows_presets(d, "tpcc", "tpcc-presets", "TPC-C, 3 nodes"), None),
    ("tpcc-districts20", rows_districts, None),
    ("tpce", rows_tpce, None),
    ("smallbank-durability", lambda d: rows_sweep_pair(
        d, "smallbank-durability", "SmallBank, 3 nodes: durable (pools in /dev/shm) against volatile",
        "pmem", "off", names), None),
    ("tpcc-durability", lambda d: rows_sweep_pair(
        d, "tpcc-durability", "TPC-C, 3 nodes: durable against volatile", "pmem", "off", names), None),
    ("recovery", rows_recovery, None),
    ("failover-smallbank", lambda d: rows_failover(
        d, "failover-smallbank", "SmallBank, 3 nodes: failover after node 2 is SIGKILLed"), None),
    ("failover-tpcc", lambda d: rows_failover(
        d, "failover-tpcc", "TPC-C, 3 nodes: failover after node 2 is SIGKILLed"), None),
    ("tpcc-replicas", lambda d: rows_sweep_pair(
        d, "tpcc-replicas", "TPC-C, 3 nodes on 2 cores: 3 copies of each partition against 1",
        "3", "1", lambda v: "replicas %s" % v), None),
    ("tpcc-one-node", rows_one_node, None),
    ("silo", rows_silo, None),
    ("r2", rows_r2, None),
    ("store", lambda d: rows_store(
        d, "hash", "store-bench, 2 nodes, YCSB-C uniform, 1 M keys, hash table: one-sided GET "
        "against RPC"), "--table=hash"),
    ("store", lambda d: rows_store(d, "ordered", "the same, ordered table (XStore)"), "--table=ordered"),
    ("rdpma", rows_rdpma, None),
    ("micro", rows_micro, None),
]

PLOTS = [
    ("smallbank-presets-policies.png", "SmallBank, 3 nodes: the presets (medians, range of the rounds)"),
    ("tpcc-presets-policies.png", "TPC-C, 3 nodes: the presets"),
    ("tpcc-districts20-policies.png", "TPC-C, Stock-Level over 20 districts: OCC, DST, GTS"),
    ("tpce-policies.png", "TPC-E, 3 nodes: drtmh and drtmx"),
    ("smallbank-durability-sweep.png", "SmallBank: durability off and pmem"),
    ("tpcc-durability-sweep.png", "TPC-C: durability off and pmem"),
    ("tpcc-replicas-sweep.png", "TPC-C on 2 cores: 1, 2 and 3 copies of each partition"),
    ("tpcc-one-node-sweep.png", "TPC-C on one node: 1, 2 and 8 coroutines"),
    ("failover-smallbank-r1-timeline.png", "SmallBank: committed/s through a failover (node 2 killed half-way)"),
    ("failover-tpcc-r1-timeline.png", "TPC-C: committed/s through a failover"),
]


# ------------------------------------------------------------------ commands


def read_commands(d):
    """step -> [(utc, commit, seconds, command)] from commands.tsv."""
    out = {}
    path = os.path.join(d, "commands.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 5:
                    out.setdefault(parts[0], []).append(tuple(parts[1:]))
    return out


def command_cell(cmds, step, match, latest_commit, prefix):
    lines = [c for c in cmds.get(step, []) if match is None or match in c[3]]
    if not lines:
        return "scripts/results.sh --only=%s" % step
    shown = []
    for _, _, _, c in lines:
        if shown and shown[-1][0] == c:
            shown[-1][1] += 1
        else:
            shown.append([c, 1])
    text = "; then ".join("`%s`%s" % (c, " (%d runs)" % n if n > 1 else "") for c, n in shown)
    when, commit = lines[0][0], lines[0][1]
    if commit != latest_commit:
        text += " (an earlier run: %s, %s)" % (when, commit)
    return text


def machine(d):
    m = {}
    path = os.path.join(d, "machine.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    m[k.strip()] = v.strip()
    return m


def render(d, prefix):
    cmds = read_commands(d)
    all_lines = [c for v in cmds.values() for c in v]
    latest = max(all_lines, key=lambda c: c[0])[1] if all_lines else "?"
    m = machine(d)
    out = []
    if all_lines:
        first = min(c[0] for c in all_lines)
        last = max(c[0] for c in all_lines)
        took = sum(int(c[2]) for c in all_lines if c[2].isdigit())
        out.append("Measured by `scripts/results.sh` (%s mode: %s) from %s to %s on code %s; its commands "
                   "ran %d min. Machine: %s, %s, Linux %s, `/dev/shm` huge=%s, transparent huge pages %s; "
                   "load average %s at the start." % (
                       m.get("mode", "?").split(",")[0], ", ".join(m.get("mode", "").split(", ")[1:]),
                       first, last, latest, (took + 30) // 60, m.get("cpu", "?"), m.get("memory", "?"),
                       m.get("kernel", "?"), m.get("dev_shm_huge", "?"),
                       m.get("transparent_hugepage", "?"), m.get("load_average_at_start", "?")))
        out.append("")
    out.append("| benchmark | result (median) | baseline (median) | ratio | command |")
    out.append("|---|---|---|---|---|")
    missing = []
    for step, fn, match in ROWS:
        try:
            rows = fn(d)
        except Missing as e:
            missing.append("%s (%s)" % (step, str(e).strip("'\"")))
            continue
        except (KeyError, ValueError, ZeroDivisionError, StopIteration, TypeError) as e:
            sys.exit("results_table.py: the %s report in %s is not what this script reads: %r"
                     % (step, d, e))
        for i, (what, measured, base, ratio) in enumerate(rows):
            cmd = command_cell(cmds, step, match, latest, prefix) if i == 0 else "the same run"
            out.append("| %s | %s | %s | %s | %s |" % (what, measured, base, ratio, cmd))
    out.append("")
    out.append("Ratios are result over baseline, the median of the per-round ratios (the range over "
               "the rounds in brackets). Each drtmx-bench, r2-bench, store-bench and rdpma-bench "
               "command also had `--json=` naming its report in %s, and micro-bench "
               "`--benchmark_out=`." % ("`%s`" % prefix if prefix else "this directory"))
    if missing:
        out.append("")
        out.append("Not in this table (no report yet): " + "; ".join(missing) + ".")
    pngs = [(f, cap) for f, cap in PLOTS if os.path.exists(os.path.join(d, f))]
    if pngs:
        out.append("")
        for f, cap in pngs:
            out.append("![%s](%s%s)" % (f, prefix, f))
            out.append("")
            out.append("*%s*" % cap)
            out.append("")
        while out and out[-1] == "":
            out.pop()
    return "\n".join(out) + "\n"


def update(path, block):
    with open(path) as f:
        text = f.read()
    m = re.search(r"(<!-- results:begin[^\n]*-->\n)(.*?)(<!-- results:end -->)", text, re.S)
    if not m:
        sys.exit("results_table.py: %s has no <!-- results:begin ... --> / <!-- results:end --> "
                 "lines to replace between" % path)
    text = text[:m.start(2)] + block + text[m.end(2):]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="docs/results", help="the reports (default docs/results)")
    ap.add_argument("--update", metavar="FILE",
                    help="replace FILE's generated block instead of printing the table")
    a = ap.parse_args()
    if not os.path.isdir(a.dir):
        sys.exit("results_table.py: %s is not a directory (scripts/results.sh writes it)" % a.dir)
    if a.update:
        rel = os.path.relpath(a.dir, os.path.dirname(os.path.abspath(a.update)) or ".")
        update(a.update, render(a.dir, rel.rstrip("/") + "/"))
    else:
        sys.stdout.write(render(a.dir, ""))


if __name__ == "__main__":
    main()
