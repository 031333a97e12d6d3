//! One MCP session: a connection of ours fed by the session's POSTs, and the SSE streams its
//! outbound messages go to.
//!
//! Every outbound message becomes an event in the session's log, on one stream: a POST's stream
//! (the answer to its request, and what the connection sends while that request is open), or
//! the standalone stream (`0`, the GET stream). An event is *undelivered* until the body of an
//! attached HTTP response takes it; undelivered bytes are the session's backlog, bounded (the
//! connection waits at the bound). Delivered events stay for resumption (`Last-Event-ID`) until
//! the replay budget evicts them, oldest first. Per stream, delivered events are a prefix of the
//! stream's events, so eviction looks only at each stream's front.
//!
//! A POST's stream whose answer was taken stays too (*retained*): the body taking an event
//! means hyper wrote it, not that the client read it, so a client whose connection broke
//! after the server wrote the answer can still resume and get it. A retained stream is
//! charged [`RETAINED_STREAM_BYTES`] to the replay budget besides its events, does not count
//! against the open streams' bound, and goes when eviction has taken its last event.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Sink;
use serde_json::Value;

use super::mirror::ToolHeaders;
use super::sse::encode_event;

/// A reservation cut down to the `len` bytes its message turned out to have (the rest goes
/// back to the budget).
pub(super) fn fit(mut permit: tokio::sync::OwnedSemaphorePermit, len: usize) -> tokio::sync::OwnedSemaphorePermit {
    let keep = len.max(1);
    if permit.num_permits() > keep {
        drop(permit.split(permit.num_permits() - keep));
    }
    permit
}

/// The standalone (GET) stream's number.
pub(super) const STANDALONE: u64 = 0;

/// What a retained stream (answered, every event taken, kept for a resumption) is charged to
/// its session's replay budget besides its events: its entry's size, rounded up.
pub(super) const RETAINED_STREAM_BYTES: usize = 256;

pub(super) struct Event {
    seq: u64,
    /// The SSE event (a session's), or the message itself (a stateless request's: it may go
    /// out as a JSON body, else it is framed as an event without an id when it is sent).
    bytes: Bytes,
    delivered: bool,
}

#[derive(Default)]
pub(super) struct StreamState {
    events: VecDeque<Event>,
    /// Request ids (their JSON text) of this POST not answered yet.
    pending: usize,
    /// The stream's last event (the answer to its last request) has this sequence number.
    complete_at: Option<u64>,
    /// The attachment (HTTP response body) reading this stream: its generation.
    attached: Option<u64>,
    waker: Option<Waker>,
    /// The id (JSON text) of the request this POST carried.
    request: Option<String>,
    /// When the stream was opened (a POST) or attached (the GET stream): the attachment's
    /// generation, counting up. The newest open stream takes what no request owns.
    opened: u64,
    /// Its request is a `tools/list`: the answer's `x-mcp-header` annotations are learnt.
    lists_tools: bool,
    /// Answered and every event taken, kept for a resumption (charged to the replay budget).
    retained: bool,
}

pub(super) struct State {
    next_seq: u64,
    next_stream: u64,
    next_generation: u64,
    pub(super) streams: HashMap<u64, StreamState>,
    /// Request id (JSON text) → the stream of the POST that carried it.
    pending_ids: HashMap<String, u64>,
    /// Progress token (JSON text) → request id (JSON text).
    progress: HashMap<String, String>,
    undelivered: usize,
    kept: usize,
    /// Streams kept after their answer was taken (they do not count as open).
    retained: usize,
    sink_waker: Option<Waker>,
    pub(super) last_activity: Instant,
    /// The connection ended (its sink closed): bodies end after what is queued.
    pub(super) closed: bool,
    /// The session was deleted: bodies end now.
    pub(super) terminated: bool,
    /// The server is stopping: the GET stream ends once it has sent what it has.
    draining: bool,
    /// The revision the session speaks (from the `initialize` answer, else the request).
    pub(super) version: String,
    /// A stateless request that may ask the client for input (2026-07-28's multi round-trip
    /// requests): what it asked and where it is.
    mrtr: Option<Mrtr>,
}

/// Limits of one session (from the server's settings).
#[derive(Clone, Copy)]
pub(super) struct Bounds {
    pub(super) backlog: usize,
    pub(super) replay: usize,
    pub(super) retry_ms: u64,
    pub(super) max_streams: usize,
    /// Posted bytes not taken by the connection yet.
    pub(super) inbound: usize,
}

