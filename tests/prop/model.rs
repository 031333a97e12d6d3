//! A model of one connection, against the real one.
//!
//! proptest draws a script of steps (requests both ways, notifications, cancellations, timeouts,
//! batches, garbage, late answers, the clock moving) and an ending (the peer's EOF or a local
//! close). A reference model says, after every step, what the peer must have been sent (in
//! order), which of our calls must have ended and how; at the end, what the last answers are,
//! how every call still open ended and the connection's [`CloseKind`]. The real [`Connection`]
//! runs the same script against a hand-written peer on an in-memory pipe, on a paused clock on
//! one thread, so the run is the same on any machine.
//!
//! Waiting for the connection to settle is a 1 ms sleep on the paused clock: tokio moves a
//! paused clock only when no task can run, so the sleep ends exactly when every task is idle.
//! Timeouts are whole seconds plus 500 ms and a script has far fewer than 500 steps, so no
//! settle ever ends on a deadline: what fires before what is never a matter of timing.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::{
    CallOptions, CancelProtocol, CancellationToken, CloseKind, Connection, Error, ErrorObject, Framing, Limits, Router,
    codes,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, WriteHalf};
use tokio::task::JoinHandle;

/// One step of a script.
#[derive(Clone, Debug)]
enum Step {
    /// The peer requests `add [n, 1]`: answered `n + 1` at once.
    PeerAdd(i64),
    /// The peer requests `hang`, which runs until it is cancelled.
    PeerHang,
    /// The peer requests a method nobody serves: `-32601`.
    PeerUnknownMethod,
    /// The peer notifies `note` (served) or `nobody/listens` (not served): nothing is answered.
    PeerNote { served: bool },
    /// The peer cancels its `n`-th open `hang` (or an id never used, when none is open).
    PeerCancel(usize),
    /// The peer cancels a request of its own already answered: nothing happens.
    PeerCancelAnswered(usize),
    /// The peer sends a `hang` under the id of its `n`-th unanswered request: `-32600` under
    /// that id, and the request it names goes on.
    PeerReuseId(usize),
    /// The peer answers an id we never used: absorbed.
    PeerAnswerUnknown,
    /// The peer sends a batch.
    PeerBatch(Vec<BatchItem>),
    /// The peer sends a line that is not JSON: `-32700` with id `null`.
    PeerGarbage,
    /// We call the peer (`ask [k]`), with a timeout of `secs` s + 500 ms or none.
    OurCall { timeout_secs: Option<u64> },
    /// We notify the peer.
    OurNotify,
    /// The peer answers our `n`-th open call: a result, or an error object with code 7 (a call
    /// we cancelled is answered `-32800`, as LSP says).
    PeerAnswer { call: usize, error: bool },
    /// The peer answers a call of ours that has already ended (timed out, cancelled and
    /// confirmed, answered): absorbed, nothing happens.
    PeerLateAnswer(usize),
    /// We cancel our `n`-th open call without a timeout (its token).
    OurCancel(usize),
    /// The clock moves on by `secs` seconds.
    Advance(u64),
}

/// An element of a batch.
#[derive(Clone, Debug)]
enum BatchItem {
    Add(i64),
    Note,
    UnknownMethod,
    /// Not an object: `-32600` with id `null`, in the batch's answer.
    Scalar,
}

/// The connection's limits in this test: small, so that requests wait and batches are refused.
const PERMITS: usize = 2;
const MAX_BATCH: usize = 3;

/// What a request of the peer's asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Add(i64),
    Hang,
    Unknown,
}

/// A request of the peer's that has not been answered.
#[derive(Clone, Debug)]
struct Inbound {
    id: i64,
    kind: Kind,
    /// The batch it came in, if any.
    batch: Option<usize>,
}

/// A batch whose answer is not complete.
#[derive(Debug, Default)]
struct BatchState {
    answers: Vec<Seen>,
    left: usize,
}

/// How the script ends.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// The peer closes its sending side.
    PeerEof,
    /// We close the connection.
    LocalClose,
}

