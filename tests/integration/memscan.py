#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts secrets in a process's memory, or in a core file.

usage: memscan.py PID|CORE NEEDLE...   (a NEEDLE "@FILE" is that file's bytes)
Prints one count per needle, space-separated. For a PID: its readable mappings of at most
4 GiB that a core would hold (not MADV_DONTDUMP, "dd" in smaps), read through /proc/PID/mem
(gcore of a sanitizer build walks terabytes of reserved shadow and does not finish). The
process must be dumpable (kilnd: allow_core_dumps = yes) and ours.
"""
import mmap
import re
import sys


def needles_of(args):
    out = []
    for a in args:
        if a.startswith("@"):
            with open(a[1:], "rb") as f:
                out.append(f.read())
        else:
            out.append(a.encode())
    return out


def main():
    src, needles = sys.argv[1], needles_of(sys.argv[2:])
    counts = [0] * len(needles)

    def scan(buf):
        for k, n in enumerate(needles):
            i = buf.find(n)
            while i >= 0:
                counts[k] += 1
                i = buf.find(n, i + 1)

    if src.isdigit():
        maps, cur = [], None
        for line in open(f"/proc/{src}/smaps"):
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
            if m:
                cur = [int(m.group(1), 16), int(m.group(2), 16), m.group(3), False]
                maps.append(cur)
            elif line.startswith("VmFlags:") and " dd" in line:
                cur[3] = True
        longest = max((len(n) for n in needles), default=1)
        with open(f"/proc/{src}/mem", "rb", 0) as mem:
            for lo, hi, perms, dontdump in maps:
                if perms[0] != "r" or dontdump or hi - lo > (4 << 30):
                    continue
                for at in range(lo, hi, 1 << 24):
                    try:
                        mem.seek(at)
                        # overlap the next chunk by a needle's length, counted once
                        scan(mem.read(min((1 << 24) + longest - 1, hi - at)))
                    except OSError:
                        pass
    else:
        with open(src, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            scan(m)
    print(" ".join(str(c) for c in counts))


main()
