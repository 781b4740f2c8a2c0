#!/usr/bin/env python3
"""hermetic_tests.py SOURCE_DIR: the shell tests, and the bench scripts CI
runs as smokes, read no machine-wide state they did not make
(docs/testing.md; the guide: "the machine's runsc roots,
/var/run/docker.sock: name your own").

In tests/e2e/*.sh, tests/fleet/*.sh and bench/*.sh (the README's blocks,
readme_e2e.sh and readme_prelude.sh, run as written and are left out):
  - a seccheckd daemon they start (`...seccheckd" --OPTION ...` with
    --socket on the command, continuation lines joined) names its runsc
    roots and its Docker socket: "${own_names[@]}" (tests/e2e/stop_jobs.sh,
    tests/fleet/lib.sh, bench/lib.sh's bench_init), or --runsc-root and
    --docker-socket both; without
    them it reads runsc's usual roots (/var/run/runsc, ...) and asks
    /var/run/docker.sock;
  - a runsc command names its --root, `runsc do` excepted: it keeps its
    state in a directory of its own making whatever --root says (gVisor's
    runsc/cmd/do.go sets conf.RootDir to $TMPDIR/runsc-doNNN), written
    do or "do".
Each offending command is printed as FILE:LINE; exit 1 if there is one."""
import pathlib
import re
import sys

SKIPPED = {"readme_e2e.sh", "readme_prelude.sh"}
DIRS = ("tests/e2e", "tests/fleet", "bench")
DAEMON = re.compile(r'seccheckd"\s+--')
OWN_NAMES = re.compile(r'"\$\{own_names\[@\]\}"')
RUNSC = re.compile(r'(?:^|[\s(;&|])runsc\s+(?=-|(?:do|run|create|start|delete|kill|list|state|exec|ps|events|'
                   r'wait|pause|resume|checkpoint|restore|spec)(?:\s|$))')
HEREDOC = re.compile(r'<<(-?)\s*[\'"]?([A-Za-z_][A-Za-z0-9_]*)[\'"]?')


def commands(path):
    """(line number, command) for each command of the script: comments and
    here-documents left out, continuation lines joined."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        start, text = i + 1, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        i += 1
        if text.lstrip().startswith("#"):
            continue
        yield start, text
        heredoc = HEREDOC.search(text)
        if heredoc:
            strip, end = heredoc.groups()
            while i < len(lines) and (lines[i].lstrip("\t") if strip else lines[i]) != end:
                i += 1
            i += 1


def daemon_unnamed(cmd):
    if not (DAEMON.search(cmd) and "--socket" in cmd):
        return False
    return not (OWN_NAMES.search(cmd) or ("--runsc-root" in cmd and "--docker-socket" in cmd))


def runsc_rootless(cmd):
    """A runsc command (not `do`) without --root."""
    # No words from strings, but a quoted plain word is that word ("do").
    bare = re.sub(r'"([A-Za-z0-9_.-]+)"|\'([A-Za-z0-9_.-]+)\'', lambda m: m.group(1) or m.group(2), cmd)
    bare = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', '""', bare)
    for m in RUNSC.finditer(bare):
        words = re.split(r'[|;&)]', bare[m.end():], maxsplit=1)[0].split()
        if "do" not in words and not any(re.fullmatch(r"--root(=.*)?", w) for w in words):
            return True
    return False


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    scripts = sorted(p for d in DIRS for p in (src / d).glob("*.sh") if p.name not in SKIPPED)
    missing = [d for d in DIRS if not any(p.parent == src / d for p in scripts)]
    if missing:
        sys.exit(f"hermetic_tests: no scripts under {src}/{', '.join(missing)}")
    bad = 0
    for path in scripts:
        for line, cmd in commands(path):
            why = ("starts seccheckd without its own runsc root and Docker socket (add \"${own_names[@]}\", "
                   "or --runsc-root DIR --docker-socket none)" if daemon_unnamed(cmd) else
                   "runs runsc without --root (runsc --root \"$dir/runsc-root\" ...)" if runsc_rootless(cmd) else None)
            if why:
                print(f"{path.relative_to(src)}:{line}: {why}")
                bad += 1
    if bad:
        print(f"hermetic_tests: {bad} command(s) would read the machine's runsc roots or Docker socket")
        sys.exit(1)
    print(f"hermetic_tests: {len(scripts)} scripts: every daemon and runsc command names its own")


if __name__ == "__main__":
    main()
