//! jsonrpc-duplex next to its peers and to a hand-written loop, every contender in this one
//! process, interleaved (each repetition runs every contender before the next repetition
//! starts, each row beginning with the next contender in turn, each timed run after a tenth of
//! its work untimed), medians of 5 repetitions after a warm-up (`COMPARE_REPS=N`: N instead;
//! row A runs three times a repetition, see [`A_RUNS`]):
//!
//! - A: sequential round trips (`add`), one caller: p50/p99 latency, calls/s, and heap
//!   allocations per call (both ends, every task);
//! - B: 64 calls in flight: calls/s;
//! - C: 100,000 one-way notifications until the receiver has handled all: msgs/s;
//! - D: echo of a 1 MiB string: MB/s, the payload counted both ways;
//! - E: a 1,000,000-item stream pulled to its end: items/s (where supported);
//! - F: 10,000 idle connected pairs, each after one call: heap bytes per pair, both ends.
//!
//! Tables: the headline (in-memory duplex, Content-Length, with jsonrpsee on its own WebSocket
//! transport beside it), the other link/framing combinations, and WebSocket on loopback.
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench compare`
//!
//! Environment: `COMPARE_QUICK=1` divides every size by 10 (`BENCH_QUICK=1` by 100, with one
//! repetition: a smoke run); `COMPARE_ONLY=headline,duplex-nl,
//! unix-cl,unix-nl,ws` picks tables; `COMPARE_PROFILE=N` runs only scenario A through `#[rpc]`
//! (duplex, Content-Length) for N calls and prints its figures (for callgrind or perf);
//! `COMPARE_PROFILE_SCENARIO=inflight|notify|echo|stream|idle` runs B, C, D, E or F instead, and
//! `COMPARE_PROFILE_WHO=core|hw` another contender, `COMPARE_PROFILE_FRAMING=newline` the other
//! framing, and with `core`, `COMPARE_PROFILE_LAYERS=trace|metrics|null` the layer on both ends
//! (the layers' cost in instructions per call under callgrind; `null`, a hook that does
//! nothing: what running a hook costs by itself; `COMPARE_PROFILE_LAYERS_AT=server|client` on
//! one end only); `COMPARE_PROFILE_SCENARIO=span` makes N calls' worth of bare spans under the
//! layer rows' registry, no connection (what the registry itself costs the tracing layer), and
//! `metrics-floor` the metrics layer's least work for N calls under its recorder (both print the
//! time a call). `COMPARE_PROFILE_SUBSCRIBER=null` puts a subscriber under the tracing layer
//! that enables its spans and records nothing (no span store, no field visited): the layer's own
//! instrumentation cost, without the registry's.
//! `COMPARE_PROFILE_RECORDER=noop` installs no metrics recorder (the metrics layer's own cost).
//! `COMPARE_WORKERS=1` runs the runtime on one worker thread instead of two (no hand-off between
//! cores: the work itself, without what crossing cores costs). `COMPARE_MODES=1` prints under each
//! table row A's calls split in two modes (`harness::Modes`): the share that were slow, and the
//! mean of each mode. `COMPARE_MIXED=1` adds two mixed pairs to the link tables (not the
//! headline): the loop's client against our `#[rpc]` server, and our client against the loop's
//! server (`ours::Mixed`), which tells the end a difference to the loop comes from; profile mode
//! runs them with `COMPARE_PROFILE_WHO=loop-client|loop-server`. Built with
//! `RUSTFLAGS="--cfg tokio_unstable"`, profile mode also prints what the runtime's workers did per
//! call of scenario A (steals, parks, wake-ups to nothing, polls from a run queue, local schedules).
//!
//! With the headline table comes the cost of the shipped middleware on row A (ours, core API,
//! duplex, Content-Length, the layer on both ends): no layer, the tracing layer (under a
//! `tracing-subscriber` registry that records its spans and nothing else), the metrics layer
//! (under metrics-util's in-memory recorder), each of the two on the server's end alone, and a
//! hook that keeps and does nothing (what running any hook costs, the layers' own work left
//! out) on both ends and on the server's alone, as ratios to no layer (`COMPARE_ONLY=layers`
//! runs it alone).

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonrpc_duplex::Framing;
use jsonrpc_duplex_benches::alloc::Counting;
use jsonrpc_duplex_benches::handwritten::Handwritten;
use jsonrpc_duplex_benches::harness::{Link, Live, Runner, Sequential, Tally, median, payload};
use jsonrpc_duplex_benches::ours::{Api, LayerEnds, Layers, LoopEnd, Mixed, Ours, Transport};
use jsonrpc_duplex_benches::peers::async_lsp::AsyncLsp;
use jsonrpc_duplex_benches::peers::jsonrpsee::Jsonrpsee;
use jsonrpc_duplex_benches::peers::tower_lsp::TowerLsp;
use tokio::runtime::Runtime;

#[global_allocator]
static ALLOC: Counting = Counting;

/// Repetitions per row (`COMPARE_REPS` overrides: a row A ratio swings by a few percent
/// between runs of 5 on two shared cores, and 25 pins it down).
fn reps() -> usize {
    let n = std::env::var("COMPARE_REPS").ok().and_then(|v| v.parse().ok()).filter(|&n: &usize| n > 0).unwrap_or(5);
    jsonrpc_duplex_benches::reps(n)
}