/// What a session's connection takes from its inbound queue: a message, and what its being
/// taken releases (the bytes it held of the session's inbound budget, or a signal).
pub(super) type Inbound = (crate::framing::Frame, Receipt);

/// What a POST to a session holds until its connection takes the message: its share of the
/// session's inbound budget, and its bytes of the budget all sessions share.
pub(super) struct Reserved {
    pub(super) permit: tokio::sync::OwnedSemaphorePermit,
    #[allow(dead_code)] // Held: given back when dropped.
    pub(super) charge: Option<crate::transport::http::budget::Charge>,
}

/// Dropped when the connection takes its message.
pub(super) enum Receipt {
    /// Nothing to release.
    None,
    /// Bytes of the session's inbound budget (and of the server's, for all sessions).
    Bytes(#[allow(dead_code)] Reserved),
    /// Someone waits for the connection to have read this message.
    Read(#[allow(dead_code)] futures::channel::oneshot::Sender<()>),
}

pub(super) struct Session {
    pub(super) id: String,
    pub(super) principal: Option<String>,
    pub(super) bounds: Bounds,
    state: Mutex<State>,
    pub(super) inbound: futures::channel::mpsc::Sender<Inbound>,
    /// Bytes of inbound messages queued for the connection, not taken yet (each POST's
    /// message holds its share until the connection takes it).
    pub(super) inbound_budget: Arc<tokio::sync::Semaphore>,
    budget: usize,
    pub(super) connection: Mutex<Option<crate::Connection>>,
    /// A stateless request (revision 2026-07-28) rather than a session: one POST, answered
    /// as JSON or an SSE stream without event ids; closing its stream cancels it.
    pub(super) stateless: bool,
    /// Held while the session lives (a stateless request's slot in the server's count).
    pub(super) _slot: Option<Box<dyn Send + Sync>>,
    /// The server's knowledge of its tools' mirrored arguments, taught by `tools/list` answers.
    tool_headers: Arc<ToolHeaders>,
}

/// Why a POST's request could not be registered.
pub(super) enum Refused {
    DuplicateId,
    TooManyStreams,
}

impl Session {
    // One argument a field, from the one caller (the server's `start_session`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        id: String,
        principal: Option<String>,
        bounds: Bounds,
        version: String,
        inbound: futures::channel::mpsc::Sender<Inbound>,
        stateless: bool,
        slot: Option<Box<dyn Send + Sync>>,
        tool_headers: Arc<ToolHeaders>,
    ) -> Self {
        let mut streams = HashMap::new();
        streams.insert(STANDALONE, StreamState::default());
        Session {
            id,
            principal,
            bounds,
            state: Mutex::new(State {
                next_seq: 1,
                next_stream: 1,
                next_generation: 1,
                streams,
                pending_ids: HashMap::new(),
                progress: HashMap::new(),
                undelivered: 0,
                kept: 0,
                retained: 0,
                sink_waker: None,
                last_activity: Instant::now(),
                closed: false,
                terminated: false,
                draining: false,
                version,
                mrtr: None,
            }),
            inbound,
            inbound_budget: Arc::new(tokio::sync::Semaphore::new(bounds.inbound.clamp(1, u32::MAX as usize))),
            budget: bounds.inbound.clamp(1, u32::MAX as usize),
            connection: Mutex::new(None),
            stateless,
            _slot: slot,
            tool_headers,
        }
    }

    /// Queue one inbound message for the connection, holding its bytes of the inbound budget
    /// until the connection takes it (one message always fits). `Err` if the session ended.
    /// `reserved` is what the POST took before its body was read ([`Session::reserve`]).
    pub(super) async fn deliver_inbound(
        &self,
        frame: crate::framing::Frame,
        len: usize,
        reserved: Option<Reserved>,
    ) -> Result<(), ()> {
        use futures::SinkExt;
        let reserved = match reserved {
            Some(reserved) => reserved,
            None => Reserved { permit: self.reserve(len).await.ok_or(())?, charge: None },
        };
        self.inbound.clone().send((frame, Receipt::Bytes(reserved))).await.map_err(|_| ())
    }

    /// `len` bytes of the inbound budget (at most all of it: one message always fits); `None`
    /// once the session has ended.
    pub(super) async fn reserve(&self, len: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let want = len.clamp(1, self.budget) as u32;
        if self.lock().terminated {
            return None;
        }
        self.inbound_budget.clone().acquire_many_owned(want).await.ok()
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn touch(&self) {
        self.lock().last_activity = Instant::now();
    }

    /// A new stream for a POST carrying the request `id` (JSON text) with its progress token,
    /// attached to the response body being built: its body.
    pub(super) fn open_post_stream(
        self: &Arc<Self>,
        id: String,
        progress_token: Option<String>,
        lists_tools: bool,
    ) -> Result<SseBody, Refused> {
        let mut state = self.lock();
        if state.pending_ids.contains_key(&id) {
            return Err(Refused::DuplicateId);
        }
        if state.streams.len() - state.retained > self.bounds.max_streams {
            return Err(Refused::TooManyStreams);
        }
        let stream = state.next_stream;
        state.next_stream += 1;
        let generation = state.next_generation;
        state.next_generation += 1;
        let opened = generation;
        state.streams.insert(
            stream,
            StreamState {
                pending: 1,
                attached: Some(generation),
                request: Some(id.clone()),
                opened,
                lists_tools,
                ..StreamState::default()
            },
        );
        if let Some(token) = progress_token {
            state.progress.insert(token, id.clone());
        }
        state.pending_ids.insert(id, stream);
        state.last_activity = Instant::now();
        let cursor = state.next_seq - 1;
        let priming =
            if self.stateless { None } else { priming_event(&state.version, stream, cursor, self.bounds.retry_ms) };
        Ok(SseBody { session: self.clone(), stream, generation, cursor, first: priming, encode: !self.stateless })
    }

    /// Attach a GET: the standalone stream (`resume` = `None`), or the stream a
    /// `Last-Event-ID` names, from after that event. `None` when that stream is not there
    /// (answered and evicted, or never ours) or the standalone stream is attached already.
    pub(super) fn attach(self: &Arc<Self>, resume: Option<(u64, u64)>) -> Option<SseBody> {
        let mut state = self.lock();
        let (stream, cursor) = match resume {
            Some((stream, seq)) => (stream, seq),
            None => (STANDALONE, state.next_seq - 1),
        };
        let generation = state.next_generation;
        state.next_generation += 1;
        let version = state.version.clone();
        let st = state.streams.get_mut(&stream)?;
        if resume.is_none() && st.attached.is_some() {
            return None;
        }
        // A resumption replaces the attachment it resumes (that response is gone or going).
        st.attached = Some(generation);
        if resume.is_none() {
            st.opened = generation;
        }
        if let Some(waker) = st.waker.take() {
            waker.wake();
        }
        state.last_activity = Instant::now();
        let priming =
            if resume.is_none() { priming_event(&version, stream, cursor, self.bounds.retry_ms) } else { None };
        Some(SseBody { session: self.clone(), stream, generation, cursor, first: priming, encode: true })
    }

    /// Put an outbound message on its stream.
    fn push(self: &Arc<Self>, state: &mut State, body: Vec<u8>) {
        let mut parsed: Option<Value> = serde_json::from_slice(&body).ok();
        let mut body = body;
        if self.stateless {
            let Some(msg) = parsed.as_mut() else { return };
            if let (Some(method), Some(id)) = (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                // Revision 2026-07-28 has no server→client requests: an input request of a
                // request that may have them goes to the client in an `InputRequiredResult`
                // (its answer comes back in the retry); any other fails at once.
                match admit_input(state, method, msg, self.bounds.backlog) {
                    Ok(()) => self.input_round(state),
                    Err(why) => self.fail_input(id.clone(), why),
                }
                return;
            }
            // A notification of the handler's while the client is to retry (the round's
            // `InputRequiredResult` ends the stream it would go on): kept for the retry's
            // stream, counted in the backlog (the connection waits at its bound).
            if let Some(m) = state.mrtr.as_mut()
                && m.round.is_some()
                && msg.get("method").is_some()
                && msg.get("id").is_none()
            {
                state.undelivered += body.len();
                m.held.push_back(Bytes::from(body));
                return;
            }
            // The request's answer while the client is to retry (it came after the round's
            // `InputRequiredResult`): kept for the retry.
            if let Some(m) = state.mrtr.as_mut()
                && m.round.is_some()
                && msg.get("method").is_none()
                && msg.get("id").is_some_and(|id| is_text_of(id, &m.original))
            {
                m.early = Some(body);
                return;
            }
            // The request's answer goes out under the id of the request the client sent last
            // (the retry of a multi round-trip request).
            if let Some(m) = state.mrtr.as_ref()
                && msg.get("method").is_none()
                && msg.get("id").is_some_and(|id| is_text_of(id, &m.original))
                && !is_text_of(&m.answer_id, &m.original)
            {
                let answer_id = m.answer_id.clone();
                let stream = state.pending_ids.remove(&m.original);
                msg["id"] = answer_id.clone();
                if let Some(stream) = stream {
                    state.pending_ids.insert(answer_id.to_string(), stream);
                }
                body = msg.to_string().into_bytes();
            }
            // Every result of revision 2026-07-28 says its type; a handler's plain result is
            // a complete one.
            if let Some(result) = msg.get_mut("result").and_then(Value::as_object_mut)
                && !result.contains_key("resultType")
            {
                result.insert("resultType".into(), Value::from("complete"));
                body = msg.to_string().into_bytes();
            }
        }
        let stream = parsed.as_ref().map_or(STANDALONE, |msg| route(state, msg));
        let seq = state.next_seq;
        state.next_seq += 1;
        let bytes = if self.stateless {
            Bytes::from(body)
        } else {
            encode_event(Some(&format!("{stream}-{seq}")), None, &body)
        };
        state.undelivered += bytes.len();
        let is_answer = parsed.as_ref().is_some_and(|m| m.get("method").is_none() && m.get("id").is_some());
        if let Some(version) = parsed.as_ref().and_then(|m| m.get("result")?.get("protocolVersion")?.as_str()) {
            state.version = version.to_owned();
        }
        let st = state.streams.entry(stream).or_default();
        if is_answer
            && st.lists_tools
            && let Some(result) = parsed.as_ref().and_then(|m| m.get("result"))
        {
            for (tool, why) in self.tool_headers.learn(result) {
                tracing::warn!(%tool, %why, "an MCP tool's x-mcp-header is invalid: clients will leave it out");
            }
        }
        if is_answer && stream != STANDALONE {
            st.pending = st.pending.saturating_sub(1);
            if st.pending == 0 {
                st.complete_at = Some(seq);
            }
        }
        st.events.push_back(Event { seq, bytes, delivered: false });
        if let Some(waker) = st.waker.take() {
            waker.wake();
        }
    }

    /// End the session now: its bodies end, its connection closes.
    pub(super) fn terminate(&self) {
        let mut state = self.lock();
        state.terminated = true;
        for st in state.streams.values_mut() {
            if let Some(waker) = st.waker.take() {
                waker.wake();
            }
        }
        let parked = state.mrtr.as_mut().and_then(|m| Some((m.ctx.parked.clone(), m.round.take()?.token)));
        drop(state);
        if let Some((parked, token)) = parked
            && let Some(parked) = parked.upgrade()
        {
            parked.lock().unwrap_or_else(|p| p.into_inner()).remove(&token);
        }
        self.inbound_budget.close();
        if let Some(conn) = self.connection.lock().unwrap_or_else(|p| p.into_inner()).take() {
            conn.handle().close();
            drop(conn);
        }
    }

    /// A graceful stop: the standalone (GET) stream ends after what it has (it would never
    /// end by itself); the POSTs' streams end with their answers.
    pub(super) fn drain(&self) {
        let mut state = self.lock();
        state.draining = true;
        if let Some(st) = state.streams.get_mut(&STANDALONE)
            && let Some(waker) = st.waker.take()
        {
            waker.wake();
        }
    }

    /// Outbound bytes no reader has taken yet.
    pub(super) fn backlog(&self) -> usize {
        self.lock().undelivered
    }

    /// Is any HTTP response reading from this session?
    pub(super) fn attached(&self) -> bool {
        self.lock().streams.values().any(|s| s.attached.is_some())
    }
}

fn priming_event(version: &str, stream: u64, cursor: u64, retry_ms: u64) -> Option<Bytes> {
    // Revision 2025-11-25 (SEP-1699): an event with an id and no data first, so that a client
    // whose stream breaks before anything else came can resume; older clients may choke on it.
    (version >= "2025-11-25").then(|| encode_event(Some(&format!("{stream}-{cursor}")), Some(retry_ms), b""))
}

/// Which stream an outbound message goes to.
fn route(state: &mut State, msg: &Value) -> u64 {
    let method = msg.get("method").and_then(Value::as_str);
    match (method, msg.get("id")) {
        // An answer: the stream of the POST that asked.
        (None, Some(id)) => {
            let key = id.to_string();
            state.progress.retain(|_, request| *request != key);
            state.pending_ids.remove(&key).unwrap_or(STANDALONE)
        }
        (Some("notifications/progress"), _) => {
            let token = msg.get("params").and_then(|p| p.get("progressToken")).map(Value::to_string);
            token
                .and_then(|t| state.progress.get(&t))
                .and_then(|request| state.pending_ids.get(request))
                .copied()
                .unwrap_or_else(|| newest_open(state))
        }
        // A request or notification of the server's: it goes with the newest request still
        // open (what a handler sends while it runs), else on the GET stream.
        _ => newest_open(state),
    }
}

/// The newest stream open now: a POST's stream whose request is not answered yet, or the
/// GET stream if it is attached, whichever was opened last (2025-11-25: what is not tied to
/// a request goes on the GET stream or on a POST's stream in progress). With none open, the
/// GET stream keeps it (in the backlog) for when one attaches.
fn newest_open(state: &State) -> u64 {
    state
        .streams
        .iter()
        .filter(|(n, s)| if **n == STANDALONE { s.attached.is_some() } else { s.pending > 0 })
        .max_by_key(|(n, s)| (s.opened, **n))
        .map_or(STANDALONE, |(n, _)| *n)
}

/// The body of an SSE response: the events of one stream of a session, from a cursor on.
pub(super) struct SseBody {
    session: Arc<Session>,
    stream: u64,
    generation: u64,
    cursor: u64,
    first: Option<Bytes>,
    /// Events are SSE already (a session's), or are framed now (a stateless request's, once
    /// it is answered as a stream).
    encode: bool,
}

impl SseBody {
    /// A stateless request's first message, not framed: `(message, is the answer)`.
    pub(super) fn poll_first(&mut self, cx: &mut Context<'_>) -> Poll<Option<(Bytes, bool)>> {
        let encode = std::mem::replace(&mut self.encode, false);
        let polled = self.poll_event(cx);
        self.encode = encode;
        polled.map(|first| {
            first.map(|message| {
                let state = self.session.lock();
                let done =
                    state.streams.get(&self.stream).and_then(|s| s.complete_at).is_some_and(|at| self.cursor >= at);
                (message, done)
            })
        })
    }

    /// From now on events go out as SSE, `first` before them.
    pub(super) fn stream_from(&mut self, first: Bytes) {
        self.encode = true;
        self.first = Some(encode_event(None, None, &first));
    }

    pub(super) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(first));
        }
        let session = self.session.clone();
        let mut guard = session.lock();
        let state = &mut *guard;
        if state.terminated {
            return Poll::Ready(None);
        }
        let closed = state.closed;
        let draining = state.draining;
        let Some(st) = state.streams.get_mut(&self.stream) else { return Poll::Ready(None) };
        if st.attached != Some(self.generation) {
            return Poll::Ready(None);
        }
        if let Some(event) = st.events.iter_mut().find(|e| e.seq > self.cursor) {
            self.cursor = event.seq;
            let bytes = event.bytes.clone();
            if !event.delivered {
                event.delivered = true;
                state.undelivered -= bytes.len();
                state.kept += bytes.len();
                if let Some(waker) = state.sink_waker.take() {
                    waker.wake();
                }
                evict(state, session.bounds.replay);
            }
            state.last_activity = Instant::now();
            if session.stateless && self.encode {
                return Poll::Ready(Some(encode_event(None, None, &bytes)));
            }
            return Poll::Ready(Some(bytes));
        }
        if st.complete_at.is_some_and(|at| self.cursor >= at) || closed || (draining && self.stream == STANDALONE) {
            return Poll::Ready(None);
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Drop delivered events, oldest first, until the kept bytes fit the replay budget.
fn evict(state: &mut State, budget: usize) {
    while state.kept > budget {
        let oldest = state
            .streams
            .iter()
            .filter_map(|(n, s)| s.events.front().filter(|e| e.delivered).map(|e| (e.seq, *n)))
            .min();
        let Some((_, stream)) = oldest else { break };
        let st = state.streams.get_mut(&stream).expect("found above");
        let event = st.events.pop_front().expect("found above");
        state.kept -= event.bytes.len();
        if stream != STANDALONE && st.events.is_empty() && st.complete_at.is_some() && st.attached.is_none() {
            forget(state, stream);
        }
    }
}

/// Remove a finished stream, giving back what it held of the replay budget: its delivered
/// events' bytes and, when it was retained, its entry's charge.
fn forget(state: &mut State, stream: u64) {
    let Some(st) = state.streams.remove(&stream) else { return };
    state.kept -= st.events.iter().filter(|e| e.delivered).map(|e| e.bytes.len()).sum::<usize>();
    if st.retained {
        state.kept -= RETAINED_STREAM_BYTES;
        state.retained -= 1;
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        let mut state = self.session.lock();
        state.last_activity = Instant::now();
        let Some(st) = state.streams.get_mut(&self.stream) else { return };
        if st.attached == Some(self.generation) {
            st.attached = None;
            st.waker = None;
        }
        // A finished stream whose every event was taken. A session keeps it for a resumption
        // (taken is not read: the connection may have broken with the answer in flight) until
        // eviction takes its events; a stateless request's stream has no resumption.
        let done = self.stream != STANDALONE
            && st.attached.is_none()
            && st.complete_at.is_some_and(|at| self.cursor >= at)
            && st.events.iter().all(|e| e.delivered);
        if done && (self.session.stateless || st.events.is_empty()) {
            forget(&mut state, self.stream);
        } else if done && !st.retained {
            st.retained = true;
            state.retained += 1;
            state.kept += RETAINED_STREAM_BYTES;
            evict(&mut state, self.session.bounds.replay);
        }
        if !self.session.stateless {
            return;
        }
        // A stateless request's stream is its life: when it closes, the request is over.
        // Closed before the answer: that is the client's cancellation (2026-07-28). Closed
        // after an `InputRequiredResult` was read: it waits for the client's retry.
        let round = state.mrtr.as_ref().filter(|m| m.round.as_ref().is_some_and(|r| r.stream == self.stream));
        if round.is_some() && done {
            return;
        }
        let unanswered = match round {
            Some(m) if !done => Some(m.original.clone()),
            _ if done => None,
            _ => st_request(&state, self.stream),
        };
        drop(state);
        let session = self.session.clone();
        let Some(id) = unanswered else { return session.terminate() };
        let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": serde_json::from_str::<Value>(&id).unwrap_or(Value::Null),
                       "reason": "the client closed the response stream"}});
        let frame = crate::framing::Frame::Message(bytes::BytesMut::from(cancel.to_string().as_bytes()));
        let (read, was_read) = futures::channel::oneshot::channel();
        let _ = self.session.inbound.clone().try_send((frame, Receipt::Read(read)));
        // Close the connection once it has read the cancellation (or soon, if it does not).
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(CANCEL_READ_TIMEOUT, was_read).await;
                    session.terminate();
                });
            }
            Err(_) => session.terminate(),
        }
    }
}

