#!/usr/bin/env python3
"""Where a process misses a cache the size of a core's own (second-level) one: the data lines it
fetches from further away, per call, in all and by where in the code, from a callgrind profile
with cache simulation (`--cache-sim=yes --dump-instr=yes`, its last level set to the core's own
cache's size).

    cold_lines.py CALLGRIND_OUT CALLS [TOP] [BINARY]

A server of many connections touches each connection's memory once per batch of its messages,
and by then the other connections have pushed it out of the core's own cache: every line a batch
touches is fetched again, and an atomic instruction on such a line waits for it. For the
connections bench's servers (1,000 connections, 8 calls in flight on each: one read, one batch,
per 8 calls; the 2-vCPU AMD EPYC hosts these benches run on have 512 KiB of L2 per core):

    CONNECTIONS=1000 ROUNDS=0 LOAD_CONNECTIONS=1000 CALLS=200 LOAD_REPEATS=0 valgrind \\
        --tool=callgrind --cache-sim=yes --LL=524288,8,64 --dump-instr=yes \\
        --callgrind-out-file=ours.out target/release/deps/connections-HASH --serve ours
    scripts/cold_lines.py ours.out 201000

(1,000 connections × 200 calls, and the 1,000 calls that opened them.) Prints the last-level
data misses (reads and writes) per call, then the TOP functions (default 30) by misses per call.
Given the profiled BINARY, built with line tables (`CARGO_PROFILE_BENCH_DEBUG=line-tables-only`),
it also prints them by the source file of the innermost frame in this repository's code (or
tokio's, or the allocator's) that `addr2line -i` finds at each missing instruction: which of the
connection's parts the lines belong to.

Callgrind sees no kernel: the bytes a receive copies into a buffer are not in its simulated
cache, so their first read by the process counts as a miss, which in reality it is not (the copy
just put them in the core's cache). A server that reads each connection into a buffer of its own
has those misses; one that reads into a buffer reused across connections mostly does not. Not
part of CI.
"""
import collections
import re
import subprocess
import sys

from code_lines import in_binary, parse


def where(binary, addresses):
    """Each address's innermost frame in code of this repository, tokio or the allocator, by its
    source file (`addr2line -i`, innermost frame first; the standard library's and other crates'
    frames are passed over): address → file."""
    listed = subprocess.run(
        ["addr2line", "-e", binary, "-i", "-a"], input="\n".join(hex(a) for a in addresses),
        capture_output=True, text=True,
    )
    if listed.returncode != 0:
        sys.exit(f"addr2line -e {binary}: {listed.stderr.strip()}")
    found, at = {}, None
    for line in listed.stdout.splitlines():
        if line.startswith("0x"):
            at = int(line, 16)
            continue
        if at is None or at in found:
            continue
        path = line.rsplit(":", 1)[0]
        if "/rustc/" in path or "/library/" in path or "/rust/deps/" in path:
            continue  # the standard library's (an atomic's, a pointer's): look further out
        if "malloc" in path:
            found[at] = "allocator"
        elif "/tokio-" in path:
            found[at] = "tokio: " + path.rsplit("/tokio-", 1)[1].split("/src/", 1)[-1]
        elif "/registry/" in path or "index.crates.io" in path:
            continue  # another crate's: look further out
        else:
            ours = re.search(r"/((?:core|macros|benches|cli)/src/.*|src/.*)$", path)
            if ours:
                found[at] = ours.group(1)
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    misses, owner = parse(sys.argv[1], events=("DLmr", "DLmw"))
    calls = float(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    print(f"{sum(misses.values()) / calls:.2f} last-level data misses per call")
    by_function = collections.Counter()
    for address, n in misses.items():
        by_function[owner[address]] += n
    for function, n in by_function.most_common(top):
        print(f"{n / calls:7.3f}  {function}")
    if len(sys.argv) > 4:
        binary = sys.argv[4]
        inside = set(in_binary(misses, binary))
        found = where(binary, sorted(address for _, address in inside))
        by_file = collections.Counter()
        for (obj, address), n in misses.items():
            if (obj, address) in inside:
                by_file[found.get(address, "elsewhere in the binary")] += n
            else:
                by_file[f"shared library {obj}"] += n
        print("by source file:")
        for file, n in by_file.most_common(top):
            print(f"{n / calls:7.3f}  {file}")


if __name__ == "__main__":
    main()
