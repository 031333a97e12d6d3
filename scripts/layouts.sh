#!/usr/bin/env bash
# The compare bench over several link layouts (not part of CI): a ratio to the hand-written
# loop that one build gives can be that build's luck, since where the linker puts each
# function decides which of them share first-level instruction-cache sets, for our code and
# for the loop's alike (the same source read 0.95 or 1.045 of the loop by how it was built).
# This builds the bench once, links it LAYOUTS times with rust-lld shuffling its functions'
# sections (`--shuffle-sections`, seeds 1 to LAYOUTS), runs each layout RUNS times in turn, and
# prints, for each table and row A to D, the median ratio over every run and the range of the
# layouts' own medians (`compare --summarize`).
#
# Usage: scripts/layouts.sh [LAYOUTS (default 6)] [RUNS (default 3)]
# COMPARE_ONLY (default duplex-nl), COMPARE_WORKERS, COMPARE_REPS and COMPARE_MODES go to every
# run (with COMPARE_MODES=1 the summary has row A by mode as well).
# Needs rust-lld, which rustup's toolchains ship (`rustc --print sysroot`/lib/rustlib/HOST/bin/
# gcc-ld), and a Unix C compiler driver (`cc`) that takes `-fuse-ld=lld`. It shares
# target/release with `cargo bench`: only the compare bench itself is compiled again, to a file of
# its own there (the linker is given to that one crate, so no dependency is rebuilt); its relinks
# and runs live in target/layouts.
set -euo pipefail
cd "$(dirname "$0")/.."
LAYOUTS="${1:-6}"
RUNS="${2:-3}"
export COMPARE_ONLY="${COMPARE_ONLY:-duplex-nl}"
host="$(rustc -vV | sed -n 's/^host: //p')"
gcc_ld="$(rustc --print sysroot)/lib/rustlib/$host/bin/gcc-ld"
if [ ! -x "$gcc_ld/ld.lld" ]; then
    echo "layouts.sh: no rust-lld at $gcc_ld/ld.lld (rustup's toolchains ship it)" >&2
    exit 2
fi
target="${CARGO_TARGET_DIR:-$PWD/target}"
dir="$target/layouts"
mkdir -p "$dir/objects" "$dir/runs"
rm -f "$dir"/runs/out.*

# The linker: lld, the sections shuffled when LAYOUT_SEED is set. When it links the compare
# bench for cargo it keeps that link's objects (rustc deletes them afterwards) and its
# arguments, with the kept objects' paths, for the relinks.
# Named as rustc takes a C compiler driver (a name like `link` or `ld` gets other flags).
linker="$dir/cc-layouts.sh"
cat > "$linker" <<EOF
#!/usr/bin/env bash
set -euo pipefail
extra=()
if [ -n "\${LAYOUT_SEED:-}" ]; then extra=("-Wl,--shuffle-sections=*=\$LAYOUT_SEED"); fi
if [ -z "\${LAYOUT_RELINK:-}" ] && printf '%s\n' "\$@" | grep -q '/compare-[0-9a-f]*\$'; then
    rm -f "$dir"/objects/*
    kept=()
    for arg in "\$@"; do
        if [[ "\$arg" == *.o && -f "\$arg" ]]; then
            cp "\$arg" "$dir/objects/"
            kept+=("$dir/objects/\$(basename "\$arg")")
        else
            kept+=("\$arg")
        fi
    done
    printf '%q ' "\${kept[@]}" > "$dir/objects/args"
fi
exec cc -fuse-ld=lld -B"$gcc_ld" "\${extra[@]}" "\$@"
EOF
chmod +x "$linker"

# Built with the bench profile, as `cargo bench` builds it. A build that links nothing (nothing
# changed since the last) leaves the objects kept then; if they are gone, the bench is removed
# and built once more, so that it is linked again.
build() {
    cargo rustc --profile bench -p jsonrpc-duplex-benches --bench compare \
        --message-format=json-render-diagnostics -- -C linker="$linker" |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p'
}
built="$(build)"
if [ ! -s "$dir/objects/args" ] && [ -n "$built" ]; then
    rm -f "$built"
    build > /dev/null
fi
if [ ! -s "$dir/objects/args" ]; then
    echo "layouts.sh: the compare bench was not linked through $linker" >&2
    exit 2
fi
for seed in $(seq 1 "$LAYOUTS"); do
    args="$(sed -E "s#-o [^ ]*/compare-[0-9a-f]* #-o $dir/compare.$seed #" "$dir/objects/args")"
    (cd benches && LAYOUT_RELINK=1 LAYOUT_SEED=$seed eval "\"$linker\" $args")
done
echo "[layouts] $LAYOUTS layouts × $RUNS runs of COMPARE_ONLY=$COMPARE_ONLY" >&2
for run in $(seq 1 "$RUNS"); do
    for seed in $(seq 1 "$LAYOUTS"); do
        "$dir/compare.$seed" --bench > "$dir/runs/out.$seed.$run" 2>/dev/null
        echo -n " $seed.$run" >&2
    done
done
echo >&2
"$dir/compare.1" --summarize "$dir"/runs/out.*
