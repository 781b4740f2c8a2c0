#!/usr/bin/env python3
"""The alerts falcosecurity/rules' own files raise in tests/e2e/falco_rules_e2e.sh's
sandbox, as Falco's templates give them.

For each upstream rule the workload triggers, the expected `output` is built
from the rule's own `output:` template, read from tests/fixtures/falco_rules/
(never copied here), with each %field replaced by the value the workload sets
(below, per rule and common to all). The time prefix is Falco's: the alert's
evt.time as HH:MM:SS.nnnnnnnnn (UTC), then the priority as Falco prints it.
output_fields must hold exactly the template's fields and evt.time, as Falco's.
Falco's falco.yaml ships `append_output: [{suggested_output: true}]`
(falco.yaml:797-799 at 130747499b), and seccheckd's --append-output defaults
to it: every output ends with " container_id=%container.id container_name=
%container.name ... k8s_ns_name=%k8s.ns.name" (init_falco_engine.cpp:26-59,
one per field the container plugin suggests), and output_fields hold those
fields too.

Usage: falco_rules_expect.py FIXTURES_DIR WORK_DIR PORT ALERTS.jsonl upstream|local
  upstream: the alerts of falco_rules.yaml + falco-incubating_rules.yaml
  local:    the same with WORK_DIR/falco_rules.local.yaml loaded last
Exit 0 when every expected alert is there with its exact text and no other.
"""
import datetime
import json
import os
import re
import sys

import yaml

fixtures, work, port, alerts_path, mode = sys.argv[1:6]
python_exe = os.path.realpath("/usr/bin/python3")   # proc.exepath: the binary exec'd

# What every alert of this sandbox shows, whatever the rule:
COMMON = {
    "user.name": "root", "user.uid": "0", "group.gid": "0", "group.name": "root",
    # gVisor reports no login uid: -1, Falco's value for a task without a
    # login session; so no login name either
    "user.loginuid": "-1", "user.loginname": "<NA>",
    # runsc 2022-12 sends no standard streams with an exec (fd_info came in
    # release-20260721.0), so no terminal
    "proc.tty": "<NA>",
    # runsc do's shell (the container's first process) starts every command:
    # it has no parent in the sandbox, so no grand-parents for its children
    "proc.pname": "sh", "proc.pcmdline": "sh %s/work.sh" % work,
    "proc.aname[2]": "<NA>", "proc.aname[3]": "<NA>", "proc.aname[4]": "<NA>",
    "proc.cwd": "/tmp/",
}
EXEC = {"evt.type": "execve",
        # Falco's execve exit flags (EXE_WRITABLE...): gVisor sends none
        "evt.arg.flags": "<NA>"}

# (rule, the values its alert shows), in the order the workload runs them.
UPSTREAM = [
    ("Read sensitive file untrusted",
     {"fd.name": "/etc/shadow", "evt.type": "openat", "proc.name": "cat", "proc.exepath": "/usr/bin/cat",
      "proc.cmdline": "cat /etc/shadow"}),
    ("Netcat Remote Code Execution in Container",
     dict(EXEC, **{"proc.name": "nc", "proc.exepath": work + "/nc", "proc.cmdline": "nc -e /bin/sh 127.0.0.1 9"})),
    ("Search Private Keys or Passwords",
     dict(EXEC, **{"proc.name": "find", "proc.exepath": "/usr/bin/find",
                   "proc.cmdline": "find %s -name id_rsa" % work})),
    ("Find AWS Credentials",
     dict(EXEC, **{"proc.name": "grep", "proc.exepath": "/usr/bin/grep",
                   "proc.cmdline": "grep aws_secret_access_key %s/keys" % work})),
    ("Execution from /dev/shm",
     dict(EXEC, **{"proc.name": "probe", "proc.exepath": "/dev/shm/probe", "proc.cmdline": "probe",
                   "evt.res": "SUCCESS", "fd.name": "<NA>"})),
    ("Redirect STDOUT/STDIN to Network Connection in Container",
     # gVisor's connect reports the remote address only: the local side is
     # unknown (0.0.0.0:0, no lport)
     {"fd.sip": "127.0.0.1", "fd.name": "0.0.0.0:0->127.0.0.1:" + port, "fd.lport": "<NA>", "fd.rport": port,
      "fd.type": "ipv4", "fd.l4proto": "tcp", "evt.type": "dup2", "proc.name": "python3",
      "proc.exepath": python_exe, "proc.cmdline": "python3 %s/redirect.py %s" % (work, port)}),
    ("Clear Log Activities",
     # the shell itself truncates it: the container's first process, whose
     # path is the one runsc started (no exec of its own), and no parent
     {"fd.name": "/var/log/probe.log", "evt.type": "openat", "proc.name": "sh", "proc.exepath": "/bin/sh",
      "proc.pname": "<NA>", "proc.cmdline": "sh %s/work.sh" % work}),
    ("Read environment variable from /proc files",
     {"fd.name": "/proc/self/environ", "evt.type": "openat", "proc.name": "cat", "proc.exepath": "/usr/bin/cat",
      "proc.cmdline": "cat /proc/self/environ"}),
    ("Potential Local Privilege Escalation via Environment Variables Misuse",
     dict(EXEC, **{"proc.env": "HOME=/root GLIBC_TUNABLES=glibc.malloc.check=0 PATH=/usr/bin:/bin PWD=/tmp",
                   "proc.name": "true", "proc.exepath": "/usr/bin/true", "proc.cmdline": "true"})),
    ("Set Setuid or Setgid bit",
     # chmod(1) calls fchmodat, a raw point on runsc 2022-12: its path is a
     # pointer (no filename), its dirfd AT_FDCWD (no fd)
     {"evt.arg.fd": "<NA>", "evt.arg.filename": "<NA>",
      "evt.arg.mode": "S_IXOTH|S_IROTH|S_IXGRP|S_IRGRP|S_IXUSR|S_IWUSR|S_IRUSR|S_ISUID", "evt.type": "fchmodat",
      "proc.name": "chmod", "proc.exepath": "/usr/bin/chmod", "proc.cmdline": "chmod 4755 %s/keys" % work}),
    ("Create files below dev",
     {"fd.name": "/dev/probe", "evt.type": "openat", "proc.name": "touch", "proc.exepath": "/usr/bin/touch",
      "proc.cmdline": "touch /dev/probe"}),
    ("Modify Shell Configuration File",
     {"fd.name": "/root/.bashrc", "evt.type": "openat", "proc.name": "python3", "proc.exepath": python_exe,
      "proc.cmdline": "python3 %s/bashrc.py" % work}),
]

