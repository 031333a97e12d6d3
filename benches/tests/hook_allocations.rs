//! What a sequential call allocates, counted by a counting global allocator (as the `compare`
//! bench's rows): three times without a layer, and a hook adds nothing of its own when its state
//! is zero-sized or one of the shipped layers'.

use jsonrpc_duplex::middleware::metrics::MetricsLayer;
use jsonrpc_duplex::middleware::names::MethodNames;
use jsonrpc_duplex::middleware::trace::TraceLayer;
use jsonrpc_duplex::{Builder, Connection, ErrorObject, Router};
use jsonrpc_duplex_benches::alloc::{Counting, snapshot};
use jsonrpc_duplex_benches::ours::NullHook;

#[global_allocator]
static ALLOC: Counting = Counting;

const CALLS: i64 = 2_000;

/// Allocations per call of `CALLS` sequential calls between two connections built by `layer`,
/// after a warm-up.
fn allocations_per_call(layer: impl Fn(Builder) -> Builder) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let router = Router::new().method("add", |(x, y): (i64, i64), _| async move { Ok::<_, ErrorObject>(x + y) });
        let _server = layer(Connection::builder()).serve(router).connect_io(a);
        let client = layer(Connection::builder()).connect_io(b);
        let handle = client.handle();
        for i in 0..100 {
            assert_eq!(handle.request::<i64>("add", (i, 1)).await.unwrap(), i + 1);
        }
        let before = snapshot().allocs;
        for i in 0..CALLS {
            assert_eq!(handle.request::<i64>("add", (i, 1)).await.unwrap(), i + 1);
        }
        (snapshot().allocs - before) as f64 / CALLS as f64
    })
}

// One test: the counter is global, and tests run on threads of their own.
#[test]
fn a_typed_call_allocates_three_times_and_hooks_nothing_of_their_own() {
    let plain = allocations_per_call(|b| b);
    // The handler's future on the answering side; the reply's channel and the result on the
    // calling side. The params are decoded where they were read, not copied out first (that
    // was a fourth).
    assert!(plain <= 3.01, "{plain:.2} allocations a call");
    let names = || MethodNames::new(["add"]);
    for (name, each) in [
        ("a hook with a zero-sized state", allocations_per_call(|b| b.layer(NullHook))),
        ("TraceLayer", allocations_per_call(|b| b.layer(TraceLayer::new(names())))),
        ("MetricsLayer", allocations_per_call(|b| b.layer(MetricsLayer::new(names())))),
    ] {
        eprintln!("{name}: {each:.2} allocations a call, {plain:.2} without");
        assert!(each <= plain + 0.01, "{name}: {each:.2} allocations a call against {plain:.2} without a layer");
    }
}
