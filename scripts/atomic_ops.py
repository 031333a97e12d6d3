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
import sys

from code_lines import in_binary, listing, parse


def is_atomic(instruction):
    """A read-modify-write that locks: `lock`-prefixed, or an `xchg` with a memory operand
    (locked whether or not it says so)."""
    return instruction.startswith("lock ") or (instruction.startswith("xchg") and "(" in instruction)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    counts, owner = parse(sys.argv[1])
    binary, calls = sys.argv[2], float(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    atomic = {address for address, (_, text) in listing(binary).items() if is_atomic(text)}
    per_function = collections.Counter()
    for obj, address in in_binary(counts, binary):
        if address in atomic:
            per_function[owner[(obj, address)]] += counts[(obj, address)]
    print(f"{sum(per_function.values()) / calls:.1f} atomic read-modify-write instructions per call in "
          f"{os.path.basename(binary)}")
    for function, n in per_function.most_common(top):
        print(f"{n / calls:7.2f}  {function}")


if __name__ == "__main__":
    main()
