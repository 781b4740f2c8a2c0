#!/usr/bin/env python3
"""The README's shell and SQL blocks as scripts readme_e2e.sh can run.

Usage: readme_blocks.py README OUT_DIR

Writes OUT_DIR/NN.sh for every ```sh block and OUT_DIR/NN.sql for every
```sql block, in order, and OUT_DIR/index: one line per block, "NN KIND
FIRST-LINE". A shell block is run as written, line by line in one bash
(variables carry from line to line), with only what a person at a terminal
does by hand made explicit:
  - a daemon started in the foreground (`seccheckd [OPTIONS]`, `seccheckd
    forward ...`) runs in the background until it is ready (a forwarder:
    caught up; through NATS, once the central copy has every batch), and is
    stopped (as with Ctrl-C) before the next one starts and at the block's
    end;
  - `CMD &` runs in the background with its output in a log, until the
    block's end;
  - `--follow` runs for 3 seconds (a person stops it with Ctrl-C);
  - a line that needs systemd or installs into the system (systemctl,
    systemd-analyze, cmake --install) is skipped, and said so.
"""
import os
import re
import sys

SKIP = re.compile(r"\b(systemctl|systemd-analyze|cmake --install)\b")
DAEMON = re.compile(r"^(?:[A-Z_]+=\S+\s+)*seccheckd(\s+-|\s*$)")
FORWARDER = re.compile(r"^(?:[A-Z_]+=\S+\s+)*seccheckd forward\b")


def blocks(text):
    """(kind, lines) for each fenced block of kind sh or sql."""
    out, kind, lines = [], None, []
    for line in text.splitlines():
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and kind is None:
            kind, lines = fence.group(1) or "-", []
        elif fence or (line.startswith("```") and kind is not None):
            if kind in ("sh", "sql"):
                out.append((kind, lines))
            kind = None
        elif kind is not None:
            lines.append(line)
    return out


def open_quote(text):
    """The quote left open at the end of text (shell rules), or None."""
    quote, i = None, 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            while i < len(text) and text[i] != "\n":
                i += 1
        i += 1
    return quote


def logical_lines(lines):
    """A command per item: continuation lines (a trailing backslash) joined
    with a space, a quoted string over several lines kept whole."""
    out, cur = [], None
    for line in lines:
        cur = line if cur is None else cur + ("\n" if open_quote(cur) else "") + line
        if open_quote(cur):
            continue
        if cur.rstrip().endswith("\\"):
            cur = cur.rstrip()[:-1] + " "
            continue
        out.append(cur)
        cur = None
    if cur is not None:
        out.append(cur)
    return out


def strip_comment(line):
    """The command without a trailing # comment (outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def shell(lines):
    out = ["source \"$README_PRELUDE\""]
    for raw in logical_lines(lines):
        line = strip_comment(raw)
        if not line.strip():
            continue
        if SKIP.search(line):
            out.append("skipped %s" % q(line))
        elif line.endswith("&") and not line.endswith("&&"):
            out.append("background %s" % q(line[:-1].rstrip()))
        elif FORWARDER.match(line) and "--nats-auth" in line:
            # through the stream: until the central copy has every batch
            out.append("foreground 'the central copy has every batch' %s" % q(line))
        elif FORWARDER.match(line):
            out.append("foreground 'caught up at batch' %s" % q(line))
        elif DAEMON.match(line):
            out.append("foreground 'listening on' %s" % q(line))
        elif "--follow" in line:
            out.append("for_a_while %s" % q(line))
        elif line.startswith("runsc "):
            # A person reads what the sandbox printed before typing on.
            out.append("ran %s" % q(line))
            out.append("_closed=$(closed_connections)")
            out.append(line)
            out.append("sandbox_settled \"$_closed\"")
        else:
            out.append("ran %s" % q(line))
            out.append(line)
    out.append("end_of_block")
    return "\n".join(out) + "\n"


def main():
    text = open(sys.argv[1]).read()
    outdir = sys.argv[2]
    index = []
    for n, (kind, lines) in enumerate(blocks(text), 1):
        name = os.path.join(outdir, "%02d.%s" % (n, kind))
        with open(name, "w") as f:
            f.write(shell(lines) if kind == "sh" else "\n".join(lines) + "\n")
        first = next((l for l in lines if l.strip()), "")
        index.append("%02d %s %s" % (n, kind, first.strip()))
    with open(os.path.join(outdir, "index"), "w") as f:
        f.write("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