/// Row A's runs per repetition, each contender's in turn (every other row runs once). On a
/// virtual machine whose idle cores halt, about two in five of row A's runs (20,000 calls, 30 to
/// 60 ms each) fall into a spell that doubles their p50, for every contender alike (with two
/// workers; the runtime wakes the idle one every few calls, and for a while that costs more).
/// The median of 5 runs caught such a spell for one column and not the next often enough to
/// move a ratio by a quarter; the median of 15 seldom does.
const A_RUNS: usize = 3;

#[derive(Clone, Copy)]
struct Sizes {
    sequential: usize,
    in_flight: usize,
    width: usize,
    notifications: usize,
    echo_len: usize,
    echoes: usize,
    items: u64,
    idle: usize,
}

impl Sizes {
    fn new(quick: bool) -> Self {
        let d = if jsonrpc_duplex_benches::quick() {
            100
        } else if quick {
            10
        } else {
            1
        };
        Sizes {
            sequential: 20_000 / d,
            in_flight: 64_000 / d,
            width: 64,
            notifications: 100_000 / d,
            echo_len: 1 << 20,
            echoes: 40 / d.min(4),
            items: 1_000_000 / d as u64,
            idle: 10_000 / d,
        }
    }

    /// The warm-up repetition's sizes.
    fn warm_up(self) -> Self {
        Sizes {
            sequential: self.sequential / 4,
            in_flight: self.in_flight / 4,
            notifications: self.notifications / 4,
            echoes: (self.echoes / 4).max(1),
            items: self.items / 10,
            ..self
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Ours,
    Handwritten,
    Peer,
    /// One end ours, the other the loop's (`COMPARE_MIXED=1`): not a peer.
    Mixed,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Better {
    Lower,
    Higher,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Micros,
    Rate,
    Plain,
    Bytes,
}

const ROWS: [(&str, Better, Unit); 9] = [
    ("A sequential: p50 latency", Better::Lower, Unit::Micros),
    ("A sequential: p99 latency", Better::Lower, Unit::Micros),
    ("A sequential: calls/s", Better::Higher, Unit::Rate),
    ("A sequential: heap allocations per call", Better::Lower, Unit::Plain),
    ("B 64 in flight: calls/s", Better::Higher, Unit::Rate),
    ("C notifications: msgs/s", Better::Higher, Unit::Rate),
    ("D echo 1 MiB: MB/s (both ways)", Better::Higher, Unit::Plain),
    ("E stream of 1,000,000: items/s", Better::Higher, Unit::Rate),
    ("F idle pair: heap bytes each", Better::Lower, Unit::Bytes),
];

struct Column {
    role: Role,
    runner: Box<dyn Runner>,
    /// Per row, one sample per repetition (None: not supported or not run).
    samples: Vec<Vec<Option<f64>>>,
    /// Pairs opened for F.
    idle: usize,
    /// Row A's modes, one sample per run: slow share, fast mean and slow mean in µs
    /// (`COMPARE_MODES`).
    modes: [Vec<f64>; 3],
}

struct Table {
    key: &'static str,
    title: String,
    notes: Vec<String>,
    columns: Vec<Column>,
    streams: bool,
    idle: bool,
}

/// A switch in the environment: on when set, and neither empty nor `0`.
fn knob(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn column(role: Role, runner: Box<dyn Runner>, idle: usize) -> Column {
    Column { role, runner, samples: vec![Vec::new(); ROWS.len()], idle, modes: Default::default() }
}

fn ours(rt: &Runtime, name: &str, api: Api, transport: Transport, sizes: Sizes) -> Column {
    let tally = Tally::new();
    let contender = rt.block_on(Ours::new(api, transport, tally.clone()));
    let idle = if transport == Transport::WebSocket { tcp_idle_pairs(sizes.idle) } else { sizes.idle };
    column(Role::Ours, Live::start(rt, name, contender, tally), idle)
}

fn handwritten(rt: &Runtime, link: Link, framing: Framing, sizes: Sizes) -> Column {
    let tally = Tally::new();
    let contender = Handwritten { link, framing, tally: tally.clone() };
    column(Role::Handwritten, Live::start(rt, "hand-written", contender, tally), sizes.idle)
}

/// The two mixed pairs, `#[rpc]` against the loop (`COMPARE_MIXED=1`).
fn mixed(rt: &Runtime, link: Link, framing: Framing, sizes: Sizes) -> [Column; 2] {
    [(LoopEnd::Client, "loop client, our server"), (LoopEnd::Server, "our client, loop server")].map(|(end, name)| {
        let tally = Tally::new();
        let contender = rt.block_on(Mixed::new(Api::Macro, link, framing, end, tally.clone()));
        column(Role::Mixed, Live::start(rt, name, contender, tally), sizes.idle)
    })
}

fn async_lsp(rt: &Runtime, link: Link, sizes: Sizes) -> Column {
    let tally = Tally::new();
    column(Role::Peer, Live::start(rt, "async-lsp 0.2", AsyncLsp { link, tally: tally.clone() }, tally), sizes.idle)
}

fn tower_lsp(rt: &Runtime, link: Link, sizes: Sizes) -> Column {
    let tally = Tally::new();
    let contender = TowerLsp { link, tally: tally.clone() };
    column(Role::Peer, Live::start(rt, "tower-lsp-server 0.23 ¹", contender, tally), sizes.idle)
}

fn jsonrpsee(rt: &Runtime, sizes: Sizes) -> Column {
    let tally = Tally::new();
    let contender = rt.block_on(Jsonrpsee::new(tally.clone(), sizes.items as usize));
    column(Role::Peer, Live::start(rt, "jsonrpsee 0.26 (WebSocket) ²", contender, tally), tcp_idle_pairs(sizes.idle))
}

/// Connected pairs for F over loopback TCP: two descriptors each, within the open-files limit.
fn tcp_idle_pairs(wanted: usize) -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let limit = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1024);
    wanted.min(limit.saturating_sub(512) / 2)
}

fn tables(rt: &Runtime, sizes: Sizes, only: &[String]) -> Vec<Table> {
    let wanted = |key: &str| only.is_empty() || only.iter().any(|o| o == key);
    let mut tables = Vec::new();
    let cl = Framing::ContentLength;
    let nl = Framing::NewlineDelimited;
    let footnotes = vec![
        "¹ tower-lsp-server has no client side: its client end is the hand-written client (after the `initialize` handshake it requires); default settings (4 requests at once).".to_owned(),
        "² jsonrpsee runs over its own transport, WebSocket on loopback TCP (both ends in this process), not over the duplex; its ratio to the hand-written loop compares across transports.".to_owned(),
    ];
    if wanted("headline") {
        let link = Link::Duplex;
        let tcp_pairs = tcp_idle_pairs(sizes.idle);
        let mut notes = footnotes.clone();
        if tcp_pairs < sizes.idle {
            notes.push(format!(
                "F for jsonrpsee: {tcp_pairs} pairs (two descriptors each within the open-files limit)."
            ));
        }
        tables.push(Table {
            key: "headline",
            title: format!("{}, Content-Length framing", link.label()),
            notes,
            columns: vec![
                ours(rt, "ours #[rpc]", Api::Macro, Transport::Link(link, cl), sizes),
                ours(rt, "ours core API", Api::Core, Transport::Link(link, cl), sizes),
                handwritten(rt, link, cl, sizes),
                async_lsp(rt, link, sizes),
                tower_lsp(rt, link, sizes),
                jsonrpsee(rt, sizes),
            ],
            streams: true,
            idle: true,
        });
    }
    for (key, link, framing) in
        [("duplex-nl", Link::Duplex, nl), ("unix-cl", Link::UnixPair, cl), ("unix-nl", Link::UnixPair, nl)]
    {
        if !wanted(key) {
            continue;
        }
        let framing_name = if framing == cl { "Content-Length" } else { "newline-delimited" };
        let mut columns = vec![
            ours(rt, "ours #[rpc]", Api::Macro, Transport::Link(link, framing), sizes),
            ours(rt, "ours core API", Api::Core, Transport::Link(link, framing), sizes),
            handwritten(rt, link, framing, sizes),
        ];
        let mut notes = Vec::new();
        if knob("COMPARE_MIXED") {
            columns.extend(mixed(rt, link, framing, sizes));
            notes.push(
                "Mixed pairs: the hand-written loop's client against our `#[rpc]` server, and ours against its server."
                    .to_owned(),
            );
        }
        if framing == cl {
            columns.push(async_lsp(rt, link, sizes));
            columns.push(tower_lsp(rt, link, sizes));
            notes.push(footnotes[0].clone());
        } else {
            notes.push("async-lsp and tower-lsp-server speak Content-Length only.".to_owned());
        }
        notes.push("E and F are measured in the headline table only.".to_owned());
        tables.push(Table {
            key,
            title: format!("{}, {framing_name} framing", link.label()),
            notes,
            columns,
            streams: false,
            idle: false,
        });
    }
    if wanted("ws") {
        let tcp_pairs = tcp_idle_pairs(sizes.idle);
        let mut notes = vec![
            "Like for like on jsonrpsee's transport: one message per WebSocket text frame, both ends in this process. No hand-written column here.".to_owned(),
        ];
        if tcp_pairs < sizes.idle {
            notes.push(format!("F: {tcp_pairs} pairs (two descriptors each within the open-files limit)."));
        }
        tables.push(Table {
            key: "ws",
            title: "WebSocket on loopback TCP".to_owned(),
            notes,
            columns: vec![
                ours(rt, "ours #[rpc] (WebSocket)", Api::Macro, Transport::WebSocket, sizes),
                ours(rt, "ours core API (WebSocket)", Api::Core, Transport::WebSocket, sizes),
                jsonrpsee(rt, sizes),
            ],
            streams: true,
            idle: true,
        });
    }
    tables
}

fn record(col: &mut Column, row: usize, keep: bool, value: Option<f64>) {
    if keep {
        col.samples[row].push(value);
    }
}

fn measure(rt: &Runtime, table: &mut Table, sizes: Sizes, text: &Arc<str>) {
    let n = table.columns.len();
    for rep in 0..=reps() {
        let keep = rep > 0;
        let s = if keep { sizes } else { sizes.warm_up() };
        // Each repetition starts every row with the next column: no contender is always the
        // one measured just after another row's work (a column always first lost 10 to 15% of
        // row A's calls/s to what the 1 MiB echoes before it left, whoever it was).
        // Each timed run follows a tenth of its work untimed: row A's 20,000 calls take about
        // 30 ms, and the first milliseconds after another contender's run (the heap growing
        // back, the other core waking, tasks placed anew) would count in them (a stream of
        // 1,000,000 items through #[rpc] read 3.2M or 3.8M items/s by which contender ran just
        // before it, 3.75-3.84M after the untimed tenth).
        let tenth = |n: usize| (n / 10).max(1);
        for pass in 0..A_RUNS {
            // Each pass starts with the next column too.
            for k in 0..n {
                let col = &mut table.columns[(k + rep + pass) % n];
                col.runner.sequential(rt, tenth(s.sequential));
                let a: Sequential = col.runner.sequential(rt, s.sequential);
                record(col, 0, keep, Some(a.p50.as_secs_f64() * 1e6));
                record(col, 1, keep, Some(a.p99.as_secs_f64() * 1e6));
                record(col, 2, keep, Some(a.per_sec));
                record(col, 3, keep, Some(a.allocs_per_call));
                if keep {
                    let m = a.modes;
                    let runs = [m.slow_share, m.fast_mean.as_secs_f64() * 1e6, m.slow_mean.as_secs_f64() * 1e6];
                    col.modes.iter_mut().zip(runs).for_each(|(s, v)| s.push(v));
                }
            }
        }
        let order: Vec<usize> = (0..n).map(|k| (k + rep) % n).collect();
        let mut in_turn = |f: &mut dyn FnMut(&mut Column)| order.iter().for_each(|&i| f(&mut table.columns[i]));
        in_turn(&mut |col| {
            col.runner.in_flight(rt, tenth(s.in_flight), s.width);
            let b = col.runner.in_flight(rt, s.in_flight, s.width);
            record(col, 4, keep, Some(b));
        });
        in_turn(&mut |col| {
            col.runner.notifications(rt, tenth(s.notifications));
            let c = col.runner.notifications(rt, s.notifications);
            record(col, 5, keep, Some(c));
        });
        in_turn(&mut |col| {
            col.runner.echo(rt, text.clone(), tenth(s.echoes));
            let d = col.runner.echo(rt, text.clone(), s.echoes);
            record(col, 6, keep, Some(d));
        });
        if table.streams {
            in_turn(&mut |col| {
                col.runner.stream(rt, tenth(s.items as usize) as u64);
                let e = col.runner.stream(rt, s.items);
                record(col, 7, keep, e);
            });
        }
        if table.idle && keep {
            in_turn(&mut |col| {
                let f = col.runner.idle(rt, col.idle);
                record(col, 8, keep, Some(f));
            });
        }
        if rep == 0 {
            eprint!("[{}] warm-up", table.key);
        } else {
            eprint!(" {rep}");
        }
    }
    eprintln!();
}

fn fmt_value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Micros => {
            if v < 10.0 {
                format!("{v:.1} µs")
            } else {
                format!("{v:.0} µs")
            }
        }
        Unit::Rate => {
            if v >= 1e6 {
                format!("{:.2}M", v / 1e6)
            } else if v >= 1e3 {
                format!("{:.0}k", v / 1e3)
            } else {
                format!("{v:.0}")
            }
        }
        Unit::Plain => {
            if v < 100.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.0}")
            }
        }
        Unit::Bytes => {
            if v >= 10.0 * 1024.0 {
                format!("{:.0} KiB", v / 1024.0)
            } else if v >= 1024.0 {
                format!("{:.1} KiB", v / 1024.0)
            } else {
                format!("{v:.0} B")
            }
        }
    }
}

