#!/usr/bin/env bash
# Run every fuzz target for SECONDS each (default 60), one after another, and print the executions
# per target. Usage: fuzz/run.sh [SECONDS] [TARGET...]
# FUZZ_SECONDS=S runs S seconds each instead of SECONDS (the README's test runs `fuzz/run.sh 180`
# that way, for a second each).
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). Runs on the stable toolchain: no sanitizer by
# default (the code under test forbids `unsafe`; an allocation guard in each target catches memory
# beyond the limits). FUZZ_SANITIZER=address (or another) turns one on; on stable that needs
# nightly-only flags, allowed here with RUSTC_BOOTSTRAP=1.
# New corpus entries go to fuzz/corpus/TARGET (not committed), seeds are read from
# fuzz/seeds/TARGET (committed), crashes land in fuzz/artifacts/TARGET.
set -uo pipefail
cd "$(dirname "$0")"
SECONDS_EACH="${FUZZ_SECONDS:-${1:-60}}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(frame_content_length frame_newline parse_message connection)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi
SANITIZER="${FUZZ_SANITIZER:-none}"
if [ "$SANITIZER" != none ] && ! rustc --version | grep -q nightly; then
    export RUSTC_BOOTSTRAP=1
fi
FLAGS=(--sanitizer "$SANITIZER" -O)
# FUZZ_NO_TRACE_COMPARES=1: no comparison tracing (cargo-fuzz's --no-trace-compares), about 1.8x
# the executions of the connection target per CPU-second, with less guidance through comparisons.
if [ "${FUZZ_NO_TRACE_COMPARES:-0}" = 1 ]; then
    FLAGS+=(--no-trace-compares)
fi
cargo fuzz build "${FLAGS[@]}" || exit 2

failed=0
summary=""
for t in "${TARGETS[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    log="artifacts/$t/last-run.log"
    echo "== $t for ${SECONDS_EACH}s" >&2
    cargo fuzz run "${FLAGS[@]}" "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    if [ $rc -ne 0 ]; then
        failed=1
        summary+="$t: FAILED (exit $rc) after ${execs:-?} executions, ${cov:-?}; see $log and artifacts/$t/"$'\n'
    else
        summary+="$t: ${execs:-?} executions in ${SECONDS_EACH}s, ${cov:-?}, corpus $(ls "corpus/$t" | wc -l) entries"$'\n'
    fi
done
printf '%s' "$summary"
exit $failed
