#!/usr/bin/env python3
"""How much data a call touches: the distinct 64-byte lines of memory that the loads and stores
of a valgrind lackey trace (`--trace-mem=yes`) touch per call, and what a first-level data cache
like this host's (32 KiB, 8 ways of 64-byte lines, the least recently used one evicted) makes of
them. The data side of `scripts/code_lines.py`.

    data_lines.py TRACE INSTRUCTIONS_PER_CALL [TOP] [BINARY]

The trace is read from 45% to 60% of its length (the steady state of a profile run: start-up and
the run's end left out) and cut into windows of INSTRUCTIONS_PER_CALL instructions (callgrind's
count for the same run divided by its calls), each about one call. For instance, newline row A
with the loop's client against our server, one worker:

    COMPARE_WORKERS=1 COMPARE_PROFILE=3000 COMPARE_PROFILE_FRAMING=newline \\
        COMPARE_PROFILE_WHO=loop-client valgrind --tool=lackey --trace-mem=yes \\
        --log-file=trace.txt target/release/deps/compare-HASH --bench
    scripts/data_lines.py trace.txt 12000 30 target/release/deps/compare-HASH

Prints the lines a window touches (mean) and by 64 KiB region of memory (the worker thread's
stack is one region, the heap's arenas others), how many lines a set of the cache gets in a
window (more than 8 in a set that every call touches: each of them misses on every call), and
the model's misses per window with the sets they fall in (from the second window on: the model
starts empty, and the first fills it). Given the BINARY (a position-independent
executable, which valgrind loads at 0x108000 on x86-64), it also prints the TOP functions (default
30) by the lines each is the first in a window to touch, with the region. Not part of CI.
"""
import bisect
import collections
import os
import subprocess
import sys

LINE = 6  # log2 of the line size
SETS = 64  # 32 KiB / 8 ways / 64 bytes
WAYS = 8
PIE_BASE = 0x108000


def symbols(binary):
    """(start addresses, (end, name)) of the binary's functions, sorted by start."""
    out = subprocess.run(
        ["nm", "-C", "-S", "--defined-only", binary], capture_output=True, text=True, check=True
    ).stdout
    syms = []
    for row in out.splitlines():
        parts = row.split(" ", 3)
        if len(parts) == 4 and parts[2] in "tT":
            start = int(parts[0], 16)
            syms.append((start, (start + int(parts[1], 16), parts[3])))
    syms.sort()
    return [a for a, _ in syms], [f for _, f in syms]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, per = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    starts, names = symbols(sys.argv[4]) if len(sys.argv) > 4 else ([], [])

    def function(ins):
        at = ins - PIE_BASE
        i = bisect.bisect_right(starts, at) - 1
        return names[i][1] if i >= 0 and at < names[i][0] else "(outside the binary's functions: a shared library)"

    size = os.path.getsize(path)
    trace = open(path, "rb")
    trace.seek(int(size * 0.45))
    trace.readline()  # the rest of a line cut in two
    end = int(size * 0.60)

    sets = [[] for _ in range(SETS)]  # each set's lines, least recently used first
    # Misses are counted from the end of the first window (the model starts empty: its first
    # window's misses fill it) to the end of the last whole one.
    misses, miss_sets = 0, collections.Counter()
    counted, pending, pending_sets = 0, 0, collections.Counter()
    first = {}  # line -> the instruction that touched it first in this window
    windows, lines, regions, occupancy = 0, 0, collections.Counter(), collections.Counter()
    by_function = collections.Counter()
    instructions, current = 0, 0
    while trace.tell() < end:
        row = trace.readline()
        if not row:
            break
        kind = row[:2]
        if kind == b"I ":
            instructions += 1
            current = int(row[3 : row.index(b",")], 16)
            if instructions % per == 0:
                if windows:
                    misses, counted = misses + pending, counted + 1
                    miss_sets.update(pending_sets)
                pending, pending_sets = 0, collections.Counter()
                windows += 1
                lines += len(first)
                per_set = collections.Counter(line % SETS for line in first)
                for s in range(SETS):
                    occupancy[per_set.get(s, 0)] += 1
                for line, ins in first.items():
                    region = (line << LINE) >> 16
                    regions[region] += 1
                    if starts:
                        by_function[(function(ins), region)] += 1
                first = {}
            continue
        if kind not in (b" L", b" S", b" M"):
            continue
        comma = row.index(b",")
        address, length = int(row[3:comma], 16), int(row[comma + 1 :])
        for line in {address >> LINE, (address + length - 1) >> LINE}:
            first.setdefault(line, current)
            ways = sets[line % SETS]
            if line in ways:
                ways.remove(line)
            else:
                pending += 1
                pending_sets[line % SETS] += 1
                if len(ways) == WAYS:
                    ways.pop(0)
            ways.append(line)
    if counted == 0:
        sys.exit("fewer than two whole windows in the trace's middle: is INSTRUCTIONS_PER_CALL right?")

    print(f"{windows} windows of {per} instructions")
    print(f"distinct data lines a window: {lines / windows:.1f}")
    print("by 64 KiB region:", ", ".join(f"{r << 16:#x} {n / windows:.1f}" for r, n in regions.most_common(8)))
    print("sets by lines a window (lines: sets):", ", ".join(f"{k}: {n / windows:.1f}" for k, n in sorted(occupancy.items())))
    print(f"model's misses a window (the first left out: it fills the model): {misses / counted:.2f}")
    print("sets with the most misses:", ", ".join(f"{s} {n / counted:.2f}" for s, n in miss_sets.most_common(6)))
    for (name, region), n in by_function.most_common(top):
        print(f"{n / windows:6.1f}  {region << 16:#x}  {name[:120]}")


if __name__ == "__main__":
    main()
