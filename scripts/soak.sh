#!/usr/bin/env bash
# Soak test (not part of CI): mixed load on two connections for MINUTES (default 3), printing
# memory (VmRSS), live tasks and latency percentiles every REPORT_SECS (default 10), then start
# and end memory. Exits non-zero if anything went wrong (see examples/soak.rs).
# SOAK_SECONDS=S runs S seconds instead of MINUTES (the README's test runs `scripts/soak.sh 3`
# that way, for a few seconds).
# Usage: scripts/soak.sh [MINUTES] [extra soak args, e.g. --framing newline]
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-3}"
shift || true
if [ -n "${SOAK_SECONDS:-}" ]; then
    DURATION=(--seconds "$SOAK_SECONDS")
else
    DURATION=(--minutes "$MINUTES")
fi
# Built with the features of the README's other release example (`cargo run --release
# --features mcp-http --example mcp_http_attack`), so that the two share one release build. The
# soak needs only the default features, but built with those alone it would build the core, the
# facade and the dependencies the examples share in release a second time.
exec cargo run --quiet --release --features mcp-http --example soak -- \
    "${DURATION[@]}" --report-secs "${REPORT_SECS:-10}" "$@"
