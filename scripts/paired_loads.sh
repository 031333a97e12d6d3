#!/usr/bin/env bash
# Compare builds of our server by the connections bench's load, paired by round (not part of
# CI). One load's CPU per call moves more between runs on this machine than the difference
# between two builds; a round runs every server's load back to back, so what moved the machine
# meanwhile moves all of them, and the median of the rounds' own ratios leaves it out.
#
# Usage: scripts/paired_loads.sh ROUNDS NAME=BINARY [NAME=BINARY...]
#   BINARY: a build of the connections bench (`cargo bench -p jsonrpc-duplex-benches --bench
#   connections --no-run` prints its path; copy it aside before building the next one).
#   Each round runs `BINARY --serve ours` for every NAME in turn, then the first binary's
#   `--serve handwritten` (as NAME `hand`), each load `CONNECTIONS` connections (default 1000)
#   × `CALLS` calls (default 1000), 8 in flight on each.
# Prints each server's medians (calls/s, CPU µs per call, of it user space and kernel), then the
# median of the rounds' ratios of each build to the hand-written server and to the first build,
# with its 95% interval (the ranks of the binomial's tails). The servers' order turns by one
# each round.
set -euo pipefail
if [ $# -lt 2 ]; then
    sed -n '2,16p' "$0" >&2
    exit 2
fi
rounds="$1"
shift
for named in "$@"; do
    if [ "${named%%=*}" = hand ] || [ "${named#*=}" = "$named" ]; then
        echo "paired_loads.sh: '$named' is not NAME=BINARY with a NAME other than hand (the hand-written server's)" >&2
        exit 2
    fi
done
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
first="${1#*=}"
servers=("$@" "hand=$first")
for r in $(seq 1 "$rounds"); do
    # Each round starts one server later than the round before, so that no server always runs
    # first (or right after a given other one) in its round.
    for i in $(seq 0 $((${#servers[@]} - 1))); do
        named="${servers[$(((i + r - 1) % ${#servers[@]}))]}"
        name="${named%%=*}"
        binary="${named#*=}"
        kind=ours
        if [ "$name" = hand ]; then kind=handwritten; fi
        CONNECTIONS="${CONNECTIONS:-1000}" ROUNDS=0 CALLS="${CALLS:-1000}" "$binary" --serve "$kind" |
            awk -v name="$name" -v round="$r" '
                $1 == "figure" { value[$2] = $3 }
                END {
                    print name, round, value["calls_per_s"], value["cpu_us_per_call"],
                        value["user_us_per_call"], value["sys_us_per_call"]
                }' >> "$out"
    done
    echo "round $r of $rounds done" >&2
done
python3 - "$out" "${1%%=*}" <<'PY'
import collections
import math
import statistics
import sys

def interval_rank(n):
    """The k for which the k-th smallest and the k-th largest of n ratios bound their median
    with at least 95% chance, whatever their distribution (the binomial's tails, as the
    connections bench's `median_interval`); 0 when n is too small for any."""
    k, tail = 0, 0.0
    while True:
        tail += math.comb(n, k) / 2**n
        if 2 * tail > 0.05:
            return k
        k += 1


runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    name, round_, *values = line.split()
    runs[name][round_] = [float(v) for v in values]
first = sys.argv[2]
figures = ["calls/s", "CPU µs/call", "user µs/call", "kernel µs/call"]
for name, by_round in runs.items():
    medians = [statistics.median(column) for column in zip(*by_round.values())]
    print(f"{name:>12} ({len(by_round)} loads): " + ", ".join(f"{f} {m:.3f}" for f, m in zip(figures, medians)))
for name in runs:
    for other in ("hand", first):
        if other == name or name == "hand":
            continue
        rounds = sorted(set(runs[name]) & set(runs[other]))
        # A load too short for `/proc`'s 10 ms ticks reports no user or kernel time: no ratio.
        cells = []
        for i in range(4):
            ratios = sorted(runs[name][r][i] / runs[other][r][i] for r in rounds if runs[other][r][i] and runs[name][r][i])
            if not ratios:
                cells.append(f"{figures[i]} nan")
                continue
            cell = f"{figures[i]} {statistics.median(ratios):.3f}"
            k = interval_rank(len(ratios))
            if k:
                cell += f" ({ratios[k - 1]:.3f}-{ratios[len(ratios) - k]:.3f})"
            cells.append(cell)
        print(f"{name:>12} ÷ {other}, median of {len(rounds)} rounds' ratios (95% interval): " + ", ".join(cells))
PY
