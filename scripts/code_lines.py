#!/usr/bin/env python3
"""How much machine code a process runs often: the distinct 64-byte lines of instructions that a
callgrind profile (`--dump-instr=yes`) counts at least THRESHOLD times, in all and per function.

    code_lines.py CALLGRIND_OUT THRESHOLD [TOP] [BINARY]

With THRESHOLD a tenth of the calls a load made, the lines are the code that runs about once per
call or per read of a batch: what the first-level instruction cache must hold for the load to run
from it (32 KiB, 512 lines, on the machines these benches run on). For the connections bench's
servers, for instance:

    CONNECTIONS=100 ROUNDS=0 LOAD_CONNECTIONS=100 CALLS=300 valgrind --tool=callgrind \\
        --dump-instr=yes --callgrind-out-file=ours.out target/release/deps/connections-HASH --serve ours
    scripts/code_lines.py ours.out 3000

(100 connections × 300 calls: 30,000 calls, a tenth of them 3,000). Prints the total; how the
lines fill the sets of a first-level instruction cache like this host's (32 KiB, 8 ways: the
lines in sets holding more than 8 of them, about the misses a pass over them makes); then the TOP
functions (default 40) by lines, each with all the instructions it ran divided by THRESHOLD (with
THRESHOLD a tenth of the calls, ten times its instructions per call). Given the profiled BINARY
as well, it also prints how much of those lines the often-run instructions fill: their bytes
(each instruction's length from `objdump -d`, so the binary's own code only, shared libraries
aside) against the lines they lie in; the rest of each line is code of rarer branches or of other
functions. Then, per function, the lines it runs beyond what its often-run bytes would fill laid
together: where a split of rare code from often-run code would save the most. Not part of CI.
"""
import collections
import os
import re
import subprocess
import sys

# A cost line: the instruction's address (absolute, relative to the previous one, or `*` for
# the same), the source line if the profile has positions for it too (likewise), then the event
# counts, in the order of the profile's `events:` line.
COST = re.compile(r"^(0x[0-9a-fA-F]+|[+-]\d+|\*)((?:\s+[+-]?\d+|\s+\*)*)\s*$")
# A name, given in full with its number the first time and by its number after: `ob=` and `fn=`
# name the object (executable or shared library) and the function of the cost lines that follow,
# `cob=` and `cfn=` a call's target (either may be where a number is first given its name).
NAMED = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")


