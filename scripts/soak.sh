#!/usr/bin/env bash
# Soak test (not part of CI): mixed load on two connections for MINUTES (default 3), printing
# memory (VmRSS), live tasks and latency percentiles every REPORT_SECS (default 10), then start
# and end memory. Exits non-zero if anything went wrong (see examples/soak.rs).
# Usage: scripts/soak.sh [MINUTES] [extra soak args, e.g. --framing newline]
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-3}"
shift || true
exec cargo run --quiet --release --example soak -- --minutes "$MINUTES" --report-secs "${REPORT_SECS:-10}" "$@"