fn step() -> impl Strategy<Value = Step> {
    let item = prop_oneof![
        (-5i64..5).prop_map(BatchItem::Add),
        Just(BatchItem::Note),
        Just(BatchItem::UnknownMethod),
        Just(BatchItem::Scalar)
    ];
    prop_oneof![
        3 => (-100i64..100).prop_map(Step::PeerAdd),
        2 => Just(Step::PeerHang),
        1 => Just(Step::PeerUnknownMethod),
        1 => any::<bool>().prop_map(|served| Step::PeerNote { served }),
        2 => (0usize..4).prop_map(Step::PeerCancel),
        1 => (0usize..4).prop_map(Step::PeerCancelAnswered),
        1 => (0usize..4).prop_map(Step::PeerReuseId),
        1 => Just(Step::PeerAnswerUnknown),
        2 => proptest::collection::vec(item, 0..5).prop_map(Step::PeerBatch),
        1 => Just(Step::PeerGarbage),
        3 => proptest::option::of(1u64..4).prop_map(|timeout_secs| Step::OurCall { timeout_secs }),
        1 => Just(Step::OurNotify),
        3 => ((0usize..4), any::<bool>()).prop_map(|(call, error)| Step::PeerAnswer { call, error }),
        1 => (0usize..4).prop_map(Step::PeerLateAnswer),
        2 => (0usize..4).prop_map(Step::OurCancel),
        2 => (1u64..3).prop_map(Step::Advance),
    ]
}

/// How one of our calls stands, in the model and as observed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Pending,
    Ok(Value),
    Remote(i64),
    Cancelled,
    Timeout,
    Lost(CloseKind),
}

fn outcome_of(result: Result<Value, Error>) -> Outcome {
    match result {
        Ok(v) => Outcome::Ok(v),
        Err(Error::Remote(e)) => Outcome::Remote(e.code),
        Err(Error::Cancelled) => Outcome::Cancelled,
        Err(Error::Timeout(_)) => Outcome::Timeout,
        Err(Error::ConnectionLost(reason)) => Outcome::Lost(reason.kind),
        Err(other) => panic!("a call ended in an error the model never expects: {other}"),
    }
}

/// A message the peer must see: compared on what matters (ids of our own calls are ours to
/// choose, so a request of ours is matched on its method and params, and its id recorded).
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    /// An answer to the peer's request `id`: a result, or an error with this code.
    Answer { id: Value, answer: Result<Value, i64> },
    /// A batch of answers (compared as a set: JSON-RPC allows any order).
    Batch(Vec<Seen>),
    /// Our request `ask [k]` (call number `k` of the script).
    OurRequest { k: usize },
    /// Our notification `told [k]`.
    OurNotification { k: usize },
    /// Our cancellation of call `k`.
    OurCancel { k: usize },
}

/// One of our calls in the model.
#[derive(Debug)]
struct Call {
    deadline_ms: Option<u64>,
    cancelled: bool,
    outcome: Outcome,
}

/// The reference model.
#[derive(Debug, Default)]
struct Model {
    mcp: bool,
    now_ms: u64,
    next_peer_id: i64,
    /// The peer's `hang` requests whose handlers run (each holds one of the `PERMITS`).
    running: Vec<i64>,
    /// The peer's requests waiting for a permit, in arrival order.
    waiting: VecDeque<Inbound>,
    batches: Vec<BatchState>,
    calls: Vec<Call>,
    notifications: usize,
}

impl Model {
    fn peer_id(&mut self) -> i64 {
        self.next_peer_id += 1;
        1000 + self.next_peer_id
    }

    /// Every request of the peer's not answered yet.
    fn unanswered(&self) -> Vec<i64> {
        self.running.iter().copied().chain(self.waiting.iter().map(|r| r.id)).collect()
    }

    /// A request arrives: it waits its turn.
    fn arrive(&mut self, r: Inbound, seen: &mut Vec<Seen>) {
        self.waiting.push_back(r);
        self.dispatch(seen);
    }

    /// Start waiting requests while permits are free (`add` and unknown methods are answered at
    /// once and give theirs back).
    fn dispatch(&mut self, seen: &mut Vec<Seen>) {
        while self.running.len() < PERMITS {
            let Some(r) = self.waiting.pop_front() else { break };
            match r.kind {
                Kind::Hang => self.running.push(r.id),
                Kind::Add(a) => self.answer(&r, Ok(json!(a + 1)), seen),
                Kind::Unknown => self.answer(&r, Err(codes::METHOD_NOT_FOUND), seen),
            }
        }
    }