# falco_rules.local.yaml (written by the e2e script, loaded last): what each
# of its items changes, as in Falco.
SECRET = ("Read sensitive file untrusted",
          {"fd.name": "/etc/probe-secret", "evt.type": "openat", "proc.name": "cat", "proc.exepath": "/usr/bin/cat",
           "proc.cmdline": "cat /etc/probe-secret"})
REMOVED_BY_LOCAL = {
    ("Read sensitive file untrusted", "cat /etc/shadow"),                # an exception appended
    ("Read environment variable from /proc files", "cat /proc/self/environ"),   # a known_* list appended to
    ("Create files below dev", "touch /dev/probe"),                      # a rule disabled
    ("Modify Shell Configuration File", "python3 %s/bashrc.py" % work),  # a user_known_* macro overridden
}


def load_rules():
    rules = {}
    for name in ("falco_rules.yaml", "falco-incubating_rules.yaml"):
        for item in yaml.safe_load(open(os.path.join(fixtures, name))):
            if "rule" in item and "output" in item:
                rules[item["rule"]] = item
    return rules


FIELD = re.compile(r"%(\()?([A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]]*\])?)(?(1)\))")


def expected_text(template, values):
    def value(m):
        name = m.group(2)
        if name not in values:
            raise SystemExit("the test names no value for %%%s" % name)
        return values[name]
    return FIELD.sub(value, template.strip())


# What suggested_output appends to every rule's output, in the container
# plugin's field order (plugins/container/src/caps/extract/extract.cpp).
SUGGESTED = ["container.id", "container.name", "container.image.repository", "container.image.tag",
             "k8s.pod.name", "k8s.ns.name"]
SUGGESTED_TEXT = "".join(" %s=%%%s" % (f.replace(".", "_"), f) for f in SUGGESTED)
# runsc do's container: an id of its own, no CRI annotations (no name, pod, image)
SANDBOX = {"container.name": "<NA>", "container.image.repository": "<NA>", "container.image.tag": "<NA>",
           "k8s.pod.name": "<NA>", "k8s.ns.name": "<NA>"}
RUNSC_DO_ID = re.compile(r"runsc-[0-9]+")


def template_fields(template):
    return {m.group(2) for m in FIELD.finditer(template + SUGGESTED_TEXT)} | {"evt.time"}


def falco_priority(p):
    return p.strip().capitalize()


def time_prefix(ns):
    t = datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc)
    return "%02d:%02d:%02d.%09d" % (t.hour, t.minute, t.second, ns % 10**9)


def main():
    rules = load_rules()
    expect = list(UPSTREAM)
    if mode == "local":
        expect = [e for e in expect if (e[0], dict(COMMON, **e[1])["proc.cmdline"]) not in REMOVED_BY_LOCAL]
        expect.insert(1, SECRET)
    alerts = [json.loads(line) for line in open(alerts_path) if line.strip()]
    failures = 0
    seen = set()
    for rule, own in expect:
        values = dict(COMMON, **own)
        key = (rule, values["proc.cmdline"])
        r = rules[rule]
        got = [a for a in alerts if a["rule"] == rule and a["output_fields"].get("proc.cmdline") == key[1]]
        if len(got) != 1:
            print("FAIL - %s (%s): %d alerts, expected 1" % (rule, key[1], len(got)))
            failures += 1
            continue
        a = got[0]
        seen.add(id(a))
        cid = a["output_fields"].get("container.id") or ""
        if not RUNSC_DO_ID.fullmatch(cid):
            print("FAIL - %s: container.id %r is not runsc do's" % (rule, cid))
            failures += 1
            continue
        values = dict(values, **SANDBOX, **{"container.id": cid})
        want = "%s: %s %s" % (time_prefix(a["output_fields"]["evt.time"]), falco_priority(r["priority"]),
                              expected_text(r["output"].strip() + SUGGESTED_TEXT, values))
        keys = set(a["output_fields"])
        if a["output"] != want:
            print("FAIL - %s: output\n  got:      %s\n  expected: %s" % (rule, a["output"], want))
            failures += 1
        elif keys != template_fields(r["output"]):
            print("FAIL - %s: output_fields keys %s, expected %s" % (rule, sorted(keys),
                                                                   sorted(template_fields(r["output"]))))
            failures += 1
        elif a["priority"] != falco_priority(r["priority"]) or a["source"] != "syscall":
            print("FAIL - %s: priority %s source %s" % (rule, a["priority"], a["source"]))
            failures += 1
        else:
            print("ok   - %s: %s" % (rule, a["output"]))
    for a in alerts:
        if id(a) not in seen:
            print("FAIL - an alert not expected: %s | %s" % (a["rule"], a["output"]))
            failures += 1
    print("%s: %d expected alerts, %d alerts, %d failures" % (mode, len(expect), len(alerts), failures))
    return 1 if failures else 0


sys.exit(main())
