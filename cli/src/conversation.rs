//! A trace's records as a conversation: each answer paired with its request (and its latency),
//! cancellations and progress reports tied to the request they are about. Shared by the live
//! view, `show` (text, summary, HTML) and `replay`.

use std::collections::HashMap;
use std::sync::LazyLock;

use jsonrpc_duplex_core::{CancelProtocol, Profile, ProgressProtocol, names};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::trace::{Kind, Record, Side};

/// What one event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// A request (has an id and a method).
    Request,
    /// A notification (a method, no id).
    Notification,
    /// A successful answer.
    Result,
    /// An error answer.
    Error,
    /// A message that is not JSON-RPC (not JSON, or not a request, notification or answer).
    Unparsed,
    /// A line of the server's stderr.
    Stderr,
    /// Something that happened that is not a message.
    Note,
    /// The server exited.
    Exit,
}

/// An error answer's code and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ErrorSummary {
    /// The code.
    pub(crate) code: i64,
    /// The message.
    pub(crate) message: String,
}

/// One message (one element of a batch), or one other record, in conversation terms.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    /// The event's position among all events of the conversation (from 0).
    pub(crate) index: usize,
    /// Seconds since the trace started.
    pub(crate) t: f64,
    /// Who sent it (none for notes about both, and for the exit).
    pub(crate) from: Option<Side>,
    /// What it is.
    pub(crate) kind: EventKind,
    /// The id as written (`1`, `"abc"`), for requests and answers.
    pub(crate) id: Option<String>,
    /// The method: a request's or notification's own, an answer's request's.
    pub(crate) method: Option<String>,
    /// For an answer: seconds since its request.
    pub(crate) latency: Option<f64>,
    /// For an answer: the event index of its request; for a cancellation: of the cancelled one.
    pub(crate) request: Option<usize>,
    /// For an error answer: its code and message.
    pub(crate) error: Option<ErrorSummary>,
    /// Whether the request this answers (or this request) was cancelled.
    pub(crate) cancelled: bool,
    /// What a reader should know beyond the message (what is cancelled, progress).
    pub(crate) note: Option<String>,
    /// The JSON text of the message, the raw text of a message that is not JSON, a stderr line,
    /// a note's text.
    pub(crate) text: String,
    /// The body's size in bytes (for a batch element: the element's text).
    pub(crate) size: u64,
}

/// A request waiting for its answer.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    /// Its method.
    pub(crate) method: String,
    /// When it was sent.
    pub(crate) t: f64,
    /// Its event's index.
    pub(crate) event: usize,
    /// Whether its sender cancelled it.
    pub(crate) cancelled: bool,
}

/// The pairing state, fed one record at a time.
#[derive(Default)]
pub(crate) struct Conversation {
    /// (the requester, the id as written) → the request.
    pending: HashMap<(Side, String), Pending>,
    /// Progress token (as written) → (requester, id, method) of the request that passed it.
    tokens: HashMap<String, (Side, String, String)>,
    /// Events made so far.
    events: usize,
}

/// The members of a message that matter here; everything else stays in the text.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Box<RawValue>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<ErrorShape>,
}

#[derive(Deserialize)]
struct ErrorShape {
    code: i64,
    #[serde(default)]
    message: String,
}

/// `"result": null` is a result (`null`), not an absent member.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

impl Conversation {
    /// A conversation with nothing in it yet.
    pub(crate) fn new() -> Self {
        Conversation::default()
    }

    /// The events of the next record (none for the header, several for a batch).
    pub(crate) fn feed(&mut self, record: &Record) -> Vec<Event> {
        let blank = Event {
            index: self.events,
            t: record.time(),
            from: record.from,
            kind: EventKind::Note,
            id: None,
            method: None,
            latency: None,
            request: None,
            error: None,
            cancelled: false,
            note: None,
            text: String::new(),
            size: record.size.unwrap_or(0),
        };
        let events = match record.kind {
            Kind::Header | Kind::Unknown => Vec::new(),
            Kind::Stderr => {
                vec![Event { kind: EventKind::Stderr, text: record.text.clone().unwrap_or_default(), ..blank }]
            }
            Kind::Note => vec![Event { text: record.text.clone().unwrap_or_default(), ..blank }],
            Kind::Exit => {
                vec![Event { kind: EventKind::Exit, from: Some(Side::Server), text: exit_text(record), ..blank }]
            }
            Kind::Message => match (&record.message, record.from) {
                (Some(message), Some(from)) => self.message(from, message.get(), blank),
                _ => vec![Event {
                    kind: EventKind::Unparsed,
                    text: record.raw.clone().unwrap_or_default(),
                    note: record.error.clone(),
                    ..blank
                }],
            },
        };
        self.events += events.len();
        events
    }