fn print(table: &Table, workers: usize, load: (String, String), elapsed: Duration) {
    println!("\n### {}\n", table.title);
    print!("| scenario |");
    for col in &table.columns {
        print!(" {} |", col.runner.name());
    }
    println!();
    print!("|---|");
    for _ in &table.columns {
        print!("---:|");
    }
    println!();
    for (row, (label, better, unit)) in ROWS.iter().enumerate() {
        if row == 7 && !table.streams || row == 8 && !table.idle {
            continue;
        }
        let medians: Vec<Option<f64>> = table
            .columns
            .iter()
            .map(|c| {
                let s: Vec<f64> = c.samples[row].iter().filter_map(|v| *v).collect();
                (s.len() == c.samples[row].len() && !s.is_empty()).then(|| median(s))
            })
            .collect();
        let hw = table.columns.iter().zip(&medians).find(|(c, _)| c.role == Role::Handwritten).and_then(|(_, m)| *m);
        let peers = table.columns.iter().zip(&medians).filter(|(c, _)| c.role == Role::Peer).filter_map(|(_, m)| *m);
        let best_peer = match better {
            Better::Higher => peers.fold(None, |b: Option<f64>, v| Some(b.map_or(v, |b| b.max(v)))),
            Better::Lower => peers.fold(None, |b: Option<f64>, v| Some(b.map_or(v, |b| b.min(v)))),
        };
        let ratio =
            |v: f64, r: Option<f64>| r.filter(|r| *r > 0.0).map_or("–".to_owned(), |r| format!("{:.2}", v / r));
        print!("| {label} |");
        for m in &medians {
            match m {
                Some(v) => print!(" {} ({}, {}) |", fmt_value(*unit, *v), ratio(*v, hw), ratio(*v, best_peer)),
                None => print!(" n/a |"),
            }
        }
        println!();
    }
    println!();
    println!(
        "Medians of {} interleaved repetitions after a warm-up (each row starting with the next column in turn; \
         row A run {A_RUNS} times a repetition; each timed run after a tenth of its work untimed). In brackets: ÷ hand-written loop, ÷ best peer \
         (the best of async-lsp, tower-lsp-server, jsonrpsee on that row; for latency, allocations and bytes lower is better, \
         for the rest higher). Ours: default settings, streams with batches of 1000 and read-ahead 4000. n/a: not supported.",
        reps()
    );
    for note in &table.notes {
        println!("{note}");
    }
    println!(
        "Run: {workers} tokio worker thread{}, both ends in this process; load average {} before, {} after; {:.0} s.",
        if workers == 1 { "" } else { "s" },
        load.0,
        load.1,
        elapsed.as_secs_f64()
    );
    if knob("COMPARE_MODES") {
        print_modes(table);
    }
}

