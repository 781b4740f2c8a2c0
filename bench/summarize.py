#!/usr/bin/env python3
"""Bookkeeping and tables of the bench scripts (python3 stdlib only).

  summarize.py record JSONL [--loadgen-json FILE] [--recv-kind K --recv-log LOG]
                            [--bench-txt FILE] [key=value ...]
      append one run to JSONL: loadgen's --json object, what the receiver's log
      says it received (and seccheckd's loop figures), and the key=value extras
      (numbers become numbers). With --bench-txt, also append loadgen's Go
      benchmark line (rebuilt from the JSON in loadgen's exact format, plus the
      receiver's CPU cost when cpu_s is given) so benchstat can compare files.
  summarize.py ipc OUT         table of bench/ipc.sh runs (OUT/runs.jsonl)
  summarize.py zero-drop OUT   table of bench/zero_drop.sh (OUT/probes.jsonl, OUT/search.jsonl)
  summarize.py macro OUT       table of bench/macro.sh runs (OUT/runs.jsonl)
  summarize.py docker-redis OUT  table of bench/docker_redis.sh runs (OUT/runs.jsonl)
  summarize.py log KIND LOG    print what a receiver's log says (debugging)

The table commands print the table and write OUT/summary.md (table + machine
info from OUT/machine.txt).
"""
import json
import os
import re
import statistics
import sys

RECEIVERS = ["ref", "dummy", "discard", "sqlite", "sqlite-all", "sqlite+forward", "python"]
RECEIVER_DESC = {
    "ref": "ref-recvmmsg: epoll + recvmmsg discard loop (the physical limit)",
    "dummy": "seccheck-dummy: seccheckd's receive path, count and discard",
    "discard": "seccheckd --sink discard: receive + full decode, nothing stored",
    "sqlite": "seccheckd --sink sqlite: receive + decode + store (fresh DB per run)",
    "sqlite-all": "seccheckd --sink sqlite --indexes all: as sqlite, with all four indexes",
    "sqlite+forward": "as sqlite, with `seccheckd forward` shipping the database to PostgreSQL beside it",
    "python": "dummy/dummy_uds_server.py: gVisor's Python baseline, thread per connection",
}


# ---------------------------------------------------------------- receivers' logs

def base_kind(kind):
    """"sqlite@base" (the same receiver from another build: --base-bin, --alt) -> "sqlite"."""
    return kind.split("@", 1)[0]


def receiver_order(present):
    """Known receivers in RECEIVERS order, each followed by its @base twin."""
    def key(r):
        k = base_kind(r)
        return (RECEIVERS.index(k) if k in RECEIVERS else len(RECEIVERS), k, r != k, r)
    return sorted(present, key=key)


def parse_log(kind, text):
    """What a receiver reports at exit: received, sandbox_dropped, and for
    seccheckd its loop figures. Missing values are None."""
    kind = base_kind(kind)
    r = {"received": None, "sandbox_dropped": None, "recv_connections": None}
    if kind in ("ref", "dummy", "python"):
        m = None
        for m in re.finditer(r"^total: (\d+) connections?, (\d+) messages?, (\d+) bytes?"
                             r"(?:, (\d+) dropped by the sandbox)?", text, re.M):
            pass
        if m:
            r["recv_connections"] = int(m.group(1))
            r["received"] = int(m.group(2))
            if m.group(4) is not None:
                r["sandbox_dropped"] = int(m.group(4))
    else:   # seccheckd (discard, sqlite, sqlite-all)
        m = re.search(r"summary: (\d+) received", text)
        if m:
            r["received"] = int(m.group(1))
        m = re.search(r"sandbox-reported drops (\d+)", text)
        if m:
            r["sandbox_dropped"] = int(m.group(1))
        m = re.search(r"summary: connections (\d+)", text)
        if m:
            r["recv_connections"] = int(m.group(1))
        m = re.search(r"loop turns (\d+), longest ([\d.]+) ms, longest stall \(not reading\) ([\d.]+) ms, "
                      r"stalls over 1 ms: (\d+); in turns not preempted \((\d+) were\) longest stall ([\d.]+) ms, "
                      r"over 1 ms: (\d+)", text)
        if m:
            r["loop_turns"] = int(m.group(1))
            r["longest_turn_ms"] = float(m.group(2))
            r["longest_stall_ms"] = float(m.group(3))
            r["stalls_over_1ms"] = int(m.group(4))
            r["preempted_turns"] = int(m.group(5))
            r["longest_own_stall_ms"] = float(m.group(6))
            r["own_stalls_over_1ms"] = int(m.group(7))
    return r