    fn message(&mut self, from: Side, text: &str, blank: Event) -> Vec<Event> {
        if text.starts_with('[') {
            let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(text) else {
                return vec![self.unparsed(text, "a batch that is not an array of messages", blank)];
            };
            if items.is_empty() {
                return vec![self.unparsed(text, "an empty batch", blank)];
            }
            let count = items.len();
            let mut events: Vec<Event> = items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let blank = Event { index: blank.index + i, size: item.get().len() as u64, ..blank.clone() };
                    self.single(from, item.get(), blank)
                })
                .collect();
            for (i, event) in events.iter_mut().enumerate() {
                let batch = format!("batch {}/{count}", i + 1);
                event.note = Some(event.note.take().map_or(batch.clone(), |note| format!("{batch}; {note}")));
            }
            return events;
        }
        vec![self.single(from, text, blank)]
    }

    fn unparsed(&self, text: &str, why: &str, blank: Event) -> Event {
        Event { kind: EventKind::Unparsed, text: text.to_owned(), note: Some(why.to_owned()), ..blank }
    }

    fn single(&mut self, from: Side, text: &str, blank: Event) -> Event {
        let Ok(envelope) = serde_json::from_str::<Envelope>(text) else {
            return self.unparsed(text, "not a JSON-RPC message", blank);
        };
        let event = Event { text: text.to_owned(), from: Some(from), ..blank };
        let id = envelope.id.as_ref().map(|id| id.get().to_owned()).filter(|id| id != "null");
        match (envelope.method, id) {
            (Some(method), Some(id)) => self.request(from, id, method, envelope.params.as_deref(), event),
            (Some(method), None) => self.notification(from, method, envelope.params.as_deref(), event),
            (None, id) if envelope.result.is_some() || envelope.error.is_some() => {
                self.answer(from, id, envelope.error, event)
            }
            (None, _) => self.unparsed(text, "neither a request, a notification nor an answer", event),
        }
    }

    fn request(&mut self, from: Side, id: String, method: String, params: Option<&RawValue>, event: Event) -> Event {
        for token in params.map(progress_tokens).unwrap_or_default() {
            self.tokens.insert(token, (from, id.clone(), method.clone()));
        }
        let pending = Pending { method: method.clone(), t: event.t, event: event.index, cancelled: false };
        let note = self
            .pending
            .insert((from, id.clone()), pending)
            .map(|_| "reuses the id of a request not answered yet".into());
        Event { kind: EventKind::Request, id: Some(id), method: Some(method), note, ..event }
    }

    fn notification(&mut self, from: Side, method: String, params: Option<&RawValue>, event: Event) -> Event {
        let params = params.and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok());
        // The spellings of every protocol the core knows (`Profile::presets`), whichever one
        // the recorded peers speak.
        let note = match &params {
            Some(p) => match spelling(&method) {
                Some(Spelling::Cancel(cancel)) => self.cancel(from, p.get(&*cancel.id_member)),
                Some(Spelling::Progress(progress)) => {
                    let what = match &progress.value_member {
                        Some(member) => lsp_progress(p.get(&**member)),
                        None => mcp_progress(p),
                    };
                    Some(self.progress(p.get(&*progress.token_member), what))
                }
                None => None,
            },
            None => None,
        };
        Event { kind: EventKind::Notification, method: Some(method), note, ..event }
    }

    fn cancel(&mut self, from: Side, id: Option<&serde_json::Value>) -> Option<String> {
        let id = id?.to_string();
        Some(match self.pending.get_mut(&(from, id.clone())) {
            Some(pending) => {
                pending.cancelled = true;
                format!("cancels #{id} {}", pending.method)
            }
            None => format!("cancels #{id}, which is not waiting for an answer"),
        })
    }

    fn progress(&self, token: Option<&serde_json::Value>, what: String) -> String {
        let token = token.map(|t| t.to_string()).unwrap_or_else(|| "(no token)".into());
        match self.tokens.get(&token) {
            Some((_, id, method)) => format!("progress of #{id} {method}: {what}"),
            None => format!("progress {token}: {what}"),
        }
    }

    fn answer(&mut self, from: Side, id: Option<String>, error: Option<ErrorShape>, event: Event) -> Event {
        let error = error.map(|e| ErrorSummary { code: e.code, message: e.message });
        let kind = if error.is_some() { EventKind::Error } else { EventKind::Result };
        let request = id.as_ref().and_then(|id| self.pending.remove(&(from.peer(), id.clone())));
        let note = match (&request, &id) {
            (None, Some(_)) => Some("answers no request we saw".to_owned()),
            (None, None) => Some("answers no request (id null)".to_owned()),
            _ => None,
        };
        match request {
            Some(p) => Event {
                kind,
                id,
                method: Some(p.method),
                latency: Some((event.t - p.t).max(0.0)),
                request: Some(p.event),
                error,
                cancelled: p.cancelled,
                note,
                ..event
            },
            None => Event { kind, id, error, note, ..event },
        }
    }
}

