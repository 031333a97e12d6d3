//! Property: every wire type survives the whole path — our encoder, the framing, a transport
//! that delivers the bytes in arbitrary chunks, the decoder, the parser, dispatch — unchanged.
//!
//! - Two of our connections (both framings): requests and notifications with any method name
//!   and any params (compact or pretty-printed raw JSON), answered with any result or any error
//!   object (code, message, data); every read on both sides is cut to chunk sizes the case picks.
//!   The server sees exactly the messages sent, in order; the client gets exactly the answers.
//! - A raw peer sends requests with ids of both types, spelled any way JSON allows (strings of
//!   any text with any escapes, numbers past `u64`, with trailing zeros, exponents, `-0`) and
//!   gets each id back exactly once with the answer to its own request, compared as bytes: a
//!   number spelled as it was sent, a string as the same string.

use crate::support;

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::BytesMut;
use jsonrpc_duplex::framing::{Frame, FrameLimits, Framing};
use jsonrpc_duplex::{CallOptions, Connection, Error, ErrorObject, Router};
use proptest::prelude::*;
use serde_json::Value;
use serde_json::value::RawValue;
use support::arb_json;
use support::time::within;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio_util::codec::Decoder;

/// A reader that returns at most the next chunk size per read, so the decoder sees the bytes
/// cut exactly there.
struct ChunkedReader<R> {
    inner: R,
    sizes: Vec<usize>,
    next: usize,
}

impl<R: AsyncRead + Unpin> AsyncRead for ChunkedReader<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let n = this.sizes[this.next % this.sizes.len()].clamp(1, 128).min(buf.remaining());
        let mut tmp = [0u8; 128];
        let mut limited = ReadBuf::new(&mut tmp[..n]);
        match Pin::new(&mut this.inner).poll_read(cx, &mut limited) {
            Poll::Ready(Ok(())) => {
                this.next += 1;
                buf.put_slice(limited.filled());
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

fn chunked<R>(inner: R, sizes: &[usize]) -> ChunkedReader<R> {
    ChunkedReader { inner, sizes: sizes.to_vec(), next: 0 }
}

fn json() -> impl Strategy<Value = Value> {
    arb_json::json(3, 24, 4)
}

/// Params as JSON-RPC allows them: absent, an array or an object.
fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        prop::collection::vec(json(), 0..4).prop_map(|v| Some(Value::Array(v))),
        prop::collection::btree_map(any::<String>(), json(), 0..4)
            .prop_map(|m| Some(Value::Object(m.into_iter().collect()))),
    ]
}

/// Any method name but the connection's own (`$/cancelRequest`, `$/progress`, `$/enumerator/*`).
fn method() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z/$.\"\\\\ é]{0,10}"].prop_filter("not a reserved name", |m| !m.starts_with("$/"))
}

/// A call's answer: a result, or an error object's code, message and data.
type Answer = Result<Value, (i64, String, Option<Value>)>;

#[derive(Clone, Debug)]
enum Op {
    Call { method: String, params: Option<Value>, pretty: bool, answer: Answer },
    Note { method: String, params: Option<Value>, pretty: bool },
}

fn op() -> impl Strategy<Value = Op> {
    let answer =
        prop_oneof![json().prop_map(Ok), (any::<i64>(), any::<String>(), prop::option::of(json())).prop_map(Err),];
    prop_oneof![
        // Calls and notifications have names apart, so a call never lands on a notification route.
        (method(), params(), any::<bool>(), answer).prop_map(|(m, params, pretty, answer)| Op::Call {
            method: format!("call{m}"),
            params,
            pretty,
            answer
        }),
        (method(), params(), any::<bool>()).prop_map(|(m, params, pretty)| Op::Note {
            method: format!("note{m}"),
            params,
            pretty
        }),
    ]
}

/// `value` as raw JSON text, pretty-printed (line breaks and indentation) or compact.
fn raw(value: &Value, pretty: bool) -> Box<RawValue> {
    let text = if pretty { serde_json::to_string_pretty(value) } else { serde_json::to_string(value) }.unwrap();
    RawValue::from_string(text).unwrap()
}

fn parsed(raw: Option<&RawValue>) -> Option<Value> {
    raw.map(|r| serde_json::from_str(r.get()).expect("params the connection passed on are not JSON"))
}

type Seen = Arc<Mutex<Vec<(bool, String, Option<Value>)>>>;

