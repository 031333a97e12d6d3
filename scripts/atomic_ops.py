#!/usr/bin/env python3
"""How many atomic read-modify-write instructions a process runs per call, in all and per
function: the `lock`-prefixed instructions and the `xchg` with memory (locked without the prefix)
of a binary, counted in a callgrind profile (`--dump-instr=yes`) of a load of CALLS calls.

    atomic_ops.py CALLGRIND_OUT BINARY CALLS [TOP]

An uncontended one costs far more than its one instruction: about 5.5-6 ns each in a loop on
the 2-vCPU AMD EPYC hosts these benches run on (a `std::sync::Mutex` lock and unlock, two of
them, about 12 ns), and it orders the memory accesses around it. For the connections bench's
servers, for instance (the docstring of `code_lines.py` has the profile's command):

    scripts/atomic_ops.py ours.out target/release/deps/connections-HASH 29600

(The compare bench's profile mode, `COMPARE_PROFILE=N`, makes N calls after a tenth of N more
to warm up: give CALLS as 1.1 N.)

Only the binary's own code is counted: a shared library's atomics (glibc's, when its allocator
takes an arena's lock) are not. Prints the total per call, then the TOP functions (default 30) by
atomic instructions per call. Not part of CI.
"""
import collections
import os
import re
import subprocess
import sys

from code_lines import parse

# A line of `objdump -d --no-show-raw-insn`: an address, then the instruction.
LISTED = re.compile(r"^\s*([0-9a-f]+):\s+(\S.*)$")


def atomic_addresses(binary):
    """The addresses of the binary's atomic read-modify-write instructions."""
    listed = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit(f"objdump -d {binary}: {listed.stderr.strip()}")
    found = set()
    for m in map(LISTED.match, listed.stdout.splitlines()):
        if not m:
            continue
        instruction = m.group(2)
        # `xchg` with a memory operand is locked whether or not it says so.
        if instruction.startswith("lock ") or (instruction.startswith("xchg") and "(" in instruction):
            found.add(int(m.group(1), 16))
    return found


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    counts, owner = parse(sys.argv[1])
    binary, calls = sys.argv[2], float(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    atomic = atomic_addresses(binary)
    name = os.path.basename(binary)
    per_function = collections.Counter()
    inside = 0
    for (obj, address), n in counts.items():
        if obj is None or os.path.basename(obj) != name:
            continue
        inside += n
        if address in atomic:
            per_function[owner[(obj, address)]] += n
    if inside == 0:
        sys.exit(f"{binary}: the profile ran no code of an object of that file name (give the binary by the "
                 "name it ran under, not a copy's)")
    print(f"{sum(per_function.values()) / calls:.1f} atomic read-modify-write instructions per call in {name}")
    for function, n in per_function.most_common(top):
        print(f"{n / calls:7.2f}  {function}")


if __name__ == "__main__":
    main()