/// The rows [`print_modes`] prints.
const MODE_ROWS: [&str; 3] = ["A: share of calls slow", "A: mean of the fast calls", "A: mean of the slow calls"];

/// Row A by mode (`COMPARE_MODES=1`, see `harness::Modes`): the share of slow calls, and each
/// mode's mean time, medians over the runs, in brackets ÷ the hand-written loop's.
fn print_modes(table: &Table) {
    let hw = table.columns.iter().find(|c| c.role == Role::Handwritten);
    println!("\nRow A by mode (a call is slow when it took over twice its run's tenth percentile):\n");
    print!("| mode |");
    table.columns.iter().for_each(|c| print!(" {} |", c.runner.name()));
    println!("\n|---|{}", "---:|".repeat(table.columns.len()));
    for (i, label) in MODE_ROWS.iter().enumerate() {
        let base = hw.map(|c| median(c.modes[i].clone())).filter(|b| *b > 0.0);
        print!("| {label} |");
        for c in &table.columns {
            let v = median(c.modes[i].clone());
            let shown = if i == 0 { format!("{v:.2}") } else { format!("{v:.2} µs") };
            let ratio = base.map_or("–".to_owned(), |b| format!("{:.2}", v / b));
            print!(" {shown} ({ratio}) |");
        }
        println!();
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// `COMPARE_PROFILE=N`: only scenario A, N calls, for one contender
/// (`COMPARE_PROFILE_WHO=rpc|core|hw|loop-client|loop-server`, default `rpc`) over one link
/// (`COMPARE_PROFILE_LINK=duplex|unix`, default `duplex`), Content-Length framing; with
/// `COMPARE_PROFILE_SCENARIO=idle`, scenario F with N pairs instead; `inflight`, scenario B;
/// `notify`, scenario C; `echo`, scenario D (N echoes of 1 MiB).
fn profile(rt: &Runtime, n: usize) {
    if std::env::var("COMPARE_PROFILE_SCENARIO").as_deref() == Ok("span") {
        bare_spans(n);
        return;
    }
    if std::env::var("COMPARE_PROFILE_SCENARIO").as_deref() == Ok("metrics-floor") {
        metrics_floor(n);
        return;
    }
    let who = std::env::var("COMPARE_PROFILE_WHO").unwrap_or_else(|_| "rpc".to_owned());
    let link = match std::env::var("COMPARE_PROFILE_LINK").as_deref() {
        Ok("unix") => Link::UnixPair,
        _ => Link::Duplex,
    };
    let framing = match std::env::var("COMPARE_PROFILE_FRAMING").as_deref() {
        Ok("newline") => Framing::NewlineDelimited,
        _ => Framing::ContentLength,
    };
    let tally = Tally::new();
    let runner = match who.as_str() {
        "hw" => Live::start(rt, "hand-written", Handwritten { link, framing, tally: tally.clone() }, tally),
        "loop-client" | "loop-server" => {
            let end = if who == "loop-client" { LoopEnd::Client } else { LoopEnd::Server };
            let contender = rt.block_on(Mixed::new(Api::Macro, link, framing, end, tally.clone()));
            Live::start(rt, "mixed", contender, tally)
        }
        "core" => {
            let layers = match std::env::var("COMPARE_PROFILE_LAYERS").as_deref() {
                Ok("trace") => Layers::Trace,
                Ok("metrics") => Layers::Metrics,
                Ok("null") => Layers::Null,
                _ => Layers::None,
            };
            if layers != Layers::None {
                install_layer_sinks();
            }
            let ends = match std::env::var("COMPARE_PROFILE_LAYERS_AT").as_deref() {
                Ok("server") => LayerEnds::Server,
                Ok("client") => LayerEnds::Client,
                _ => LayerEnds::Both,
            };
            let contender = rt
                .block_on(Ours::new(Api::Core, Transport::Link(link, framing), tally.clone()))
                .with_layers(layers)
                .with_layer_ends(ends);
            Live::start(rt, "ours core API", contender, tally)
        }
        _ => {
            let contender = rt.block_on(Ours::new(Api::Macro, Transport::Link(link, framing), tally.clone()));
            Live::start(rt, "ours #[rpc]", contender, tally)
        }
    };
    if std::env::var("COMPARE_PROFILE_SCENARIO").as_deref() == Ok("idle") {
        let bytes = runner.idle(rt, n);
        println!("{}, {}: {n} idle pairs, {bytes:.0} heap bytes each", runner.name(), link.label());
        return;
    }
    match std::env::var("COMPARE_PROFILE_SCENARIO").as_deref() {
        Ok("inflight") => {
            let _ = runner.in_flight(rt, n / 10, 64);
            let per_sec = runner.in_flight(rt, n, 64);
            println!("{}, {}: {n} calls, 64 in flight: {per_sec:.0} calls/s", runner.name(), link.label());
            return;
        }
        Ok("echo") => {
            // Row D: N echoes of the 1 MiB string.
            let text: Arc<str> = payload(1 << 20).into();
            let _ = runner.echo(rt, text.clone(), (n / 10).max(1));
            let mb_per_sec = runner.echo(rt, text, n);
            println!("{}, {}: {n} echoes of 1 MiB: {mb_per_sec:.0} MB/s", runner.name(), link.label());
            return;
        }
        Ok("notify") => {
            let _ = runner.notifications(rt, n / 10);
            let per_sec = runner.notifications(rt, n);
            println!("{}, {}: {n} notifications: {per_sec:.0} msgs/s", runner.name(), link.label());
            return;
        }
        Ok("stream") => {
            // Row E: a stream of N items pulled to its end.
            let _ = runner.stream(rt, (n as u64 / 10).max(1));
            match runner.stream(rt, n as u64) {
                Some(per_sec) => {
                    println!("{}, {}: {n} stream items: {per_sec:.0} items/s", runner.name(), link.label())
                }
                None => println!("{}, {}: streams not supported", runner.name(), link.label()),
            }
            return;
        }
        _ => {}
    }
    let _ = runner.sequential(rt, n / 10);
    let scheduled = scheduling(rt);
    let a = runner.sequential(rt, n);
    let scheduled_after = scheduling(rt);
    println!(
        "{}, {}, {framing:?}, {n} sequential calls: p50 {:.2} µs, p99 {:.2} µs, {:.0} calls/s, {:.1} allocations and {:.0} bytes per call",
        runner.name(),
        link.label(),
        a.p50.as_secs_f64() * 1e6,
        a.p99.as_secs_f64() * 1e6,
        a.per_sec,
        a.allocs_per_call,
        a.bytes_per_call
    );
    print_scheduling(scheduled, scheduled_after, n);
}

/// The names of [`scheduling`]'s counts, in its order.
const SCHEDULING: [&str; 5] = ["steals", "parks", "wake-ups to nothing", "polls from a run queue", "local schedules"];

/// The runtime's scheduling counts so far, summed over the workers: steals, parks, wake-ups to
/// nothing, polls from a run queue (a task run from the LIFO slot is not counted) and local
/// schedules. Read only when the bench is built with `RUSTFLAGS="--cfg tokio_unstable"` (the
/// counts are unstable API); `None` otherwise.
#[cfg(tokio_unstable)]
fn scheduling(rt: &Runtime) -> Option<[u64; 5]> {
    let m = rt.metrics();
    let mut counts = [0; 5];
    for w in 0..m.num_workers() {
        let per_worker = [
            m.worker_steal_count(w),
            m.worker_park_count(w),
            m.worker_noop_count(w),
            m.worker_poll_count(w),
            m.worker_local_schedule_count(w),
        ];
        for (sum, v) in counts.iter_mut().zip(per_worker) {
            *sum += v;
        }
    }
    Some(counts)
}

/// Without `--cfg tokio_unstable` the runtime keeps no counts to read.
#[cfg(not(tokio_unstable))]
fn scheduling(_: &Runtime) -> Option<[u64; 5]> {
    None
}

/// Print the scheduling counts between two readings, per call (nothing without them).
fn print_scheduling(before: Option<[u64; 5]>, after: Option<[u64; 5]>, calls: usize) {
    let (Some(before), Some(after)) = (before, after) else { return };
    let per_call: Vec<String> = SCHEDULING
        .iter()
        .zip(after.iter().zip(before))
        .map(|(name, (after, before))| format!("{name} {:.3}", (after - before) as f64 / calls as f64))
        .collect();
    println!("scheduling per call, summed over the workers: {}", per_call.join(", "));
}

/// `COMPARE_PROFILE_SCENARIO=span`: what the `tracing` registry of the layer rows costs by
/// itself for what `TraceLayer` asks of it per call on row A: two spans (one per end), each with
/// the same fields, made, entered and left once, closed. No connection.
fn bare_spans(n: usize) {
    install_layer_sinks();
    let started = Instant::now();
    for i in 0..2 * n as u64 {
        let span = tracing::info_span!(
            target: jsonrpc_duplex::middleware::trace::TRACE_TARGET,
            "rpc",
            otel.name = "add",
            otel.kind = "client",
            rpc.system.name = "jsonrpc",
            rpc.method = "add",
            jsonrpc.protocol.version = "2.0",
            jsonrpc.request.id = tracing::field::display(i),
            rpc.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let entered = span.enter();
        std::hint::black_box(&entered);
        drop(entered);
        drop(std::hint::black_box(span));
    }
    let per_call = started.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} calls' worth of bare spans (2 per call): {per_call:.0} ns a call");
}

/// `COMPARE_PROFILE_SCENARIO=metrics-floor`: the least the metrics layer must do per call on
/// row A, under the layer rows' recorder, with no connection and no hook around it: on each of
/// the two ends, the call counted, the in-flight gauge up and down, the layer's clock read twice
/// and the duration recorded, a reference to the handles taken and let go. Prints the time a
/// call, to set beside the no-layer call's.
fn metrics_floor(n: usize) {
    install_layer_sinks();
    let handles = |direction: &'static str| {
        let labels = [
            metrics::Label::new("rpc.method", "add"),
            metrics::Label::new("direction", direction),
            metrics::Label::new("kind", "request"),
        ];
        Arc::new((
            metrics::counter!(jsonrpc_duplex::middleware::metrics::CALLS, labels.iter()),
            metrics::gauge!(jsonrpc_duplex::middleware::metrics::IN_FLIGHT, labels.iter()),
            metrics::histogram!(jsonrpc_duplex::middleware::metrics::DURATION, labels.iter()),
        ))
    };
    let ends = [handles("outbound"), handles("inbound")];
    let clock = quanta::Clock::new();
    let started = Instant::now();
    for _ in 0..n {
        for end in &ends {
            let (calls, in_flight, duration) = &*std::hint::black_box(end.clone());
            calls.increment(1);
            in_flight.increment(1.0);
            let start = clock.raw();
            duration.record(clock.delta_as_nanos(start, clock.raw()) as f64 * 1e-9);
            in_flight.decrement(1.0);
        }
    }
    let per_call = started.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} calls' worth of the metrics layer's bare work (both ends): {per_call:.0} ns a call");
}