def parse(path, events=("Ir",)):
    """The sum of `events` (instructions executed, by default) per address, and the function
    each address belongs to. An address is a pair (object, address in it): callgrind gives a
    position-independent object's addresses from the object's start, so the executable's and a
    shared library's can be equal. Exits if the profile counts none of `events`."""
    names, current = {"ob": {}, "fn": {}}, {"ob": None, "fn": None}
    counted, positions = [], ["instr", "line"]
    last, inclusive_next = 0, False
    counts, owner = collections.Counter(), {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("events:"):
                counted = [i for i, name in enumerate(line.split()[1:]) if name in events]
                if not counted:
                    sys.exit(f"{path}: the profile counts none of {', '.join(events)}")
                continue
            if line.startswith("positions:"):
                positions = line.split()[1:]
                continue
            named = NAMED.match(line)
            if named:
                callee, kind, key, name = named.groups()
                if name is not None:
                    names[kind][key] = name
                if not callee:
                    current[kind] = names[kind].get(key, key)
                continue
            if line.startswith("calls="):
                # The next cost line is the call's inclusive cost, at the call instruction.
                inclusive_next = True
                continue
            cost = COST.match(line)
            if not cost:
                continue
            position = cost.group(1)
            if position.startswith("0x"):
                last = int(position, 16)
            elif position != "*":
                last += int(position)
            if inclusive_next:
                inclusive_next = False
                continue
            values = cost.group(2).split()[len(positions) - 1:]
            n = sum(int(values[i]) for i in counted if i < len(values))
            if n:
                counts[(current["ob"], last)] += n
                owner[(current["ob"], last)] = current["fn"]
    return counts, owner


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    counts, owner = parse(sys.argv[1])
    threshold = int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    hot = [address for address, n in counts.items() if n >= threshold]
    lines = collections.defaultdict(set)
    for obj, address in hot:
        lines[owner[(obj, address)]].add((obj, address // 64))
    executed = collections.Counter()
    for address, n in counts.items():
        executed[owner[address]] += n
    total = {(obj, address // 64) for obj, address in hot}
    print(f"{len(total)} lines ({len(total) * 64 / 1024:.1f} KiB) run at least {threshold} times; "
          f"instructions in all / {threshold}: {sum(counts.values()) / threshold:.0f}")
    print_sets(total)
    for function, its in sorted(lines.items(), key=lambda kv: -len(kv[1]))[:top]:
        print(f"{len(its):4} lines {executed[function] / threshold:8.0f} instructions / {threshold}  {function}")
    if len(sys.argv) > 4:
        print_fill(sys.argv[4], set(hot), owner, top)


# This host's first-level instruction cache: 32 KiB of 64-byte lines, 8 ways, so 64 sets, a
# line's set given by bits 6 to 11 of its address (within the page: an object is mapped at a page
# boundary, so its offsets give the same sets as the addresses it ran at).
SETS, WAYS = 64, 8


def print_sets(total):
    """How the lines fill the cache's sets: a load that runs each of them in turn, as a call's
    code is, misses every line of a set that holds more than WAYS of them (least recently used
    out, a cycle longer than the set), on every pass. Their count is about the first-level
    instruction misses a pass that callgrind's `--cache-sim=yes` counts (newline row A: 421
    lines against 324 misses a call for the loop's pair, 617 against 624 for ours)."""
    per_set = collections.Counter(line % SETS for _, line in total)
    over = [n for n in per_set.values() if n > WAYS]
    print(f"by set of a {SETS * WAYS * 64 // 1024} KiB {WAYS}-way cache: {len(over)} of {SETS} sets hold more "
          f"than {WAYS} of these lines, {sum(over)} lines in them (the most in one set: "
          f"{max(per_set.values(), default=0)})")


# A line of `objdump -d`: an address, the bytes there, then the instruction (which a line that
# only continues the bytes of a long one lacks).
LISTED = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{2}(?: [0-9a-f]{2})*) *(\t.*)?$")


def listing(binary):
    """The instructions `objdump -d` lists in `binary`: each one's address → [its length in
    bytes, its text]."""
    listed = subprocess.run(["objdump", "-d", binary], capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit(f"objdump -d {binary}: {listed.stderr.strip()}")
    instructions, last = {}, None
    for m in map(LISTED.match, listed.stdout.splitlines()):
        if not m:
            continue
        n = len(m.group(2).split())
        if m.group(3) is None and last is not None:
            instructions[last][0] += n
        else:
            last = int(m.group(1), 16)
            instructions[last] = [n, (m.group(3) or "").strip()]
    if not instructions:
        sys.exit(f"{binary}: objdump -d lists no instructions")
    return instructions


def in_binary(addresses, binary):
    """Those of a profile's `(object, address)` pairs that lie in `binary` (an object of its file
    name); exits if there are none."""
    name = os.path.basename(binary)
    inside = [(obj, address) for obj, address in addresses if obj is not None and os.path.basename(obj) == name]
    if not inside:
        sys.exit(f"{binary}: the profile has no code counted in an object of that file name (give the binary "
                 "by the name it ran under, not a copy's)")
    return inside


def print_fill(binary, hot, owner, top):
    """The bytes of the `hot` instructions found in `binary`, against the lines they lie in; then
    the TOP functions by lines beyond what their often-run bytes would fill if they lay together
    (`owner`: each address's function): where rarer code lies among the often-run code."""
    length = {address: n for address, (n, _) in listing(binary).items()}
    inside = in_binary(hot, binary)
    missed = sum(address not in length for _, address in inside)
    if missed > len(inside) // 100:
        sys.exit(f"{binary}: {missed} of the profile's {len(inside)} often-run addresses in it are not "
                 "instructions there: not the profiled build")
    used, lines = 0, set()
    per_function = collections.defaultdict(lambda: [0, set()])
    for obj, address in inside:
        if address in length:
            used += length[address]
            lines.add(address // 64)
            its = per_function[owner[(obj, address)]]
            its[0] += length[address]
            its[1].add(address // 64)
    print(f"in {binary}: {used} bytes of those instructions in {len(lines)} of the lines "
          f"({used / (len(lines) * 64):.0%} of each line; {-(-used // 64)} lines if they lay together)")
    beyond = {f: len(ls) - -(-b // 64) for f, (b, ls) in per_function.items()}
    print(f"lines beyond their often-run bytes, by function (in all: {sum(beyond.values())}):")
    for function, n in sorted(beyond.items(), key=lambda kv: -kv[1])[:top]:
        b, ls = per_function[function]
        print(f"{n:4} beyond {len(ls):4} lines {b:6} bytes  {function}")


if __name__ == "__main__":
    main()