/// The server: records every call and notification in dispatch order and answers the n-th call
/// with the n-th answer.
fn server(ops: &[Op], seen: Seen) -> Router {
    let answers: Vec<(Answer, bool)> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Call { answer, pretty, .. } => Some((answer.clone(), *pretty)),
            Op::Note { .. } => None,
        })
        .collect();
    let answers = Arc::new(answers);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut router = Router::new();
    let mut notes = HashSet::new();
    for op in ops {
        if let Op::Note { method, .. } = op
            && notes.insert(method.clone())
        {
            let seen = seen.clone();
            router = router.notification_raw(method, move |n| {
                seen.lock().unwrap().push((false, n.method().to_owned(), parsed(n.params())));
                async {}
            });
        }
    }
    let recorded = seen.clone();
    router.fallback(move |req, reply| {
        // The synchronous part runs on the dispatch lane, in arrival order.
        recorded.lock().unwrap().push((true, req.method().to_owned(), parsed(req.params())));
        let (answer, pretty) = answers[calls.fetch_add(1, Ordering::SeqCst)].clone();
        async move {
            match answer {
                Ok(v) => reply.ok(raw(&v, pretty)),
                Err((code, message, data)) => {
                    let mut e = ErrorObject::new(code, message);
                    if let Some(d) = data {
                        e = e.with_raw_data(raw(&d, pretty));
                    }
                    reply.err(e)
                }
            };
        }
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

async fn round_trip(ops: Vec<Op>, framing: Framing, sizes_in: Vec<usize>, sizes_out: Vec<usize>) {
    let seen: Seen = Arc::default();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let client = Connection::builder().framing(framing).connect(chunked(ar, &sizes_out), aw);
    let server =
        Connection::builder().framing(framing).serve(server(&ops, seen.clone())).connect(chunked(br, &sizes_in), bw);
    let handle = client.handle();

    let mut calls = Vec::new();
    for op in &ops {
        match op {
            Op::Call { method, params, pretty, answer } => {
                let params = params.as_ref().map(|p| raw(p, *pretty));
                let handle = handle.clone();
                let method = method.clone();
                let mut call =
                    Box::pin(async move { handle.request_raw(&method, &params, CallOptions::default()).await });
                // The first poll queues the request, in order with the notifications around it.
                assert!(futures::poll!(call.as_mut()).is_pending());
                calls.push((call, answer.clone()));
            }
            Op::Note { method, params, pretty } => {
                let params = params.as_ref().map(|p| raw(p, *pretty));
                handle.notify(method, &params).await.expect("notify");
            }
        }
    }
    for (call, expected) in calls {
        let got = within(call).await;
        match (got, expected) {
            (Ok(result), Ok(value)) => {
                assert_eq!(serde_json::from_str::<Value>(result.get()).unwrap(), value)
            }
            (Err(Error::Remote(e)), Err((code, message, data))) => {
                assert_eq!((e.code, &e.message), (code, &message));
                assert_eq!(parsed(e.data.as_deref()), data);
            }
            (got, expected) => panic!("got {got:?}, expected {expected:?}"),
        }
    }
    // Every notification was dispatched before the answer to a later call, but the last ones
    // may still be on their way: close the client and let the server drain.
    within(client.close()).await;
    within(server.closed()).await;
    // After the peer's EOF what was read is still dispatched: `close` waits for that.
    within(server.close()).await;
    let expected: Vec<(bool, String, Option<Value>)> = ops
        .iter()
        .map(|op| match op {
            Op::Call { method, params, .. } => (true, method.clone(), params.clone()),
            Op::Note { method, params, .. } => (false, method.clone(), params.clone()),
        })
        .collect();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, expected, "the server did not see exactly what was sent, in order");
}

/// An id as it is spelled on the wire: a string with any characters, each written plainly or as a
/// `\u` escape; a number in any JSON form (past `u64`, with trailing zeros in its fraction, with
/// an exponent, negative zero). Two spellings of one number are two different ids; a string is
/// its value (see [`echo_of`]).
fn raw_id() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec((any::<char>(), any::<bool>()), 0..8).prop_map(|chars| spell_string(&chars)),
        "[0-9 \"\\\\-]{0,6}".prop_map(|s| Value::String(s).to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (1u64.., 0u8..10).prop_map(|(n, d)| format!("{n}{d}")),
        (any::<i32>(), prop::option::of(0u16..1000), prop::sample::select(vec!["", "e2", "E+2", "e-3", "E0"]))
            .prop_map(|(n, frac, exp)| format!("{n}{}{exp}", frac.map(|f| format!(".{f}0")).unwrap_or_default())),
        Just("-0".to_string()),
    ]
}