/// What the layers report to: the spans of the tracing layer are recorded (a registry under it,
/// as tracing-opentelemetry has; nothing else is enabled, so contenders without the layer pay
/// nothing for the subscriber), the metrics go to metrics-util's in-memory recorder.
fn install_layer_sinks() {
    use tracing_subscriber::layer::SubscriberExt;
    // `COMPARE_PROFILE_RECORDER=noop`: no recorder (the facade's no-op handles): what the
    // metrics layer costs by itself. The default, metrics-util's debugging recorder, keeps its
    // handles in the same atomic storage a production exporter's hot path has (an atomic add
    // per counter, a compare-and-swap per gauge, a lock-free bucket push per histogram value,
    // as `metrics-exporter-prometheus`, whose storage adds a generation counter).
    if std::env::var("COMPARE_PROFILE_RECORDER").as_deref() != Ok("noop") {
        let _ = metrics::set_global_recorder(metrics_util::debugging::DebuggingRecorder::new());
    }
    if std::env::var("COMPARE_PROFILE_SUBSCRIBER").as_deref() == Ok("null") {
        let _ = tracing::subscriber::set_global_default(NullSubscriber);
        return;
    }
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target(jsonrpc_duplex::middleware::trace::TRACE_TARGET, tracing::Level::INFO);
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(filter));
}

