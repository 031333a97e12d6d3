//! The tracing layer: one span per call in both directions with OpenTelemetry's attribute names
//! for JSON-RPC, read back from an in-memory subscriber; the span of an inbound request is the
//! parent of the spans of the calls its handler makes back; unlisted methods are `_OTHER`.

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use jsonrpc_duplex::middleware::names::MethodNames;
use jsonrpc_duplex::middleware::trace::{TRACE_TARGET, TraceLayer};
use jsonrpc_duplex::{Connection, ErrorObject, Framing, Handle, Router};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Instrument, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use support::raw_peer::pair;
use support::time::within;

/// A span as the subscriber saw it: its name, parent and fields, and whether it has closed.
#[derive(Clone, Debug, Default)]
struct Seen {
    id: u64,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
    closed: bool,
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Seen>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.id().into_u64());
        let mut seen = Seen { id: id.into_u64(), parent, ..Default::default() };
        seen.fields.insert("(name)".into(), attrs.metadata().name().to_owned());
        seen.fields.insert("(target)".into(), attrs.metadata().target().to_owned());
        attrs.record(&mut Fields(&mut seen.fields));
        self.0.lock().unwrap().push(seen);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        // The registry gives a closed span's id to a later one: the open one is meant.
        if let Some(seen) = spans.iter_mut().rev().find(|s| s.id == id.into_u64() && !s.closed) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some(seen) = spans.iter_mut().rev().find(|s| s.id == id.into_u64() && !s.closed) {
            seen.closed = true;
        }
    }
}

impl Spans {
    fn rpc(&self) -> Vec<Seen> {
        self.0.lock().unwrap().iter().filter(|s| s.fields["(target)"] == TRACE_TARGET).cloned().collect()
    }
    fn find(&self, kind: &str, method: &str) -> Seen {
        let all = self.rpc();
        all.iter()
            .find(|s| s.fields["otel.kind"] == kind && s.fields["rpc.method"] == method)
            .unwrap_or_else(|| panic!("no {kind} span for {method}: {all:#?}"))
            .clone()
    }
}

#[test]
fn spans_carry_the_semantic_conventions_and_nest_the_calls_a_handler_makes() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let names = MethodNames::new(["ask", "name", "fail"]);
        let (a, b) = tokio::io::duplex(64 * 1024);
        let _server = Connection::builder()
            .layer(TraceLayer::new(names.clone()))
            .serve_with(|peer: Handle| {
                Router::new()
                    .method("ask", move |(): (), _| {
                        let peer = peer.clone();
                        async move { Ok::<_, ErrorObject>(format!("hi {}", peer.request::<String>("name", ()).await?)) }
                    })
                    .method("fail", |(): (), _| async { Err::<(), _>(ErrorObject::new(-32042, "no")) })
                    .method("secret/made-up", |(): (), _| async { Ok::<_, ErrorObject>(()) })
            })
            .connect_io(a);
        let client = Connection::builder()
            .layer(TraceLayer::new(names))
            .serve(Router::new().method("name", |(): (), _| async { Ok::<_, ErrorObject>("ana") }))
            .connect_io(b);
        let root = tracing::info_span!("test-root");
        let answer: String = within(client.handle().request("ask", ()).instrument(root)).await.unwrap();
        assert_eq!(answer, "hi ana");
        let failed = within(client.handle().request::<()>("fail", ())).await.unwrap_err();
        assert_eq!(failed.as_remote().map(|e| e.code), Some(-32042));
        within(client.handle().request::<()>("secret/made-up", ())).await.unwrap();
    });

    let root = spans.0.lock().unwrap().iter().find(|s| s.fields["(name)"] == "test-root").unwrap().id;
    let client_ask = spans.find("client", "ask");
    let server_ask = spans.find("server", "ask");
    let server_name = spans.find("client", "name");
    let client_name = spans.find("server", "name");
    assert_eq!(client_ask.parent, Some(root), "the caller's span is the parent of its call");
    // The handler runs inside its request's span: its call back is a child of it.
    assert_eq!(server_name.parent, Some(server_ask.id));
    for s in [&client_ask, &server_ask, &server_name, &client_name] {
        assert_eq!(s.fields["(name)"], "rpc");
        assert_eq!(s.fields["rpc.system.name"], "jsonrpc");
        assert_eq!(s.fields["jsonrpc.protocol.version"], "2.0");
        assert_eq!(s.fields["otel.name"], s.fields["rpc.method"]);
        assert!(!s.fields.contains_key("error.type"), "{s:?}");
        // Ended once answered: the call's duration is the span's own.
        assert!(s.closed, "{s:?}");
    }
    assert_eq!(client_ask.fields["jsonrpc.request.id"], "0");
    assert_eq!(server_ask.fields["jsonrpc.request.id"], "0");
    for kind in ["client", "server"] {
        let fail = spans.find(kind, "fail");
        assert_eq!(fail.fields["rpc.response.status_code"], "-32042");
        assert_eq!(fail.fields["error.type"], "-32042");
        assert_eq!(fail.fields["otel.status_code"], "ERROR");
        // A method no list names cannot become a span name of its own.
        let other = spans.find(kind, "_OTHER");
        assert_eq!(other.fields["otel.name"], "_OTHER");
    }
    assert!(spans.rpc().iter().all(|s| !s.fields.values().any(|v| v.contains("secret"))));
}

#[test]
fn a_notification_has_a_span_without_a_request_id() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let builder = Connection::builder()
            .layer(TraceLayer::new(MethodNames::new(["note"])))
            .serve(Router::new().notification("note", |(): (), _| async {}));
        let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
        peer.send(r#"{"jsonrpc":"2.0","method":"note"}"#).await;
        conn.handle().notify("note", ()).await.unwrap();
        assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","method":"note"}"#);
        within(async {
            while spans.rpc().len() < 2 {
                tokio::task::yield_now().await;
            }
        })
        .await;
    });
    for kind in ["server", "client"] {
        let note = spans.find(kind, "note");
        assert!(!note.fields.contains_key("jsonrpc.request.id"), "{note:?}");
    }
}
