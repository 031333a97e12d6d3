#!/usr/bin/env bash
# Attack drivers (not part of CI): build this tree in release and run every attack of
# examples/attack.rs against its conformance_peer and tcp_server, printing one table row per
# attack (bytes sent, the target's peak memory, what happened). Given a commit (say the one
# before a fix), the same attacks run against that commit's build first, for a before/after
# pair: it is checked out in a temporary worktree under target/, with this tree's attack driver.
# Linux only (peak memory is VmHWM from /proc). The unbounded builds need ~1 GiB and minutes.
# Usage: scripts/attack.sh [COMMIT] [attack args, e.g. --only batch,streams]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
examples=(--example attack --example conformance_peer --example tcp_server)
run() { # $1: a release examples directory; the rest: attack args
    local dir=$1
    shift
    "$dir/attack" --peer "$dir/conformance_peer" --server "$dir/tcp_server" "$@"
}
if [[ $# -gt 0 && $1 != --* ]]; then
    commit=$1
    shift
    src="$root/target/attack-base-src"
    git worktree remove --force "$src" 2>/dev/null || true
    git worktree add --detach --quiet "$src" "$commit"
    trap 'git -C "$root" worktree remove --force "$src"' EXIT
    cp examples/attack.rs "$src/examples/attack.rs"
    (cd "$src" && CARGO_TARGET_DIR="$root/target/attack-base" cargo build --quiet --release "${examples[@]}")
    echo "## before: $(git log -1 --format='%h %s' "$commit")"
    echo
    run "$root/target/attack-base/release/examples" "$@"
    echo
fi
cargo build --quiet --release "${examples[@]}"
echo "## after: $(git log -1 --format='%h %s') (this tree)"
echo
run "$root/target/release/examples" "$@"