/// A subscriber that enables every span and event of the tracing layer's target and keeps
/// nothing: every span gets the same id, entering and recording do nothing. What the tracing
/// layer costs by itself, the subscriber's own work left out.
struct NullSubscriber;

impl tracing::Subscriber for NullSubscriber {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == jsonrpc_duplex::middleware::trace::TRACE_TARGET
    }
    fn register_callsite(&self, metadata: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        if self.enabled(metadata) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::INFO)
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Row A without a layer, with the tracing layer, with the metrics layer and with a hook that
/// does nothing, interleaved like the tables; printed as a table of its own with ratios to no
/// layer.
fn layer_rows(rt: &Runtime, sizes: Sizes) {
    install_layer_sinks();
    let link = Transport::Link(jsonrpc_duplex_benches::harness::Link::Duplex, Framing::ContentLength);
    // Both ends (what the goal is measured on), then the server's end alone: what a server that
    // adds the layer pays when its peers do not run it.
    let kinds = [
        ("no layer", Layers::None, LayerEnds::Both),
        ("TraceLayer", Layers::Trace, LayerEnds::Both),
        ("MetricsLayer", Layers::Metrics, LayerEnds::Both),
        ("TraceLayer, server end only", Layers::Trace, LayerEnds::Server),
        ("MetricsLayer, server end only", Layers::Metrics, LayerEnds::Server),
        // What any hook costs by its running alone, the layers' own work left out.
        ("null Hook", Layers::Null, LayerEnds::Both),
        ("null Hook, server end only", Layers::Null, LayerEnds::Server),
    ];
    let runners: Vec<Box<dyn Runner>> = kinds
        .iter()
        .map(|(name, layers, ends)| {
            let tally = Tally::new();
            let contender =
                rt.block_on(Ours::new(Api::Core, link, tally.clone())).with_layers(*layers).with_layer_ends(*ends);
            Live::start(rt, name, contender, tally)
        })
        .collect();
    let mut samples = vec![[Vec::new(), Vec::new(), Vec::new()]; kinds.len()];
    for rep in 0..=reps() {
        let n = if rep == 0 { sizes.warm_up().sequential } else { sizes.sequential };
        // As in the tables: each repetition starts with the next kind, after untimed calls.
        // Row A's passes as in the tables ([`A_RUNS`]).
        for pass in 0..A_RUNS {
            for k in 0..runners.len() {
                let i = (k + rep + pass) % runners.len();
                let runner = &runners[i];
                runner.sequential(rt, (n / 10).max(1));
                let a = runner.sequential(rt, n);
                if rep > 0 {
                    samples[i][0].push(a.p50.as_secs_f64() * 1e6);
                    samples[i][1].push(a.per_sec);
                    samples[i][2].push(a.allocs_per_call);
                }
            }
        }
        if rep == 0 {
            eprint!("[layers] warm-up");
        } else {
            eprint!(" {rep}");
        }
    }
    eprintln!();
    println!("\n### Middleware on row A (ours core API, {})\n", jsonrpc_duplex_benches::harness::Link::Duplex.label());
    print!("| row |");
    for (name, ..) in &kinds {
        print!(" {name} |");
    }
    println!("\n|---|{}", "---:|".repeat(kinds.len()));
    let rows = [
        ("A sequential: p50 latency", Unit::Micros),
        ("A sequential: calls/s", Unit::Rate),
        ("A sequential: heap allocations per call", Unit::Plain),
    ];
    for (row, (label, unit)) in rows.iter().enumerate() {
        let base = median(samples[0][row].clone());
        print!("| {label} |");
        for s in &samples {
            let v = median(s[row].clone());
            print!(" {} ({:.2}) |", fmt_value(*unit, v), v / base);
        }
        println!();
    }
    println!(
        "\nMedians of {} interleaved repetitions after a warm-up ({A_RUNS} runs of each column a repetition, each pass \
         starting with the next column in turn, each run after a tenth of its calls untimed); in brackets ÷ no layer. The layer runs on both \
         ends (one outbound and one inbound pass per call) unless the column says otherwise.",
        reps()
    );
}