    fn answer(&mut self, r: &Inbound, answer: Result<Value, i64>, seen: &mut Vec<Seen>) {
        let answer = Seen::Answer { id: json!(r.id), answer };
        match r.batch {
            None => seen.push(answer),
            Some(b) => {
                let batch = &mut self.batches[b];
                batch.answers.push(answer);
                batch.left -= 1;
                if batch.left == 0 {
                    seen.push(Seen::Batch(std::mem::take(&mut batch.answers)));
                }
            }
        }
    }

    /// The requests the peer may cancel: running `hang`s and waiting requests not in a batch.
    fn cancellable(&self) -> Vec<i64> {
        let waiting = self.waiting.iter().filter(|r| r.batch.is_none()).map(|r| r.id);
        self.running.iter().copied().chain(waiting).collect()
    }

    /// The peer cancels `id`: answered `-32800` at once (under MCP, not at all), running or
    /// waiting; a permit it held goes to the next waiting request.
    fn cancel(&mut self, id: i64, seen: &mut Vec<Seen>) {
        if let Some(i) = self.running.iter().position(|&r| r == id) {
            self.running.remove(i);
            if !self.mcp {
                seen.push(Seen::Answer { id: json!(id), answer: Err(codes::REQUEST_CANCELLED) });
            }
            self.dispatch(seen);
        } else if let Some(i) = self.waiting.iter().position(|r| r.id == id) {
            let r = self.waiting.remove(i).expect("there");
            if !self.mcp {
                self.answer(&r, Err(codes::REQUEST_CANCELLED), seen);
            }
        }
    }

    /// The connection ends: every running and waiting request is answered `-32800`.
    fn end(&mut self, seen: &mut Vec<Seen>) {
        for id in std::mem::take(&mut self.running) {
            seen.push(Seen::Answer { id: json!(id), answer: Err(codes::REQUEST_CANCELLED) });
        }
        while let Some(r) = self.waiting.pop_front() {
            self.answer(&r, Err(codes::REQUEST_CANCELLED), seen);
        }
    }

    /// Our calls the peer has not answered and that have not ended.
    fn open_calls(&self) -> Vec<usize> {
        (0..self.calls.len()).filter(|&k| self.calls[k].outcome == Outcome::Pending).collect()
    }

    /// The clock moves to `to`: calls whose deadline passes time out, in deadline order, each
    /// sending the peer a cancellation.
    fn advance_to(&mut self, to: u64, seen: &mut Vec<Seen>) {
        let mut due: Vec<(u64, usize)> = (0..self.calls.len())
            .filter_map(|k| {
                let c = &self.calls[k];
                let d = c.deadline_ms?;
                (c.outcome == Outcome::Pending && d <= to).then_some((d, k))
            })
            .collect();
        due.sort();
        for (_, k) in due {
            self.calls[k].outcome = Outcome::Timeout;
            seen.push(Seen::OurCancel { k });
        }
        self.now_ms = to;
    }
}

/// The peer's side of the pipe: what it has read, and its write half.
struct Peer {
    framing: Framing,
    /// MCP's cancellation (`notifications/cancelled`, cancelled requests not answered) or LSP's
    /// (`$/cancelRequest`, answered `-32800`).
    mcp: bool,
    writer: Option<WriteHalf<DuplexStream>>,
    inbox: Arc<Mutex<(Vec<u8>, bool)>>,
    /// Wire ids of our calls, by call number.
    ids: BTreeMap<usize, Value>,
}

impl Peer {
    async fn send(&mut self, body: &str) {
        let bytes = match self.framing {
            Framing::ContentLength => format!("Content-Length: {}\r\n\r\n{body}", body.len()),
            _ => format!("{body}\n"),
        };
        let w = self.writer.as_mut().expect("the peer's write side is open");
        w.write_all(bytes.as_bytes()).await.expect("the pipe takes the peer's bytes");
    }