/// What a notification's method is, in one of the protocols the core knows.
enum Spelling {
    Cancel(&'static CancelProtocol),
    Progress(&'static ProgressProtocol),
}

/// The protocols the core knows, once.
static PRESETS: LazyLock<[Profile; 4]> = LazyLock::new(Profile::presets);

fn spelling(method: &str) -> Option<Spelling> {
    let presets = &*PRESETS;
    if let Some(p) = presets.iter().find(|p| p.cancel.method == method) {
        return Some(Spelling::Cancel(&p.cancel));
    }
    presets.iter().find(|p| p.progress.method == method).map(|p| Spelling::Progress(&p.progress))
}

/// Progress tokens a request passes: LSP's `workDoneToken` and `partialResultToken`, MCP's
/// `_meta.progressToken`, StreamJsonRpc-style `progressToken`.
fn progress_tokens(params: &RawValue) -> Vec<String> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(params.get()) else {
        return Vec::new();
    };
    let meta = map.get(names::progress::MCP_META).and_then(|m| m.get(names::progress::MCP_TOKEN));
    [names::progress::LSP_WORK_DONE_TOKEN, names::progress::LSP_PARTIAL_RESULT_TOKEN, names::progress::MCP_TOKEN]
        .iter()
        .filter_map(|name| map.get(*name))
        .chain(meta)
        .map(|token| token.to_string())
        .collect()
}

fn lsp_progress(value: Option<&serde_json::Value>) -> String {
    let Some(value) = value else { return "(no value)".into() };
    let mut parts = Vec::new();
    if let Some(kind) = value.get("kind").and_then(|k| k.as_str()) {
        parts.push(kind.to_owned());
    }
    if let Some(title) = value.get("title").and_then(|t| t.as_str()) {
        parts.push(format!("{title:?}"));
    }
    if let Some(pct) = value.get("percentage").and_then(|p| p.as_f64()) {
        parts.push(format!("{pct}%"));
    }
    if let Some(message) = value.get("message").and_then(|m| m.as_str()) {
        parts.push(format!("{message:?}"));
    }
    if parts.is_empty() { "partial result".into() } else { parts.join(" ") }
}

fn mcp_progress(params: &serde_json::Value) -> String {
    let progress = params.get("progress").map(|p| p.to_string()).unwrap_or_else(|| "?".into());
    let mut text = match params.get("total") {
        Some(total) => format!("{progress}/{total}"),
        None => progress,
    };
    if let Some(message) = params.get("message").and_then(|m| m.as_str()) {
        text.push_str(&format!(" {message:?}"));
    }
    text
}

fn exit_text(record: &Record) -> String {
    match (record.code, record.signal) {
        (Some(code), _) => format!("the server exited with code {code}"),
        (None, Some(signal)) => format!("the server was killed by signal {signal}{}", crate::signals::name(signal)),
        (None, None) => record.text.clone().unwrap_or_else(|| "the server exited".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::WireFraming;

    fn msg(t: f64, from: Side, json: &str) -> Record {
        Record {
            kind: Kind::Message,
            t: Some(t),
            from: Some(from),
            size: Some(json.len() as u64),
            framing: Some(WireFraming::ContentLength),
            message: Some(RawValue::from_string(json.to_owned()).unwrap()),
            ..Record::default()
        }
    }

    #[test]
    fn answers_pair_with_requests_of_the_other_side_by_id() {
        let mut c = Conversation::new();
        let req = c.feed(&msg(1.0, Side::Client, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#));
        assert_eq!(req[0].kind, EventKind::Request);
        // The server's own request with the same id is another request, in the other id space.
        let server_req =
            c.feed(&msg(1.1, Side::Server, r#"{"jsonrpc":"2.0","id":1,"method":"workspace/configuration"}"#));
        assert_eq!(server_req[0].kind, EventKind::Request);
        let answer = c.feed(&msg(1.5, Side::Server, r#"{"jsonrpc":"2.0","id":1,"result":null}"#));
        assert_eq!(answer[0].kind, EventKind::Result);
        assert_eq!(answer[0].method.as_deref(), Some("initialize"));
        assert_eq!(answer[0].latency, Some(0.5));
        assert_eq!(answer[0].request, Some(0));
        let back =
            c.feed(&msg(1.6, Side::Client, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}"#));
        assert_eq!(back[0].kind, EventKind::Error);
        assert_eq!(back[0].method.as_deref(), Some("workspace/configuration"));
        assert_eq!(back[0].error, Some(ErrorSummary { code: -32601, message: "nope".into() }));
    }

    #[test]
    fn an_answer_names_its_requests_event_whatever_came_before() {
        let mut c = Conversation::new();
        assert!(c.feed(&Record::header(std::time::SystemTime::now(), None)).is_empty());
        c.feed(&Record::note(0.0, None, "something"));
        let request = c.feed(&msg(0.1, Side::Client, r#"{"jsonrpc":"2.0","id":9,"method":"m"}"#));
        let answer = c.feed(&msg(0.2, Side::Server, r#"{"jsonrpc":"2.0","id":9,"result":true}"#));
        assert_eq!((request[0].index, answer[0].index, answer[0].request), (1, 2, Some(1)));
        let batch = c.feed(&msg(
            0.3,
            Side::Client,
            r#"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
        ));
        assert_eq!(batch.iter().map(|e| e.index).collect::<Vec<_>>(), [3, 4]);
        let answer = c.feed(&msg(0.4, Side::Server, r#"{"jsonrpc":"2.0","id":1,"result":true}"#));
        assert_eq!(answer[0].request, Some(4));
    }

    #[test]
    fn string_and_number_ids_do_not_mix() {
        let mut c = Conversation::new();
        c.feed(&msg(0.0, Side::Client, r#"{"jsonrpc":"2.0","id":"1","method":"a"}"#));
        let answer = c.feed(&msg(0.1, Side::Server, r#"{"jsonrpc":"2.0","id":1,"result":2}"#));
        assert_eq!(answer[0].request, None);
        assert_eq!(c.pending.len(), 1);
    }

    #[test]
    fn cancellation_and_progress_name_their_request() {
        let mut c = Conversation::new();
        c.feed(&msg(
            0.0,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":7,"method":"textDocument/references","params":{"workDoneToken":"w1"}}"#,
        ));
        let progress = c.feed(&msg(
            0.1,
            Side::Server,
            r#"{"jsonrpc":"2.0","method":"$/progress","params":{"token":"w1","value":{"kind":"report","percentage":50}}}"#,
        ));
        assert_eq!(progress[0].note.as_deref(), Some("progress of #7 textDocument/references: report 50%"));
        let cancel =
            c.feed(&msg(0.2, Side::Client, r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}"#));
        assert_eq!(cancel[0].note.as_deref(), Some("cancels #7 textDocument/references"));
        let answer = c.feed(&msg(
            0.3,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"}}"#,
        ));
        assert!(answer[0].cancelled);
        let mcp = c.feed(&msg(
            0.4,
            Side::Server,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":3,"total":10}}"#,
        ));
        assert_eq!(mcp[0].note.as_deref(), Some(r#"progress "x": 3/10"#));
    }

    #[test]
    fn batches_become_one_event_per_element() {
        let mut c = Conversation::new();
        let events = c.feed(&msg(
            0.0,
            Side::Client,
            r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#,
        ));
        assert_eq!(events.iter().map(|e| e.kind).collect::<Vec<_>>(), [EventKind::Request, EventKind::Notification]);
        assert_eq!(events[1].note.as_deref(), Some("batch 2/2"));
        assert_eq!(events[1].index, 1);
    }

    #[test]
    fn junk_and_strange_json_are_unparsed_events() {
        let mut c = Conversation::new();
        let raw = Record {
            kind: Kind::Message,
            from: Some(Side::Server),
            raw: Some("hello".into()),
            error: Some("not JSON".into()),
            ..Record::default()
        };
        assert_eq!(c.feed(&raw)[0].kind, EventKind::Unparsed);
        assert_eq!(c.feed(&msg(0.0, Side::Server, r#"{"jsonrpc":"2.0"}"#))[0].kind, EventKind::Unparsed);
        assert_eq!(c.feed(&msg(0.0, Side::Server, "42"))[0].kind, EventKind::Unparsed);
    }
}