/// A JSON string literal of `chars`, each written as itself or (when its flag is set, and always
/// when JSON requires it) as a `\u` escape, astral characters as a surrogate pair.
fn spell_string(chars: &[(char, bool)]) -> String {
    let mut out = String::from('"');
    for &(c, escape) in chars {
        if escape || c < ' ' || c == '"' || c == '\\' {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// The exact bytes an id comes back as: a number as it was spelled (parsing it could lose
/// digits); a string as the same string, in serde_json's spelling (JSON escapes are decoded:
/// `"\u0030"` is the id `"0"`, as for every JSON peer).
fn echo_of(id: &str) -> String {
    match serde_json::from_str::<String>(id) {
        Ok(text) => Value::String(text).to_string(),
        Err(_) => id.to_owned(),
    }
}

/// An answer's id exactly as we wrote it, and its result.
#[derive(serde::Deserialize)]
struct Echoed<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    result: Value,
}

async fn ids_echoed(ids: Vec<String>, framing: Framing, sizes: Vec<usize>) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (or, ow) = tokio::io::split(ours);
    let echo = Router::new().fallback(|req, reply| {
        let params = parsed(req.params());
        async move {
            reply.ok(params);
        }
    });
    let conn = Connection::builder().framing(framing).serve(echo).connect(chunked(or, &sizes), ow);
    let (mut tr, mut tw) = tokio::io::split(theirs);
    let codec = framing.codec(FrameLimits::default());
    let mut wire = BytesMut::new();
    for (i, id) in ids.iter().enumerate() {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"echo","params":[{i}]}}"#);
        codec.encode(request.as_bytes(), &mut wire);
    }
    let reading = tokio::spawn(async move {
        let mut out = Vec::new();
        tr.read_to_end(&mut out).await.map(|_| out)
    });
    tw.write_all(&wire).await.unwrap();
    tw.shutdown().await.unwrap();
    let out = within(reading).await.unwrap().unwrap();
    drop(conn);

    let mut decoder = framing.codec(FrameLimits::default());
    let mut buf = BytesMut::from(&out[..]);
    let mut bodies = Vec::new();
    while let Some(frame) = decoder.decode_eof(&mut buf).expect("we wrote a broken frame") {
        let Frame::Message(body) = frame else { panic!("we wrote an over-long line") };
        bodies.push(body);
    }
    let answers: Vec<Echoed<'_>> = bodies
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap_or_else(|e| panic!("not an answer ({e}): {b:?}")))
        .collect();
    assert_eq!(answers.len(), ids.len(), "one answer per request: {bodies:?}");
    for (i, id) in ids.iter().enumerate() {
        // The bytes of the id, not a parsed value: `1.50` must not come back as `1.5`.
        let echo = echo_of(id);
        let matching: Vec<&Echoed<'_>> = answers.iter().filter(|a| a.id.get() == echo).collect();
        assert_eq!(matching.len(), 1, "id {id} must come back exactly once, spelled the same: {bodies:?}");
        assert_eq!(matching[0].result, serde_json::json!([i]), "the answer to {id} is another's");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn calls_notifications_results_and_errors_cross_unchanged_in_order(
        ops in prop::collection::vec(op(), 1..10),
        newline in any::<bool>(),
        sizes_in in prop::collection::vec(1usize..64, 1..6),
        sizes_out in prop::collection::vec(1usize..64, 1..6),
    ) {
        let framing = if newline { Framing::NewlineDelimited } else { Framing::ContentLength };
        runtime().block_on(round_trip(ops, framing, sizes_in, sizes_out));
    }

    #[test]
    fn ids_of_both_types_are_echoed_exactly(
        ids in prop::collection::vec(raw_id(), 1..12),
        newline in any::<bool>(),
        sizes in prop::collection::vec(1usize..64, 1..6),
    ) {
        // Ids in flight together must differ (1 and "1", 1.5 and 1.50 are different ids; "0" and
        // "\u0030" are the same).
        let mut unique = HashSet::new();
        let ids: Vec<String> = ids.into_iter().filter(|id| unique.insert(echo_of(id))).collect();
        let framing = if newline { Framing::NewlineDelimited } else { Framing::ContentLength };
        runtime().block_on(ids_echoed(ids, framing, sizes));
    }
}

/// Found by the first property: `"data": null` came back as no data at all.
#[test]
fn error_data_null_is_kept() {
    let op = Op::Call {
        method: "call".into(),
        params: None,
        pretty: false,
        answer: Err((0, String::new(), Some(Value::Null))),
    };
    runtime().block_on(round_trip(vec![op], Framing::ContentLength, vec![1], vec![1]));
}
