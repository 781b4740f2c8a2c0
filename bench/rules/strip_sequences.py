#!/usr/bin/env python3
"""A rules file without its `- sequence:` items (and nothing else changed): the
default rules with and without their sequences, for bench/rules.sh.
Usage: strip_sequences.py RULES.yaml > OUT.yaml"""
import sys

out, skipping = [], False
for line in open(sys.argv[1]):
    if line.startswith("- "):          # a top-level item begins
        skipping = line.startswith("- sequence:")
    elif line.startswith("#") or not line.strip():
        skipping = skipping and not line.startswith("#")
    if not skipping:
        out.append(line)
text = "".join(out)
if "- sequence:" in text:
    sys.exit("strip_sequences.py: a sequence item left in")
sys.stdout.write(text)
