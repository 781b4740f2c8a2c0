#!/usr/bin/env python3
"""Checks what alert_receiver.py received against the daemon's --alerts-out
file (test_deliver.c): every expected alert arrived, in order, each body
byte for byte the alert's line; a duplicate only right after itself (the
retry of a request the receiver took but whose answer never arrived).

  check_deliveries.py RECEIVER_LOG ALERTS_OUT [--total N] [--expect-first N] [--skip-first N] [--max-dups N]
                      [--min-dups N] [--gaps]

--total N: ALERTS_OUT must hold at least N alerts; fewer is incomplete
(the daemon's writer has not written them all yet), not complete.

--gaps: alerts may be missing (dropped: deleted before delivery); the
summary then says how many ("skipped N"), and complete means the last
expected alert arrived.

Arrivals are the requests the receiver took in (every action but a refusing
status, a redirect or a dropped connection). Prints one summary line.
Exit 0: complete and valid; 3: valid so far, alerts still missing; 1: a
violation (said on stderr).
"""
import argparse
import json
import sys

REFUSED = ("redirect", "dropconn")


def taken(action):
    word = action.split(" ")[0]
    return not (word.isdigit() or word in REFUSED)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("receiver_log")
    ap.add_argument("alerts_out")
    ap.add_argument("--total", type=int, default=0)
    ap.add_argument("--expect-first", type=int)
    ap.add_argument("--skip-first", type=int, default=0)
    ap.add_argument("--max-dups", type=int, default=0)
    ap.add_argument("--min-dups", type=int, default=0)
    ap.add_argument("--gaps", action="store_true")
    a = ap.parse_args()
    with open(a.alerts_out, "rb") as f:
        expected = [line.rstrip(b"\n") for line in f]
    written = len(expected)
    if a.expect_first is not None:
        expected = expected[:a.expect_first]
    expected = expected[a.skip_first:]
    arrivals = []
    with open(a.receiver_log) as f:
        for line in f:
            entry = json.loads(line)
            if taken(entry["action"]):
                arrivals.append(entry["body"].encode("utf-8", "surrogateescape"))
    j = dups = skipped = 0
    for i, body in enumerate(arrivals):
        if j < len(expected) and body == expected[j]:
            j += 1
        elif j > 0 and body == expected[j - 1] and arrivals[i - 1] == body:
            dups += 1
        elif a.gaps and body in expected[j:]:
            k = expected.index(body, j)
            skipped += k - j
            j = k + 1
        else:
            where = f"expected alert {j} of {len(expected)}" if j < len(expected) else "all expected had arrived"
            print(f"arrival {i} is out of order or unknown ({where}): {body[:200]!r}", file=sys.stderr)
            return 1
    print(f"arrivals {len(arrivals)} unique {j - skipped} duplicates {dups} expected {len(expected)} skipped {skipped}")
    if dups > a.max_dups:
        print(f"{dups} duplicates, at most {a.max_dups} allowed", file=sys.stderr)
        return 1
    if j < len(expected) or written < a.total:
        return 3
    if dups < a.min_dups:
        print(f"{dups} duplicates, at least {a.min_dups} expected", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