    /// Every whole message read so far (taken out of the inbox).
    fn take_messages(&mut self) -> Vec<Value> {
        let mut inbox = self.inbox.lock().unwrap();
        let buf = &mut inbox.0;
        let mut out = Vec::new();
        loop {
            let (start, len) = match self.framing {
                Framing::ContentLength => {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else { break };
                    let header = std::str::from_utf8(&buf[..end]).expect("a UTF-8 header");
                    let len: usize = header
                        .strip_prefix("Content-Length: ")
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("a header we wrote: {header:?}"));
                    if buf.len() < end + 4 + len {
                        break;
                    }
                    (end + 4, len)
                }
                _ => {
                    let Some(end) = buf.iter().position(|&b| b == b'\n') else { break };
                    (0, end)
                }
            };
            let body = &buf[start..start + len];
            out.push(serde_json::from_slice(body).unwrap_or_else(|e| {
                panic!("we wrote something that is not JSON ({e}): {:?}", String::from_utf8_lossy(body))
            }));
            let consumed = start + len + usize::from(self.framing != Framing::ContentLength);
            buf.drain(..consumed);
        }
        out
    }

    /// Match what the peer read against what the model says, in order.
    #[track_caller]
    fn check(&mut self, expected: &[Seen], context: &str) {
        let got = self.take_messages();
        assert_eq!(got.len(), expected.len(), "{context}: the peer read {got:?}, the model says {expected:?}");
        for (message, want) in got.iter().zip(expected) {
            self.check_one(message, want, context);
        }
    }

    #[track_caller]
    fn check_one(&mut self, message: &Value, want: &Seen, context: &str) {
        if !matches!(want, Seen::Batch(_)) {
            assert_eq!(message["jsonrpc"], "2.0", "{context}: {message}");
        }
        match want {
            Seen::Answer { id, answer } => {
                assert_eq!(&message["id"], id, "{context}: {message} answers another id than {want:?}");
                match answer {
                    Ok(result) => assert_eq!(&message["result"], result, "{context}: {message}"),
                    Err(code) => {
                        assert_eq!(message["error"]["code"], *code, "{context}: {message}");
                        assert!(message.get("result").is_none(), "{context}: {message}");
                    }
                }
            }
            Seen::Batch(items) => {
                let got = message.as_array().unwrap_or_else(|| panic!("{context}: not a batch: {message}"));
                assert_eq!(got.len(), items.len(), "{context}: {message} against {items:?}");
                let key = |v: &Value| v["id"].to_string();
                let mut got: Vec<&Value> = got.iter().collect();
                got.sort_by_key(|v| key(v));
                let mut items: Vec<&Seen> = items.iter().collect();
                items.sort_by_key(|s| match s {
                    Seen::Answer { id, .. } => id.to_string(),
                    _ => unreachable!("a batch holds answers"),
                });
                for (m, s) in got.into_iter().zip(items) {
                    self.check_one(m, s, context);
                }
            }
            Seen::OurRequest { k } => {
                assert_eq!(message["method"], "ask", "{context}: {message}");
                assert_eq!(message["params"], json!([k]), "{context}: {message}");
                let id = message["id"].clone();
                assert!(id.is_number() || id.is_string(), "{context}: {message}");
                assert!(!self.ids.values().any(|v| *v == id), "{context}: an id used twice: {message}");
                self.ids.insert(*k, id);
            }
            Seen::OurNotification { k } => {
                assert_eq!(message, &json!({"jsonrpc": "2.0", "method": "told", "params": [k]}), "{context}");
            }
            Seen::OurCancel { k } => {
                let id = &self.ids[k];
                if self.mcp {
                    assert_eq!(message["method"], "notifications/cancelled", "{context}: {message}");
                    assert_eq!(&message["params"]["requestId"], id, "{context}: {message}");
                } else {
                    assert_eq!(
                        message,
                        &json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}}),
                        "{context}"
                    );
                }
            }
        }
    }

    fn eof(&self) -> bool {
        self.inbox.lock().unwrap().1
    }
}

fn router() -> Router {
    Router::new()
        .method("add", |(a, b): (i64, i64), _cx| async move { Ok::<_, ErrorObject>(a + b) })
        .method("hang", |(): (), _cx| async move {
            std::future::pending::<()>().await;
            Ok::<(), ErrorObject>(())
        })
        .notification("note", |_: Value, _cx| async move {})
}

/// The peer's cancellation of its request `id`.
fn cancel_message(mcp: bool, id: i64) -> String {
    if mcp {
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"enough"}})
    } else {
        json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":id}})
    }
    .to_string()
}

/// Let every task run until none can (see the module's notes).
async fn settle(model: &mut Model, seen: &mut Vec<Seen>) {
    tokio::time::sleep(Duration::from_millis(1)).await;
    model.advance_to(model.now_ms + 1, seen);
}

