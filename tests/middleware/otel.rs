//! One OpenTelemetry trace over three hops and two processes (feature `otel`): this test's
//! process calls `relay` in a child process (this test binary again, running
//! [`child_process`]), whose handler calls `work` back here, whose handler calls `leaf` in the
//! child. Each side exports its spans with the SDK's in-memory exporter; the child writes its
//! own to a file when its connection ends. Every server span must be the child of the client
//! span that called it, all in the trace of this test's root span.

use std::collections::HashMap;
use std::time::Duration;

use jsonrpc_duplex::middleware::{names::MethodNames, otel::OtelLayer};
use jsonrpc_duplex::{Connection, ErrorObject, Handle, Router};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{Value, json};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

const CHILD_ADDR: &str = "JRPC_OTEL_CHILD_ADDR";
const CHILD_SPANS: &str = "JRPC_OTEL_CHILD_SPANS";
/// Generous: the child is this test binary, started on a loaded machine.
const LIMIT: Duration = Duration::from_secs(60);

/// A tracer provider exporting into memory, and a subscriber sending `tracing` spans to it.
fn telemetry(
    service: &'static str,
) -> (InMemorySpanExporter, SdkTracerProvider, impl tracing::Subscriber + Send + Sync) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer(service)));
    (exporter, provider, subscriber)
}

/// What is asserted of a span: its name, kind, trace, own id and parent's id (hex).
fn exported(exporter: &InMemorySpanExporter, side: &str) -> Vec<Value> {
    let spans = exporter.get_finished_spans().expect("the exporter's spans");
    spans
        .iter()
        .map(|s| {
            json!({
                "side": side,
                "name": s.name,
                "kind": format!("{:?}", s.span_kind),
                "trace": s.span_context.trace_id().to_string(),
                "span": s.span_context.span_id().to_string(),
                "parent": s.parent_span_id.to_string(),
            })
        })
        .collect()
}

fn layer() -> OtelLayer {
    OtelLayer::new(MethodNames::new(["relay", "work", "leaf"]))
}

#[tokio::test]
async fn one_trace_spans_three_hops_over_two_processes() {
    let (exporter, provider, subscriber) = telemetry("parent");
    let _default = tracing::subscriber::set_default(subscriber);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let spans_file = std::env::temp_dir().join(format!("jrpc-otel-child-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&spans_file);
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["otel::child_process", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ADDR, listener.local_addr().unwrap().to_string())
        .env(CHILD_SPANS, &spans_file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the child process");
    let (socket, _) = tokio::time::timeout(LIMIT, listener.accept()).await.expect("the child connects").unwrap();

    // Hop 2's server: `work` calls `leaf` in the child (hop 3).
    let conn = Connection::builder()
        .layer(layer())
        .serve_with(|peer: Handle| {
            Router::new().method("work", move |(): (), _| {
                let peer = peer.clone();
                async move { peer.request::<String>("leaf", ()).await.map_err(ErrorObject::from) }
            })
        })
        .connect_io(socket);
    let root = tracing::info_span!("test root");
    let answer = tokio::time::timeout(LIMIT, conn.handle().request::<String>("relay", ()).instrument(root))
        .await
        .expect("relay answered in time")
        .expect("relay answered");
    assert_eq!(answer, "leaf from the child");
    drop(tokio::time::timeout(LIMIT, conn.close()).await.expect("closed in time"));
    let status = tokio::time::timeout(LIMIT, child.wait()).await.expect("the child exits").unwrap();
    assert!(status.success(), "the child process failed: {status}");

    let _ = provider.force_flush();
    let mut spans = exported(&exporter, "parent");
    let text = std::fs::read_to_string(&spans_file).expect("the child's spans");
    let _ = std::fs::remove_file(&spans_file);
    spans.extend(text.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()));

    let find = |side: &str, name: &str, kind: &str| -> &Value {
        let matching: Vec<_> =
            spans.iter().filter(|s| s["side"] == side && s["name"] == name && s["kind"] == kind).collect();
        assert_eq!(matching.len(), 1, "one {kind} span {name:?} on the {side}'s side in {spans:#?}");
        matching[0]
    };
    let root = find("parent", "test root", "Internal");
    let hops = [
        find("parent", "relay", "Client"),
        find("child", "relay", "Server"),
        find("child", "work", "Client"),
        find("parent", "work", "Server"),
        find("parent", "leaf", "Client"),
        find("child", "leaf", "Server"),
    ];
    // Each span's parent is the one before it; the first's is the test's root span.
    let mut parent = root;
    for span in hops {
        assert_eq!(span["trace"], root["trace"], "one trace: {span} in {spans:#?}");
        assert_eq!(span["parent"], parent["span"], "{span} is the child of {parent}");
        parent = span;
    }
    let distinct: HashMap<_, _> = spans.iter().map(|s| (s["span"].to_string(), ())).collect();
    assert_eq!(distinct.len(), spans.len(), "every span id once: {spans:#?}");
}

/// The child process of [`one_trace_spans_three_hops_over_two_processes`] (run by it, with
/// `--ignored`): serves `relay` (which calls `work` back) and `leaf`, then writes its spans.
#[tokio::test]
#[ignore = "the child process of one_trace_spans_three_hops_over_two_processes, run by it"]
async fn child_process() {
    let addr = std::env::var(CHILD_ADDR).expect("run by one_trace_spans_three_hops_over_two_processes only");
    let spans_file = std::env::var(CHILD_SPANS).expect("where to write the spans");
    let (exporter, provider, subscriber) = telemetry("child");
    let _default = tracing::subscriber::set_default(subscriber);
    let socket = tokio::net::TcpStream::connect(addr).await.expect("the parent listens");
    let conn = Connection::builder()
        .layer(layer())
        .serve_with(|peer: Handle| {
            Router::new()
                .method("relay", move |(): (), _| {
                    let peer = peer.clone();
                    async move { peer.request::<String>("work", ()).await.map_err(ErrorObject::from) }
                })
                .method("leaf", |(): (), _| async { Ok::<_, ErrorObject>("leaf from the child".to_owned()) })
        })
        .connect_io(socket);
    tokio::time::timeout(LIMIT, conn.closed()).await.expect("the parent closes");
    let _ = provider.force_flush();
    let lines: Vec<String> = exported(&exporter, "child").iter().map(Value::to_string).collect();
    std::fs::write(spans_file, lines.join("\n")).expect("the spans written");
}