/// `--summarize FILE...` (what `scripts/layouts.sh` runs): the outputs of runs of this bench,
/// each named `….LAYOUT.RUN`, read back; for each table, row A to D and each of our columns,
/// the median of its ratios to the hand-written loop over every run, and the lowest and
/// highest of the layouts' own medians (the middleware table, `COMPARE_ONLY=layers`: each
/// layer's ratio to no layer, the same way). A ratio one link layout gives can be that layout's luck
/// (code that runs on every call landing in fewer or more cache sets); the median over several
/// layouts is not.
fn summarize(files: &[String]) {
    use std::collections::BTreeMap;
    const SUMMED: [&str; 8] = [
        "A sequential: p50 latency",
        "A sequential: calls/s",
        "B 64 in flight: calls/s",
        "C notifications: msgs/s",
        "D echo 1 MiB: MB/s (both ways)",
        MODE_ROWS[0],
        MODE_ROWS[1],
        MODE_ROWS[2],
    ];
    // (table, row, column) -> layout -> ratios
    type Key = (String, usize, String);
    let mut found: BTreeMap<Key, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            eprintln!("cannot read {file}");
            std::process::exit(2);
        };
        // `out.3.2` (as `scripts/layouts.sh` names them): the layout is the part before the
        // run's number.
        let mut parts = file.rsplit('.');
        let layout = parts.nth(1).unwrap_or("?").to_owned();
        let (mut table, mut columns) = (String::new(), Vec::new());
        for line in text.lines() {
            if let Some(title) = line.strip_prefix("### ") {
                // A table of its own shape (the middleware rows) has no `scenario` header.
                (table, columns) = (title.to_owned(), Vec::new());
                continue;
            }
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() < 3 {
                continue;
            }
            // The tables' header (`scenario`), the middleware table's (`row`, its columns
            // the layers, each ÷ no layer), or that of a table's modes (`mode`, its table's).
            if ["scenario", "row", "mode"].contains(&cells[1]) {
                columns = cells[2..].iter().map(|c| c.to_string()).collect();
                continue;
            }
            let Some(row) = SUMMED.iter().position(|r| *r == cells[1]) else { continue };
            for (column, cell) in columns.iter().zip(&cells[2..]) {
                // `690k (0.97, –)`: the first number in brackets is ÷ the hand-written loop.
                let ratio =
                    cell.split_once('(').and_then(|(_, r)| r.split([',', ')']).next()?.trim().parse::<f64>().ok());
                let ours = column.starts_with("ours") || column.contains("Layer") || column.contains("Hook");
                if let Some(ratio) = ratio.filter(|_| ours) {
                    found
                        .entry((table.clone(), row, column.clone()))
                        .or_default()
                        .entry(layout.clone())
                        .or_default()
                        .push(ratio);
                }
            }
        }
    }
    if found.is_empty() {
        eprintln!("no rows of ours found in {} file(s)", files.len());
        std::process::exit(2);
    }
    // The harness's `median` takes the upper of two middle values (its counts are odd); the
    // runs of several layouts are often an even count, whose middle lies between the two.
    let middle = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
    };
    // Written at once, and a reader that went away (`| head`) ends it quietly: no panic.
    use std::fmt::Write as _;
    let mut out = String::from(
        "| table | row | column | ÷ loop (a layer: ÷ no layer), median of all runs | layouts' medians, lowest–highest | layouts × runs |\n|---|---|---|---:|---:|---:|\n",
    );
    for ((table, row, column), layouts) in &found {
        let all: Vec<f64> = layouts.values().flatten().copied().collect();
        let per: Vec<f64> = layouts.values().map(|v| middle(v.clone())).collect();
        let (low, high) = per.iter().fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
        let _ = writeln!(
            out,
            "| {table} | {} | {column} | {:.3} | {low:.2}–{high:.2} | {} × {} |",
            SUMMED[*row],
            middle(all.clone()),
            layouts.len(),
            all.len() / layouts.len().max(1)
        );
    }
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--summarize") {
        return summarize(&args[at + 1..]);
    }
    // `COMPARE_WORKERS=1` runs every task on one worker thread: no hand-off between cores, so
    // what is left of a difference in time is the work itself (default 2).
    // (0 or anything not a number: the default, not tokio's panic on zero workers.)
    let workers =
        std::env::var("COMPARE_WORKERS").ok().and_then(|v| v.parse().ok()).filter(|&n: &usize| n > 0).unwrap_or(2);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().expect("runtime");
    if let Some(n) = std::env::var("COMPARE_PROFILE").ok().and_then(|v| v.parse().ok()) {
        return profile(&rt, n);
    }
    let quick = knob("COMPARE_QUICK");
    let only: Vec<String> = std::env::var("COMPARE_ONLY")
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let sizes = Sizes::new(quick);
    let text: Arc<str> = payload(sizes.echo_len).into();
    println!(
        "## jsonrpc-duplex and its peers{} ({}, load average at start: {})",
        if quick { " (COMPARE_QUICK: sizes ÷ 10)" } else { "" },
        jsonrpc_duplex_benches::machine(),
        loadavg()
    );
    let start = Instant::now();
    let tables = tables(&rt, sizes, &only);
    for mut table in tables {
        let before = loadavg();
        let t = Instant::now();
        measure(&rt, &mut table, sizes, &text);
        print(&table, workers, (before, loadavg()), t.elapsed());
        rt.block_on(async move {
            drop(table);
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
    }
    if only.is_empty() || only.iter().any(|o| o == "headline" || o == "layers") {
        layer_rows(&rt, sizes);
    }
    println!("\nTotal {:.0} s.", start.elapsed().as_secs_f64());
}
