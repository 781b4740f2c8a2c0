#!/usr/bin/python3
"""A sandbox that opens chains as fast as it can: one trace whose every event but the first two
begins a partial match of the default rules' sequences (a shell writing N distinct files in /tmp:
"Dropped file executed" and "Dropped file loaded as code" each wait for them to run), made with
tests/support/gvisor_packets.py (python3-protobuf). For bench/rules.sh part 3.
Usage: hostile_chains.py OUT.trace [N]   (N files, 40000 by default)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support"))
import gvisor_packets as gp  # noqa: E402

s = gp.Sandbox("hostile")
gp.shell(s)
for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 40000):
    s.syscall("open", 2, result=3, sysno=257, fd=-100, pathname="/tmp/h/%d" % i, flags=0o1101)
gp.write_trace(sys.argv[1], s.packets)