/// Run `script` against the model and the real connection.
async fn run(script: Vec<Step>, ending: Ending, framing: Framing, mcp: bool) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let limits = Limits::new().max_concurrent_requests(PERMITS).max_batch_len(MAX_BATCH);
    let cancel = if mcp { CancelProtocol::mcp() } else { CancelProtocol::lsp() };
    let conn =
        Connection::builder().framing(framing).cancel_protocol(cancel).limits(limits).serve(router()).connect_io(ours);
    let (mut rd, wr) = tokio::io::split(theirs);
    let inbox = Arc::new(Mutex::new((Vec::new(), false)));
    let reader = {
        let inbox = inbox.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match rd.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => inbox.lock().unwrap().0.extend_from_slice(&buf[..n]),
                }
            }
            inbox.lock().unwrap().1 = true;
        })
    };
    let mut peer = Peer { framing, mcp, writer: Some(wr), inbox, ids: BTreeMap::new() };
    let mut model = Model { mcp, ..Model::default() };
    let mut tasks: Vec<JoinHandle<Result<Value, Error>>> = Vec::new();
    let mut tokens: Vec<CancellationToken> = Vec::new();
    let mut observed: Vec<Outcome> = Vec::new();

    for (n, step) in script.iter().enumerate() {
        let context = format!("step {n} ({step:?}) of {script:?}, ending {ending:?}, {framing:?}, mcp {mcp}");
        let mut seen = Vec::new();
        match step {
            Step::PeerAdd(a) => {
                let id = model.peer_id();
                peer.send(&json!({"jsonrpc":"2.0","id":id,"method":"add","params":[a, 1]}).to_string()).await;
                model.arrive(Inbound { id, kind: Kind::Add(*a), batch: None }, &mut seen);
            }
            Step::PeerHang => {
                let id = model.peer_id();
                peer.send(&json!({"jsonrpc":"2.0","id":id,"method":"hang"}).to_string()).await;
                model.arrive(Inbound { id, kind: Kind::Hang, batch: None }, &mut seen);
            }
            Step::PeerUnknownMethod => {
                let id = model.peer_id();
                peer.send(&json!({"jsonrpc":"2.0","id":id,"method":"no/such/method","params":[]}).to_string()).await;
                model.arrive(Inbound { id, kind: Kind::Unknown, batch: None }, &mut seen);
            }
            Step::PeerNote { served } => {
                let method = if *served { "note" } else { "nobody/listens" };
                peer.send(&json!({"jsonrpc":"2.0","method":method,"params":{"x":1}}).to_string()).await;
            }
            Step::PeerCancel(i) => {
                let open = model.cancellable();
                if open.is_empty() {
                    // An id never used: nothing to cancel, nothing answered.
                    peer.send(&cancel_message(mcp, 999_999)).await;
                } else {
                    let id = open[i % open.len()];
                    peer.send(&cancel_message(mcp, id)).await;
                    model.cancel(id, &mut seen);
                }
            }
            Step::PeerCancelAnswered(i) => {
                let open = model.unanswered();
                let answered: Vec<i64> =
                    (1..=model.next_peer_id).map(|n| 1000 + n).filter(|id| !open.contains(id)).collect();
                if let Some(&id) = answered.get(i % answered.len().max(1)) {
                    peer.send(&cancel_message(mcp, id)).await;
                }
            }
            Step::PeerReuseId(i) => {
                let open = model.unanswered();
                if let Some(&id) = open.get(i % open.len().max(1)) {
                    peer.send(&json!({"jsonrpc":"2.0","id":id,"method":"hang"}).to_string()).await;
                    seen.push(Seen::Answer { id: json!(id), answer: Err(codes::INVALID_REQUEST) });
                }
            }
            Step::PeerAnswerUnknown => {
                peer.send(r#"{"jsonrpc":"2.0","id":"never-ours","result":1}"#).await;
            }
            Step::PeerBatch(items) => {
                let mut batch = Vec::new();
                let mut requests = Vec::new();
                let mut answers = Vec::new();
                for item in items {
                    match item {
                        BatchItem::Add(a) => {
                            let id = model.peer_id();
                            batch.push(json!({"jsonrpc":"2.0","id":id,"method":"add","params":[a, 1]}));
                            requests.push((id, Kind::Add(*a)));
                        }
                        BatchItem::Note => batch.push(json!({"jsonrpc":"2.0","method":"note","params":[]})),
                        BatchItem::UnknownMethod => {
                            let id = model.peer_id();
                            batch.push(json!({"jsonrpc":"2.0","id":id,"method":"no/such/method"}));
                            requests.push((id, Kind::Unknown));
                        }
                        BatchItem::Scalar => {
                            batch.push(json!(5));
                            answers.push(Seen::Answer { id: Value::Null, answer: Err(codes::INVALID_REQUEST) });
                        }
                    }
                }
                peer.send(&Value::Array(batch).to_string()).await;
                if items.is_empty() || items.len() > MAX_BATCH {
                    // An empty array is an invalid request, and a batch over the limit is
                    // refused whole: one -32600 with id null, none of it run.
                    seen.push(Seen::Answer { id: Value::Null, answer: Err(codes::INVALID_REQUEST) });
                } else if requests.is_empty() {
                    if !answers.is_empty() {
                        seen.push(Seen::Batch(answers));
                    }
                } else {
                    let b = model.batches.len();
                    model.batches.push(BatchState { answers, left: requests.len() });
                    for (id, kind) in requests {
                        model.arrive(Inbound { id, kind, batch: Some(b) }, &mut seen);
                    }
                }
            }
            Step::PeerGarbage => {
                peer.send("{oops").await;
                seen.push(Seen::Answer { id: Value::Null, answer: Err(codes::PARSE_ERROR) });
            }
            Step::OurCall { timeout_secs } => {
                let k = model.calls.len();
                let token = CancellationToken::new();
                let mut options = CallOptions::new().cancel(token.clone());
                let deadline_ms = timeout_secs.map(|s| {
                    let t = s * 1000 + 500;
                    options = options.clone().timeout(Duration::from_millis(t));
                    model.now_ms + t
                });
                let h = conn.handle();
                tasks.push(tokio::spawn(async move { h.request_with::<Value>("ask", [k], options).await }));
                tokens.push(token);
                observed.push(Outcome::Pending);
                model.calls.push(Call { deadline_ms, cancelled: false, outcome: Outcome::Pending });
                seen.push(Seen::OurRequest { k });
            }
            Step::OurNotify => {
                let k = model.notifications;
                model.notifications += 1;
                conn.handle().notify("told", [k]).await.expect("a notification is queued");
                seen.push(Seen::OurNotification { k });
            }
            Step::PeerAnswer { call, error } => {
                let open = model.open_calls();
                if let Some(&k) = open.get(call % open.len().max(1)) {
                    let id = peer.ids[&k].clone();
                    let c = &mut model.calls[k];
                    let (body, outcome) = if c.cancelled {
                        let e = json!({"code": codes::REQUEST_CANCELLED, "message": "cancelled"});
                        (json!({"jsonrpc":"2.0","id":id,"error":e}), Outcome::Cancelled)
                    } else if *error {
                        (json!({"jsonrpc":"2.0","id":id,"error":{"code":7,"message":"no"}}), Outcome::Remote(7))
                    } else {
                        (json!({"jsonrpc":"2.0","id":id,"result":{"k":k}}), Outcome::Ok(json!({"k": k})))
                    };
                    c.outcome = outcome;
                    peer.send(&body.to_string()).await;
                }
            }
            Step::PeerLateAnswer(i) => {
                let ended: Vec<usize> = (0..model.calls.len())
                    .filter(|&k| model.calls[k].outcome != Outcome::Pending && peer.ids.contains_key(&k))
                    .collect();
                if let Some(&k) = ended.get(i % ended.len().max(1)) {
                    let id = peer.ids[&k].clone();
                    peer.send(&json!({"jsonrpc":"2.0","id":id,"result":"late"}).to_string()).await;
                }
            }
            Step::OurCancel(i) => {
                let cancellable: Vec<usize> = model
                    .open_calls()
                    .into_iter()
                    .filter(|&k| !model.calls[k].cancelled && model.calls[k].deadline_ms.is_none())
                    .collect();
                if let Some(&k) = cancellable.get(i % cancellable.len().max(1)) {
                    tokens[k].cancel();
                    model.calls[k].cancelled = true;
                    if mcp {
                        // Nobody answers a cancelled request under MCP: the call ends now.
                        model.calls[k].outcome = Outcome::Cancelled;
                    }
                    seen.push(Seen::OurCancel { k });
                }
            }
            Step::Advance(secs) => {
                tokio::time::sleep(Duration::from_secs(*secs)).await;
                let to = model.now_ms + secs * 1000;
                model.advance_to(to, &mut seen);
            }
        }
        settle(&mut model, &mut seen).await;
        peer.check(&seen, &context);
        check_calls(&model, &mut tasks, &mut observed, &context).await;
        assert!(!conn.is_closed(), "{context}: the connection closed");
    }

    // The ending.
    let context = format!("the ending {ending:?} of {script:?}, {framing:?}, mcp {mcp}");
    let kind = match ending {
        Ending::PeerEof => {
            let mut w = peer.writer.take().expect("open");
            w.shutdown().await.expect("the peer's shutdown");
            drop(w);
            CloseKind::RemoteClosed
        }
        Ending::LocalClose => CloseKind::LocallyClosed,
    };
    // Kept until the peer has seen our end: dropping it would close it here and now.
    let mut kept = None;
    let reason = match ending {
        Ending::PeerEof => {
            let reason = conn.closed().await;
            kept = Some(conn);
            reason
        }
        Ending::LocalClose => conn.close().await,
    };
    assert_eq!(reason.kind, kind, "{context}: {reason}");
    // Every call still open fails with the reason (one we cancelled too: the peer can no
    // longer confirm it).
    for c in &mut model.calls {
        if c.outcome == Outcome::Pending {
            c.outcome = Outcome::Lost(kind);
        }
    }
    // The peer sees its last answers (every `hang` still running is cancelled: at once on a
    // local close, after the EOF grace otherwise) and then the end of our output.
    let eof = tokio::time::timeout(Duration::from_secs(60), async {
        while !peer.eof() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    assert!(eof.await.is_ok(), "{context}: our output never ended");
    // Their order is not the model's business: compared as a set.
    let mut last = peer.take_messages();
    last.sort_by_key(message_key);
    let mut expected = Vec::new();
    model.end(&mut expected);
    expected.sort_by_key(seen_key);
    assert_eq!(last.len(), expected.len(), "{context}: the last answers {last:?}, the model says {expected:?}");
    for (m, s) in last.iter().zip(&expected) {
        peer.check_one(m, s, &context);
    }
    check_calls(&model, &mut tasks, &mut observed, &context).await;
    drop(kept);
    reader.await.expect("the peer's reader");
}

/// A key to sort answers by: the id, or a batch's ids.
fn message_key(m: &Value) -> String {
    match m.as_array() {
        Some(items) => {
            let mut ids: Vec<String> = items.iter().map(|i| i["id"].to_string()).collect();
            ids.sort();
            format!("[{}]", ids.join(","))
        }
        None => m["id"].to_string(),
    }
}

fn seen_key(s: &Seen) -> String {
    match s {
        Seen::Answer { id, .. } => id.to_string(),
        Seen::Batch(items) => {
            let mut ids: Vec<String> = items.iter().map(seen_key).collect();
            ids.sort();
            format!("[{}]", ids.join(","))
        }
        other => unreachable!("the last messages are answers: {other:?}"),
    }
}

/// Every call's observed state equals the model's.
async fn check_calls(
    model: &Model,
    tasks: &mut [JoinHandle<Result<Value, Error>>],
    observed: &mut [Outcome],
    context: &str,
) {
    for (k, call) in model.calls.iter().enumerate() {
        if observed[k] == Outcome::Pending && tasks[k].is_finished() {
            observed[k] = outcome_of((&mut tasks[k]).await.expect("a call's task"));
        }
        assert_eq!(observed[k], call.outcome, "{context}: call {k} ({call:?})");
    }
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_connection_does_what_the_model_says(
        script in proptest::collection::vec(step(), 0..40),
        eof in any::<bool>(),
        newline in any::<bool>(),
        mcp in any::<bool>(),
    ) {
        let ending = if eof { Ending::PeerEof } else { Ending::LocalClose };
        let framing = if newline { Framing::NewlineDelimited } else { Framing::ContentLength };
        paused_runtime().block_on(run(script, ending, framing, mcp));
    }
}