def procs():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def bench_line(lg, extra):
    """loadgen's Go benchmark line (loadgen/report.c's format), rebuilt from its
    --json object, plus the receiver's CPU cost as an extra benchstat unit."""
    p = procs()
    name = lg["bench_name"] + ("-%d" % p if p != 1 else "")
    line = "%s\t%d\t%.1f ns/op\t%.0f msgs/s\t%.2f MB/s\t%.3f drop%%" % (
        name, lg["sent"], lg["ns_per_op"], lg["msgs_per_s"], lg["mb_per_s"], lg["drop_pct"])
    if extra.get("cpu_s") is not None and extra.get("received"):
        line += "\t%.4f recv-cpu-s/Mmsg" % (extra["cpu_s"] / extra["received"] * 1e6)
    return line


def zero_drop_verdict(rec):
    """A paced probe passes when nothing was dropped, the receiver counted all
    that was sent, and loadgen really offered the target rate (within 5%)."""
    if rec.get("error"):
        return "fail", "error"
    if rec.get("dropped"):
        return "fail", "drops"
    if rec.get("received") is not None and rec["received"] != rec["sent"]:
        return "fail", "received != sent"
    target = rec.get("rate", 0) * rec.get("conns", 1)
    offered = (rec["sent"] + rec["dropped"]) / rec["seconds"] if rec.get("seconds") else 0
    rec["offered_total"] = round(offered, 1)
    if target and offered < 0.95 * target:
        return "fail", "rate not reached"
    return "ok", ""


def convert(v):
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


