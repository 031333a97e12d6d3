#!/usr/bin/env bash
# Model-check the hand-offs between tasks with loom (see ARCHITECTURE.md, "Checking the
# hand-offs"): core/src/sync's primitives become loom's under --cfg jsonrpc_duplex_loom, and the
# loom_ models of the lane, the outbound queue (its turns, and the lazily made waits of its
# senders: loom_outbound_waits_*), the request permits, the lifecycle, the pending-call table
# (with its lazily made slot wake-up and abandoned-ids memory), a hook's state for one
# request (loom_baton_*), a server's count of running handlers (loom_gate_*), the count of
# messages handled that a call after notifications waits for (loom_settle_*) and what a
# connection keeps for its handlers (loom_locals_*) run every interleaving of small runs, up to
# LOOM_MAX_PREEMPTIONS preemptions (2 by default, about 10 s once built; 3 takes minutes).
# A separate target directory keeps the normal build's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export RUSTFLAGS="--cfg jsonrpc_duplex_loom"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
exec cargo test -p jsonrpc-duplex-core --lib --release loom_
