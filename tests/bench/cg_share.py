#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Callgrind output -> "TOTAL_IR LIB_IR": all instructions, and those spent in calls made from
outside LIB into LIB (inclusive: what LIB itself calls, e.g. libc, counts as LIB's)."""
import re
import sys


def parse(path, lib):
    names = {"ob": {}, "fl": {}, "fn": {}}
    ob = cob = None
    total = 0
    inlib = 0
    pending_call = False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(ob|cob|fl|fi|fe|cfi|cfl|fn|cfn)=(?:\((\d+)\))?\s*(.*)$", line)
            if m:
                key, num, name = m.groups()
                table = {"cob": "ob", "cfi": "fl", "cfl": "fl", "fi": "fl", "fe": "fl",
                         "cfn": "fn"}.get(key, key)
                if num is not None:
                    if name:
                        names[table][num] = name
                    else:
                        name = names[table].get(num, "")
                if key == "ob":
                    ob = name
                    cob = None
                elif key == "cob":
                    cob = name
                elif key == "fn":
                    cob = None
                continue
            if line.startswith("calls="):
                pending_call = True
                continue
            if line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            fields = line.split()
            if pending_call:
                callee = cob if cob is not None else ob
                if (callee and lib in callee) and not (ob and lib in ob):
                    inlib += int(fields[-1])
                pending_call = False
                cob = None
    return total, inlib


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: cg_share.py CALLGRIND_OUT LIB_SUBSTRING")
    t, n = parse(sys.argv[1], sys.argv[2])
    print(t, n)