def cmd_record(args):
    jsonl = args.pop(0)
    rec, bench_txt, kind, log, check = {}, None, None, None, False
    lg, lg_given = None, False
    while args:
        a = args.pop(0)
        if a == "--loadgen-json":
            lg_given = True
            path = args.pop(0)
            try:
                with open(path) as f:
                    text = f.read().strip()
                lg = json.loads(text.splitlines()[-1]) if text else None
            except (OSError, ValueError, IndexError):
                lg = None
        elif a == "--recv-kind":
            kind = args.pop(0)
        elif a == "--recv-log":
            log = args.pop(0)
        elif a == "--bench-txt":
            bench_txt = args.pop(0)
        elif a == "--check-zero-drop":
            check = True
        elif "=" in a:
            k, v = a.split("=", 1)
            rec[k] = convert(v)
        else:
            sys.exit("record: bad argument %r" % a)
    if lg is not None:
        for k in ("sent", "dropped", "bytes", "seconds", "msgs_per_s", "mb_per_s", "drop_pct",
                  "ns_per_op", "errors", "interrupted", "bench_name"):
            rec[k] = lg.get(k)
    elif lg_given and "error" not in rec:
        rec["error"] = "no loadgen result"
    if kind and log:
        try:
            with open(log, errors="replace") as f:
                rec.update(parse_log(kind, f.read()))
        except OSError:
            pass
    if "cpu_ticks" in rec and "clk_tck" in rec:
        rec["cpu_s"] = rec["cpu_ticks"] / rec["clk_tck"]
    if rec.get("db_bytes") and rec.get("db_rows"):
        rec["db_bytes_per_event"] = rec["db_bytes"] / rec["db_rows"]
    if check:
        rec["verdict"], rec["reason"] = zero_drop_verdict(rec)
        print(rec["verdict"] if rec["verdict"] == "ok" else "fail " + rec["reason"])
    with open(jsonl, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")
    if bench_txt and lg is not None and not rec.get("error"):
        with open(bench_txt, "a") as f:
            f.write(bench_line(lg, rec) + "\n")
    # A one-line account of the run for the console.
    parts = ["%s=%s" % (k, rec[k]) for k in ("workload", "receiver", "pass", "mode", "conns", "rate") if k in rec]
    if rec.get("value") is not None:
        parts.append("%s %s" % (fmt_num(rec["value"]), rec.get("unit", "")))
    if lg is not None:
        parts.append("sent %d dropped %d (%.2f%%) %.0f msgs/s" % (lg["sent"], lg["dropped"], lg["drop_pct"],
                                                                   lg["msgs_per_s"]))
    if rec.get("received") is not None:
        parts.append("received %d" % rec["received"])
    if rec.get("sandbox_dropped") and lg is None:
        parts.append("sandbox dropped %d" % rec["sandbox_dropped"])
    if rec.get("cpu_s") is not None:
        parts.append("cpu %.2fs" % rec["cpu_s"])
    if rec.get("db_bytes_per_event") is not None:
        parts.append("db %.0f B/event" % rec["db_bytes_per_event"])
    if rec.get("longest_stall_ms") is not None:
        parts.append("stall %.1fms" % rec["longest_stall_ms"])
        if rec.get("longest_own_stall_ms") is not None:
            parts.append("(own %.2fms)" % rec["longest_own_stall_ms"])
    if rec.get("verdict"):
        parts.append(rec["verdict"] + (" (%s)" % rec["reason"] if rec["reason"] else ""))
    if rec.get("error"):
        parts.append("ERROR: %s" % rec["error"])
    print("  " + " ".join(parts), file=sys.stderr)


# ---------------------------------------------------------------- helpers

def load_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt_num(x, digits=0):
    if x is None:
        return "-"
    if digits == 0:
        return "{:,.0f}".format(x)
    return "{:,.{d}f}".format(x, d=digits)


def fmt_ratio(x):
    return "-" if x is None else "%.3f" % x


def fmt_x(x):
    return "-" if x is None else "x%.2f" % x


def table(headers, rows, align=None):
    """Plain-text table (columns padded) and the same as a Markdown table."""
    align = align or ["l"] + ["r"] * (len(headers) - 1)
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]

    def cell(s, i):
        return str(s).ljust(widths[i]) if align[i] == "l" else str(s).rjust(widths[i])

    text = ["  ".join(cell(h, i) for i, h in enumerate(headers)).rstrip()]
    text.append("  ".join("-" * w for w in widths))
    text += ["  ".join(cell(c, i) for i, c in enumerate(r)).rstrip() for r in rows]
    md = ["| " + " | ".join(str(h) for h in headers) + " |",
          "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    md += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(text), "\n".join(md)


def machine_md(out):
    try:
        with open(os.path.join(out, "machine.txt")) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
    except OSError:
        return ""
    return "## Machine\n\n" + "\n".join("- " + l for l in lines) + "\n"


def write_summary(out, title, md_parts):
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("# " + title + "\n\n")
        f.write("\n\n".join(md_parts).rstrip() + "\n\n")
        f.write(machine_md(out))


def ratio(runs_a, runs_b, key):
    """Median of a's runs over median of b's runs: both measured in the same
    invocation, interleaved, so slow drift of the machine hits both alike."""
    a, b = med([r.get(key) for r in runs_a]), med([r.get(key) for r in runs_b])
    return a / b if a is not None and b else None


def ordered(present, order):
    return [x for x in order if x in present] + sorted(x for x in present if x not in order)


# ---------------------------------------------------------------- ipc

def cmd_ipc(out):
    runs = [r for r in load_jsonl(os.path.join(out, "runs.jsonl"))]
    good = [r for r in runs if not r.get("error")]
    errors = [r for r in runs if r.get("error")]
    for r in good:
        if r.get("cpu_s") is not None and r.get("received"):
            r["cpu_per_m"] = r["cpu_s"] / r["received"] * 1e6
    traces = ordered({r["trace"] for r in good}, ["redis_rw", "mixed_syscalls"])
    receivers = receiver_order({r["receiver"] for r in good})
    texts, mds = [], []
    nruns = max([r["rep"] for r in runs] + [0]) + 1 if runs else 0
    for trace in traces:
        rows, head_rows = [], []
        keys = sorted({(r["mode"], r["conns"]) for r in good if r["trace"] == trace},
                      key=lambda k: (["block", "sentry"].index(k[0]) if k[0] in ("block", "sentry") else 9, k[1]))
        for mode, conns in keys:
            sel = {rc: [r for r in good if r["trace"] == trace and r["mode"] == mode and r["conns"] == conns
                        and r["receiver"] == rc] for rc in receivers}
            for rc in receivers:
                rs = sel[rc]
                if not rs:
                    continue
                rates = [r["msgs_per_s"] for r in rs]
                lost = sum((r["sent"] - r["received"]) for r in rs if r.get("received") is not None)
                unknown = sum(1 for r in rs if r.get("received") is None)
                if unknown:
                    rs_note = "?"
                elif lost == 0:
                    rs_note = "all"
                else:
                    rs_note = "%+d" % (-lost)
                rows.append([mode, conns, rc, fmt_num(med(rates)),
                             "%s-%s" % (fmt_num(min(rates)), fmt_num(max(rates))),
                             fmt_ratio(ratio(rs, sel.get("ref", []), "msgs_per_s")) if sel.get("ref") else "-",
                             fmt_num(med([r["sent"] for r in rs])),
                             fmt_num(med([r.get("received") for r in rs])), rs_note,
                             fmt_num(med([r["drop_pct"] for r in rs]), 2) if mode == "sentry" else "-",
                             fmt_num(med([r.get("cpu_per_m") for r in rs]), 3),
                             fmt_num(med([r.get("db_bytes_per_event") for r in rs])),
                             len(rs)])
            d, p = sel.get("dummy"), sel.get("python")
            hr = [mode, conns]
            hr.append(fmt_x(ratio(d, p, "msgs_per_s")) if d and p else "-")
            hr.append(fmt_num(med([r["drop_pct"] for r in d]), 2) if d and mode == "sentry" else "-")
            hr.append(fmt_num(med([r["drop_pct"] for r in p]), 2) if p and mode == "sentry" else "-")
            for rc in ("discard", "sqlite"):
                s = sel.get(rc)
                hr.append(fmt_ratio(ratio(s, sel["ref"], "msgs_per_s")) if s and sel.get("ref") else "-")
            head_rows.append(hr)
        headers = ["mode", "conns", "receiver", "msgs/s (median)", "min-max", "vs ref", "sent (median)",
                   "received (median)", "received=sent", "drop %", "recv CPU s/M msgs", "DB bytes/event", "runs"]
        t, m = table(headers, rows, ["l", "r", "l"] + ["r"] * 10)
        title = "IPC export, trace %s: median over %d interleaved runs" % (trace, nruns)
        texts.append(title + "\n\n" + t)
        mds.append("## " + title + "\n\n" + m)
        h_headers = ["mode", "conns", "dummy/python msgs/s", "dummy drop %", "python drop %",
                     "discard/ref", "sqlite/ref"]
        t, m = table(h_headers, head_rows, ["l", "r"] + ["r"] * 5)
        title = "Headline ratios, trace %s (ratios of medians)" % trace
        texts.append(title + "\n\n" + t)
        mds.append("## " + title + "\n\n" + m)
    notes = ("msgs/s: messages delivered per second of loadgen wall time (block: the receiver's drain rate; "
             "sentry: what got through unpaced, the rest was dropped at the sender). vs ref, ratios: ratio of "
             "the medians above, measured in this same interleaved invocation. received=sent: 'all' when every run's "
             "receiver counted exactly what loadgen sent, else the total difference. recv CPU s/M msgs: "
             "receiver utime+stime during the run per million messages received. DB bytes/event: the "
             "database file after a TRUNCATE checkpoint (WAL folded in) over its events rows.")
    legend = "\n".join("- %s: %s%s" % (k, RECEIVER_DESC[base_kind(k)], " (the build of --alt/--base-bin %s)" % k.split("@", 1)[1] if "@" in k else "")
                       for k in receivers if base_kind(k) in RECEIVER_DESC)
    if errors:
        err = "Failed runs (left out): " + "; ".join(
            "%s %s c%s rep %s: %s" % (r.get("receiver"), r.get("mode"), r.get("conns"), r.get("rep"), r["error"])
            for r in errors)
        texts.append(err)
        mds.append(err)
    print("\n\n".join(texts))
    print()
    print(notes)
    write_summary(out, "seccheckd IPC export benchmark (bench/ipc.sh)",
                  mds + [notes, "Receivers:\n\n" + legend,
                         "benchstat files: " + ", ".join("`%s.txt`" % r for r in receivers) +
                         " (e.g. `benchstat python.txt dummy.txt`)"])


# ---------------------------------------------------------------- zero drop

def cmd_zero_drop(out):
    probes = load_jsonl(os.path.join(out, "probes.jsonl"))
    search = {s["receiver"]: s for s in load_jsonl(os.path.join(out, "search.jsonl"))}
    receivers = receiver_order(set(search) | {p["receiver"] for p in probes})
    conns = next((p["conns"] for p in probes), 8)
    ref_best = search.get("ref", {}).get("best_total")
    rows = []
    for rc in receivers:
        s = search.get(rc, {})
        best = s.get("best_total")
        ps = [p for p in probes if p["receiver"] == rc]
        at_best = [p for p in ps if best and p["rate"] * p["conns"] == best and p.get("verdict") == "ok"]
        stall_best = max([p["longest_stall_ms"] for p in at_best if p.get("longest_stall_ms") is not None],
                         default=None)
        stall_all = max([p["longest_stall_ms"] for p in ps if p.get("longest_stall_ms") is not None], default=None)
        over1 = max([p["stalls_over_1ms"] for p in at_best if p.get("stalls_over_1ms") is not None], default=None)
        own_best = max([p["longest_own_stall_ms"] for p in at_best if p.get("longest_own_stall_ms") is not None],
                       default=None)
        own_all = max([p["longest_own_stall_ms"] for p in ps if p.get("longest_own_stall_ms") is not None],
                      default=None)
        is_d = base_kind(rc) in ("discard", "sqlite", "sqlite-all", "sqlite+forward")
        bpe = med([p.get("db_bytes_per_event") for p in at_best])
        rows.append([rc, fmt_num(best) if best else "none", fmt_num(s.get("best_rate")) if best else "-",
                     fmt_ratio(best / ref_best) if best and ref_best else "-",
                     fmt_num(s.get("fail_total")) if s.get("fail_total") else "not reached",
                     s.get("fail_reason", "-") or "-",
                     len(ps),
                     fmt_num(stall_best, 2) if is_d else "-",
                     fmt_num(over1) if is_d and over1 is not None else "-",
                     fmt_num(stall_all, 2) if is_d else "-",
                     fmt_num(own_best, 2) if is_d and own_best is not None else "-",
                     fmt_num(own_all, 2) if is_d and own_all is not None else "-",
                     fmt_num(bpe) if bpe is not None else "-"])
    headers = ["receiver", "zero-drop total msgs/s", "per conn", "vs ref", "first failing total",
               "why it failed", "probes", "longest stall ms (at best)", "stalls>1ms (at best)",
               "longest stall ms (any probe)", "own stall ms (at best)", "own stall ms (any probe)",
               "DB bytes/event (at best)"]
    t, m = table(headers, rows, ["l"] + ["r"] * 5 + ["l"] + ["r"] * 6)
    meta = next(iter(search.values()), {})
    title = ("Highest paced total rate with zero drops, sentry mode, %s connections, trace %s "
             "(good: %s consecutive zero-drop %ss probes; bad: %s failed probes; resolution %s%%)" %
             (conns, meta.get("trace", "?"), meta.get("confirm", "?"), meta.get("probe_seconds", "?"),
              meta.get("max_fails", 1), meta.get("resolution_pct", "?")))
    notes = ("zero-drop total: per-connection --rate x connections, highest rate found good (consecutive "
             "probes with 0 drops, the receiver counting everything sent). first failing total: lowest rate "
             "found bad (drops, or loadgen could not offer the rate). Longest stall: seccheckd's summary "
             "line, longest time its loop neither read sockets nor waited in epoll, wall clock (it includes "
             "time the thread was preempted by other threads on the shared cores). Own stall: the same in "
             "loop turns without an involuntary context switch, i.e. the loop's own work.")
    print(title + "\n\n" + t + "\n\n" + notes)
    write_summary(out, "seccheckd zero-drop rate (bench/zero_drop.sh)", ["## " + title + "\n\n" + m, notes])


# ---------------------------------------------------------------- macro

PASS_ORDER = ["baseline", "null", "dummy", "seccheckd", "python"]
PASS_DESC = {"baseline": "empty trace session", "null": "points on, null sink",
             "dummy": "remote sink -> seccheck-dummy", "seccheckd": "remote sink -> seccheckd (sqlite)",
             "python": "remote sink -> dummy_uds_server.py"}


def cmd_macro(out):
    runs = load_jsonl(os.path.join(out, "runs.jsonl"))
    good = [r for r in runs if not r.get("error") and r.get("value") is not None]
    errors = [r for r in runs if r.get("error") or r.get("value") is None]
    texts, mds = [], []
    for wl in ordered({r["workload"] for r in runs}, ["redis", "execve"]):
        rs_w = [r for r in good if r["workload"] == wl]
        unit = next((r["unit"] for r in runs if r["workload"] == wl and r.get("unit")), "")
        base = [r for r in rs_w if r["pass"] == "baseline"]
        rows = []
        for ps in ordered({r["pass"] for r in runs if r["workload"] == wl}, PASS_ORDER):
            rs = [r for r in rs_w if r["pass"] == ps]
            nfail = sum(1 for r in errors if r["workload"] == wl and r["pass"] == ps)
            vals = [r["value"] for r in rs]
            remote = ps in ("dummy", "seccheckd", "python")
            recv = med([r.get("received") for r in rs]) if remote else None
            drops = med([r.get("sandbox_dropped") for r in rs]) if remote else None
            drops_max = max([r["sandbox_dropped"] for r in rs if r.get("sandbox_dropped") is not None],
                            default=None) if remote else None
            droppct = med([100.0 * r["sandbox_dropped"] / (r["sandbox_dropped"] + r["received"])
                           for r in rs if r.get("received") is not None and r.get("sandbox_dropped") is not None
                           and r["sandbox_dropped"] + r["received"] > 0]) if remote else None
            rows.append([ps, PASS_DESC.get(ps, ""), fmt_num(med(vals)) if vals else "-",
                         "%s-%s" % (fmt_num(min(vals)), fmt_num(max(vals))) if vals else "-",
                         fmt_ratio(ratio(rs, base, "value")) if base and rs else "-",
                         fmt_num(recv) if remote else "-",
                         "%s / %s" % (fmt_num(drops), fmt_num(drops_max)) if remote else "-",
                         fmt_num(droppct, 2) if remote and droppct is not None else "-",
                         fmt_num(med([r.get("wall_s") for r in rs]), 1),
                         "%d%s" % (len(rs), " (%d failed)" % nfail if nfail else "")])
        headers = ["pass", "what", "%s (median)" % unit, "min-max", "vs baseline", "events received",
                   "sandbox drops (med / max)", "drop %", "sandbox wall s", "runs"]
        t, m = table(headers, rows, ["l", "l"] + ["r"] * 8)
        n = next((r.get("n") for r in runs if r["workload"] == wl), "?")
        what = {"redis": "Redis SET in runsc (redis-benchmark -t set -n %s)" % n,
                "execve": "execve loop in runsc (%s x /bin/true)" % n}.get(wl, wl)
        title = "%s, median over interleaved runs" % what
        texts.append(title + "\n\n" + t)
        mds.append("## " + title + "\n\n" + m)
    notes = ("vs baseline: median of the pass / median of the baseline, interleaved in this invocation. events "
             "received / sandbox drops: the receiver's own totals (sandbox drops = the dropped_count the sandbox "
             "reported in its headers), medians per run; drop % = drops / (received + drops).")
    if errors:
        err = "Failed runs (left out): " + "; ".join(
            "%s/%s rep %s: %s" % (r.get("workload"), r.get("pass"), r.get("rep"), r.get("error", "no result"))
            for r in errors)
        texts.append(err)
        mds.append(err)
    print("\n\n".join(texts) + "\n\n" + notes)
    write_summary(out, "seccheck macro passes in runsc (bench/macro.sh)", mds + [notes])


DOCKER_PASS_ORDER = ["baseline", "null", "sqlite", "discard", "python"]
DOCKER_PASS_DESC = {"baseline": "runsc, no seccheck config", "null": "read/write enter, sink null",
                    "sqlite": "remote sink -> seccheckd --sink sqlite", "discard": "remote sink -> seccheckd --sink discard",
                    "python": "remote sink -> dummy_uds_server.py"}


def cmd_docker_redis(out):
    """bench/docker_redis.sh: SET and GET per pass, their ratios to the baseline, what the receivers got."""
    runs = load_jsonl(os.path.join(out, "runs.jsonl"))
    good = [r for r in runs if not r.get("error") and r.get("set") is not None and r.get("get") is not None]
    errors = [r for r in runs if r not in good]
    base = [r for r in good if r["pass"] == "baseline"]
    rows = []
    for ps in ordered({r["pass"] for r in runs}, DOCKER_PASS_ORDER):
        rs = [r for r in good if r["pass"] == ps]
        nfail = sum(1 for r in errors if r["pass"] == ps)
        remote = ps in ("sqlite", "discard", "python")
        sets, gets = [r["set"] for r in rs], [r["get"] for r in rs]
        drops = [r["sandbox_dropped"] for r in rs if r.get("sandbox_dropped") is not None]
        droppct = med([100.0 * r["sandbox_dropped"] / (r["sandbox_dropped"] + r["received"]) for r in rs
                       if r.get("received") is not None and r.get("sandbox_dropped") is not None
                       and r["sandbox_dropped"] + r["received"] > 0]) if remote else None
        rows.append([ps, DOCKER_PASS_DESC.get(ps, ""),
                     fmt_num(med(sets)) if sets else "-", fmt_ratio(ratio(rs, base, "set")) if base and rs else "-",
                     fmt_num(med(gets)) if gets else "-", fmt_ratio(ratio(rs, base, "get")) if base and rs else "-",
                     fmt_num(med([r.get("received") for r in rs])) if remote and rs else "-",
                     "%s / %s" % (fmt_num(med(drops)), fmt_num(max(drops))) if remote and drops else "-",
                     fmt_num(droppct, 2) if droppct is not None else "-",
                     "%d%s" % (len(rs), " (%d failed)" % nfail if nfail else "")])
    headers = ["pass", "what", "SET/s (median)", "SET vs baseline", "GET/s (median)", "GET vs baseline",
               "events received", "sandbox drops (med / max)", "drop %", "runs"]
    t, m = table(headers, rows, ["l", "l"] + ["r"] * 8)
    n = next((r.get("n") for r in runs), "?")
    c = next((r.get("clients") for r in runs), "?")
    title = ("Redis in Docker with runsc (redis-benchmark -t set,get -n %s -c %s in the container), median over "
             "interleaved runs" % (n, c))
    notes = ("vs baseline: the pass's median / the baseline's median, interleaved in this invocation. events received / "
             "sandbox drops: the receiver's own totals (drops = the dropped_count the sandbox reported), medians per "
             "run; drop % = drops / (received + drops).")
    texts, mds = [title + "\n\n" + t], ["## " + title + "\n\n" + m]
    if errors:
        err = "Failed runs (left out): " + "; ".join(
            "%s rep %s: %s" % (r.get("pass"), r.get("rep"), r.get("error", "no result")) for r in errors)
        texts.append(err)
        mds.append(err)
    print("\n\n".join(texts) + "\n\n" + notes)
    write_summary(out, "gVisor's Redis pass through Docker (bench/docker_redis.sh)", mds + [notes])


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "record":
        cmd_record(args)
    elif cmd == "ipc":
        cmd_ipc(args[0])
    elif cmd == "zero-drop":
        cmd_zero_drop(args[0])
    elif cmd == "macro":
        cmd_macro(args[0])
    elif cmd == "docker-redis":
        cmd_docker_redis(args[0])
    elif cmd == "log":
        with open(args[1], errors="replace") as f:
            print(json.dumps(parse_log(args[0], f.read())))
    else:
        sys.exit("unknown command %r (see --help)" % cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
