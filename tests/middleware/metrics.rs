//! The metrics layer (feature `metrics`): calls, errors by code, durations and calls in flight
//! per method and direction, read back from metrics-util's in-memory recorder.
#![cfg(feature = "metrics")]

use crate::support;

use std::collections::BTreeMap;

use jsonrpc_duplex::middleware::metrics::{CALLS, DURATION, ERRORS, IN_FLIGHT, MetricsLayer};
use jsonrpc_duplex::middleware::names::MethodNames;
use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tokio::sync::Notify;

use support::raw_peer::pair;

/// Every metric as `name{label=value,...}` → value, summed over the snapshots taken so far
/// (a snapshot hands over what was recorded since the one before).
fn read(
    snapshotter: &metrics_util::debugging::Snapshotter,
    total: &mut BTreeMap<String, f64>,
) -> BTreeMap<String, String> {
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let mut labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        match value {
            DebugValue::Counter(n) => *total.entry(name).or_default() += n as f64,
            DebugValue::Gauge(g) => *total.entry(name).or_default() += g.into_inner(),
            DebugValue::Histogram(h) => {
                // Its count under its name, the sum of its values under `name.sum`.
                *total.entry(format!("{name}.sum")).or_default() += h.iter().map(|v| v.into_inner()).sum::<f64>();
                *total.entry(name).or_default() += h.len() as f64;
            }
        }
    }
    total.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()
}

#[test]
fn calls_errors_durations_and_in_flight_per_method_and_direction() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let mut total = BTreeMap::new();
    metrics::set_global_recorder(recorder).expect("the only recorder of this test binary");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let release = std::sync::Arc::new(Notify::new());
        let gate = release.clone();
        let builder = Connection::builder()
            .layer(MetricsLayer::new(MethodNames::new(["add", "fail", "wait", "ping"])).error_codes([7]))
            .serve(
                Router::new()
                    .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
                    .method("fail", |(code,): (i64,), _| async move { Err::<(), _>(ErrorObject::new(code, "no")) })
                    .method("wait", move |(): (), _| {
                        let gate = gate.clone();
                        async move {
                            gate.notified().await;
                            Ok::<_, ErrorObject>(())
                        }
                    }),
            );
        let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
        for id in 0..3 {
            let answer = peer.call(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"add","params":[1,2]}}"#)).await;
            assert_eq!(answer, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":3}}"#));
        }
        for (id, code) in [(10, 7), (11, 7), (12, 12345), (13, -32602)] {
            peer.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"fail","params":[{code}]}}"#)).await;
            assert_eq!(peer.recv_error().await.1, code);
        }
        // A peer's made-up method is `_OTHER`, answered -32601.
        peer.send(r#"{"jsonrpc":"2.0","id":20,"method":"made/up/1"}"#).await;
        assert_eq!(peer.recv_error().await.1, -32601);
        // One in flight while we look.
        let waited = std::time::Instant::now();
        peer.send(r#"{"jsonrpc":"2.0","id":30,"method":"wait"}"#).await;
        let handle = conn.handle();
        let ping = tokio::spawn(async move { handle.request::<String>("ping", ()).await });
        assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
        let seen = read(&snapshotter, &mut total);
        let inbound = |m: &str| format!("direction=inbound,kind=request,rpc.method={m}");
        assert_eq!(seen[&format!("{IN_FLIGHT}{{{}}}", inbound("wait"))], "1");
        assert_eq!(seen[&format!("{IN_FLIGHT}{{direction=outbound,kind=request,rpc.method=ping}}")], "1");
        // Held for at least 20 ms (its duration's lower bound), then answered.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        release.notify_one();
        peer.recv().await;
        let waited = waited.elapsed().as_secs_f64();
        peer.send(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"busy"}}"#).await;
        assert!(ping.await.unwrap().is_err());

        let seen = read(&snapshotter, &mut total);
        assert_eq!(seen[&format!("{CALLS}{{{}}}", inbound("add"))], "3");
        assert_eq!(seen[&format!("{DURATION}{{{}}}", inbound("add"))], "3");
        assert_eq!(seen[&format!("{IN_FLIGHT}{{{}}}", inbound("add"))], "0");
        assert!(!seen.contains_key(&format!("{ERRORS}{{{},rpc.response.status_code=0}}", inbound("add"))));
        assert_eq!(seen[&format!("{CALLS}{{{}}}", inbound("fail"))], "4");
        let errors =
            |code: &str| seen[&format!("{ERRORS}{{{},rpc.response.status_code={code}}}", inbound("fail"))].clone();
        // A listed code and a reserved one as they are; any other is `_OTHER`.
        assert_eq!(errors("7"), "2");
        assert_eq!(errors("-32602"), "1");
        assert_eq!(errors("_OTHER"), "1");
        assert_eq!(seen[&format!("{CALLS}{{{}}}", inbound("_OTHER"))], "1");
        assert_eq!(seen[&format!("{ERRORS}{{{},rpc.response.status_code=-32601}}", inbound("_OTHER"))], "1");
        assert_eq!(seen[&format!("{IN_FLIGHT}{{{}}}", inbound("wait"))], "0");
        // Its duration in seconds, read on the layer's clock: between the 20 ms it was held
        // and the time the peer saw it take.
        let wait: f64 = seen[&format!("{DURATION}{{{}}}.sum", inbound("wait"))].parse().unwrap();
        assert!((0.020..=waited).contains(&wait), "{wait} s, not within 0.020 to {waited} s");
        let out = "direction=outbound,kind=request,rpc.method=ping";
        assert_eq!(seen[&format!("{CALLS}{{{out}}}")], "1");
        assert_eq!(seen[&format!("{ERRORS}{{{out},rpc.response.status_code=-32000}}")], "1");
        assert_eq!(seen[&format!("{IN_FLIGHT}{{{out}}}")], "0");
        assert!(seen.keys().all(|k| !k.contains("made/up")), "{seen:#?}");
    });
}