/// How long a cancelled stateless request's connection gets to read the cancellation.
const CANCEL_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

fn st_request(state: &State, stream: u64) -> Option<String> {
    let st = state.streams.get(&stream)?;
    if st.complete_at.is_some() { None } else { st.request.clone() }
}

/// What the session's connection writes into: each message becomes an event.
pub(super) struct SessionSink {
    pub(super) session: Weak<Session>,
}

impl Sink<Vec<u8>> for SessionSink {
    type Error = io::Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        let Some(session) = self.session.upgrade() else {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "the MCP session is gone")));
        };
        let mut state = session.lock();
        if state.terminated {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "the MCP session was deleted")));
        }
        // At the bound, wait for a reader (one message always fits, however large).
        if state.undelivered > 0 && state.undelivered >= session.bounds.backlog {
            state.sink_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, body: Vec<u8>) -> Result<(), io::Error> {
        let Some(session) = self.session.upgrade() else {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the MCP session is gone"));
        };
        let mut state = session.lock();
        Session::push(&session, &mut state, body);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        if let Some(session) = self.session.upgrade() {
            let mut state = session.lock();
            state.closed = true;
            for st in state.streams.values_mut() {
                if let Some(waker) = st.waker.take() {
                    waker.wake();
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// Is `text` the JSON text of `id`?
fn is_text_of(id: &Value, text: &str) -> bool {
    serde_json::to_string(id).is_ok_and(|t| t == text)
}

/// Requests waiting for their retry (2026-07-28's multi round-trip requests), by the
/// `requestState` their `InputRequiredResult` gave.
pub(super) type Parked = Mutex<HashMap<String, Arc<Session>>>;

/// The prefix of the `requestState`s the transport makes (any other is a handler's own).
pub(super) const STATE_PREFIX: &str = "jsonrpc-duplex-input-";

/// What a stateless request that may ask the client for input needs to know.
pub(super) struct InputContext {
    pub(super) parked: Weak<Parked>,
    /// The request's method and `params.name`/`params.uri`: its retry must have the same.
    pub(super) method: String,
    pub(super) name: Option<String>,
    /// The client's capabilities (the request's `_meta`): only what it declared is asked.
    pub(super) capabilities: Value,
    /// How long a request waits for its retry.
    pub(super) timeout: Duration,
    /// Most `InputRequiredResult`s for one request.
    pub(super) max_rounds: usize,
}

struct Mrtr {
    ctx: InputContext,
    /// The id (JSON text) of the request as the connection knows it (the client's first).
    original: String,
    /// The id the client's current HTTP request has (the first, or the latest retry).
    answer_id: Value,
    /// Input requests not answered yet: key → (the connection's request id, the request,
    /// its bytes).
    outstanding: BTreeMap<String, (Value, Value, usize)>,
    bytes: usize,
    rounds: usize,
    next_key: u64,
    /// The `InputRequiredResult` of this round, on the stream it answers.
    round: Option<Round>,
    /// The request's answer, made while the client was to retry: the retry's answer.
    early: Option<Vec<u8>>,
    /// The handler's notifications made while the client was to retry, oldest first: the
    /// retry's stream begins with them (their bytes count in the session's backlog).
    held: VecDeque<Bytes>,
}

struct Round {
    stream: u64,
    seq: u64,
    token: String,
}

/// Take a handler's request to the client into the current request's input requests, or say
/// why it cannot be asked.
fn admit_input(state: &mut State, method: &str, msg: &Value, max_bytes: usize) -> Result<(), String> {
    let Some(m) = state.mrtr.as_mut() else {
        return Err(format!(
            "a request to the client ({method}) is not possible in MCP 2026-07-28 while answering this request: \
             only tools/call, prompts/get and resources/read may ask for input (an InputRequiredResult)"
        ));
    };
    let capability = match method {
        "elicitation/create" => "elicitation",
        "sampling/createMessage" => "sampling",
        "roots/list" => "roots",
        _ => {
            return Err(format!(
                "{method} cannot be asked of an MCP 2026-07-28 client: only elicitation/create, \
                 sampling/createMessage and roots/list go in an InputRequiredResult"
            ));
        }
    };
    if m.ctx.capabilities.get(capability).is_none() {
        return Err(format!("the MCP client did not declare the {capability:?} capability: {method} cannot be asked"));
    }
    let mut request = serde_json::json!({ "method": method });
    if let Some(params) = msg.get("params") {
        request["params"] = params.clone();
    }
    let len = request.to_string().len();
    if m.bytes + len > max_bytes {
        return Err(format!("the input requests of one MCP request are over {max_bytes} bytes"));
    }
    m.next_key += 1;
    m.outstanding.insert(format!("{capability}-{}", m.next_key), (msg["id"].clone(), request, len));
    m.bytes += len;
    Ok(())
}

fn input_required(m: &Mrtr, token: &str) -> Bytes {
    let requests: serde_json::Map<String, Value> =
        m.outstanding.iter().map(|(key, (_, request, _))| (key.clone(), request.clone())).collect();
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": m.answer_id, "result": {
        "resultType": "input_required", "inputRequests": requests, "requestState": token}});
    Bytes::from(answer.to_string())
}

impl Session {
    /// This stateless request may ask the client for input (`id` is its JSON-RPC id).
    pub(super) fn enable_input(&self, ctx: InputContext, id: &Value) {
        self.lock().mrtr = Some(Mrtr {
            ctx,
            original: id.to_string(),
            answer_id: id.clone(),
            outstanding: BTreeMap::new(),
            bytes: 0,
            rounds: 0,
            next_key: 0,
            round: None,
            early: None,
            held: VecDeque::new(),
        });
    }

    /// Fail a handler's request to the client with `why` (nothing goes to the client).
    fn fail_input(&self, id: Value, why: String) {
        let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": why}});
        let frame = crate::framing::Frame::Message(bytes::BytesMut::from(error.to_string().as_bytes()));
        let _ = self.inbound.clone().try_send((frame, Receipt::None));
    }

    /// Answer the client's current request with an `InputRequiredResult` of what is
    /// outstanding: a new round if its stream has no answer yet (parked under a fresh
    /// `requestState` until the retry or the timeout), else added to the round's answer while
    /// that is not taken. Past the most rounds, the outstanding requests fail instead.
    fn input_round(self: &Arc<Self>, state: &mut State) {
        let State { mrtr, streams, pending_ids, undelivered, next_seq, .. } = state;
        let Some(m) = mrtr.as_mut() else { return };
        if m.outstanding.is_empty() {
            return;
        }
        let Some(st) = pending_ids.get(&m.original).and_then(|stream| streams.get_mut(stream).map(|st| (*stream, st)))
        else {
            return;
        };
        let (stream, st) = st;
        if st.complete_at.is_some() {
            if let Some(round) = m.round.as_ref().filter(|r| r.stream == stream) {
                let bytes = input_required(m, &round.token);
                if let Some(event) = st.events.iter_mut().find(|e| e.seq == round.seq && !e.delivered) {
                    *undelivered = *undelivered + bytes.len() - event.bytes.len();
                    event.bytes = bytes;
                }
            }
            return;
        }
        if m.rounds >= m.ctx.max_rounds {
            let failed = std::mem::take(&mut m.outstanding);
            m.bytes = 0;
            let why =
                format!("the MCP client was asked for input {} times for this request, the most", m.ctx.max_rounds);
            for (_, (id, _, _)) in failed {
                self.fail_input(id, why.clone());
            }
            return;
        }
        m.rounds += 1;
        let token = format!("{STATE_PREFIX}{}", new_session_id());
        let seq = *next_seq;
        *next_seq += 1;
        let bytes = input_required(m, &token);
        *undelivered += bytes.len();
        st.pending = 0;
        st.complete_at = Some(seq);
        st.events.push_back(Event { seq, bytes, delivered: false });
        if let Some(waker) = st.waker.take() {
            waker.wake();
        }
        m.round = Some(Round { stream, seq, token: token.clone() });
        if let Some(parked) = m.ctx.parked.upgrade() {
            parked.lock().unwrap_or_else(|p| p.into_inner()).insert(token.clone(), self.clone());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(expire(Arc::downgrade(&parked), token, m.ctx.timeout));
            }
        }
    }

    /// Is a retry of `method` naming `name` the request this one is?
    pub(super) fn retries(&self, method: &str, name: Option<&str>) -> bool {
        self.lock().mrtr.as_ref().is_some_and(|m| m.ctx.method == method && m.ctx.name.as_deref() == name)
    }

    /// The client's retry (request `id`) of a parked request: a new
    /// stream for it (its body), and the answers in `inputResponses` to the input requests
    /// they answer, as messages for the connection. What is still not answered is asked again
    /// at once.
    pub(super) fn resume(
        self: &Arc<Self>,
        id: Value,
        responses: Option<&Value>,
    ) -> Option<(SseBody, Vec<(crate::framing::Frame, usize)>)> {
        let mut state = self.lock();
        if state.terminated {
            return None;
        }
        let m = state.mrtr.as_mut()?;
        m.round = None;
        m.answer_id = id;
        let original = m.original.clone();
        let mut answers = Vec::new();
        for (name, result) in responses.and_then(Value::as_object).into_iter().flatten() {
            if let Some((request_id, _, len)) = m.outstanding.remove(name) {
                m.bytes -= len;
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": request_id, "result": result}).to_string();
                answers.push((crate::framing::Frame::Message(bytes::BytesMut::from(answer.as_bytes())), answer.len()));
            }
        }
        let stream = state.next_stream;
        state.next_stream += 1;
        let generation = state.next_generation;
        state.next_generation += 1;
        let cursor = state.next_seq - 1;
        // What the handler said while the client was away goes first (already in the backlog).
        let held = state.mrtr.as_mut().map(|m| std::mem::take(&mut m.held)).unwrap_or_default();
        let events = held
            .into_iter()
            .map(|bytes| {
                let seq = state.next_seq;
                state.next_seq += 1;
                Event { seq, bytes, delivered: false }
            })
            .collect();
        state.streams.insert(
            stream,
            StreamState {
                events,
                pending: 1,
                attached: Some(generation),
                request: Some(original.clone()),
                opened: generation,
                ..StreamState::default()
            },
        );
        state.pending_ids.insert(original, stream);
        state.last_activity = Instant::now();
        let body = SseBody { session: self.clone(), stream, generation, cursor, first: None, encode: false };
        if let Some(early) = state.mrtr.as_mut().and_then(|m| m.early.take()) {
            // Answered already: that is the retry's answer, and nothing is asked any more.
            if let Some(m) = state.mrtr.as_mut() {
                m.outstanding.clear();
                m.bytes = 0;
            }
            self.push(&mut state, early);
        }
        self.input_round(&mut state);
        Some((body, answers))
    }
}

/// A parked request not retried within its time: it ends (its handler cancelled).
async fn expire(parked: Weak<Parked>, token: String, after: Duration) {
    tokio::time::sleep(after).await;
    let Some(parked) = parked.upgrade() else { return };
    let session = parked.lock().unwrap_or_else(|p| p.into_inner()).remove(&token);
    if let Some(session) = session {
        tracing::debug!("an MCP request waiting for the client's input expired");
        session.terminate();
    }
}

/// A fresh session id: 128 random bits, hex (the OS's generator; std's hasher keys if it
/// cannot be read).
pub(super) fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if from_os.is_err() {
        use std::hash::{BuildHasher, Hasher};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        for half in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
            h.write_u128(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
            );
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
