//! One-pass classification of an incoming frame.
//!
//! The frame is parsed once into borrowed raw slices; `result` and `error.data` are kept as raw
//! JSON (one copy each), and a call's `params` stay borrowed from the frame (copied only for a
//! message that must wait), until a typed handler decodes them straight into its own types.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny};
use serde_json::value::RawValue;

use super::{ErrorObject, Id, scan};
use crate::util::names::MethodName;

/// How much of a malformed error object the error that replaces it quotes.
const MALFORMED_QUOTE: usize = 256;

/// One message, classified. A call's params are borrowed from the frame (a typed handler started
/// on the spot decodes them there); [`Incoming::into_owned`] copies them for what must wait.
#[derive(Debug)]
pub(crate) enum Incoming<'a> {
    /// A call that wants an answer.
    Request { id: Id, method: MethodName<'a>, params: Option<Cow<'a, RawValue>>, trace: Option<Box<TraceMembers>> },
    /// A call that wants no answer.
    Notification { method: MethodName<'a>, params: Option<Cow<'a, RawValue>>, trace: Option<Box<TraceMembers>> },
    /// An answer to one of our calls.
    Response { id: Id, outcome: Result<Box<RawValue>, ErrorObject> },
    /// Valid JSON that is not a valid message. `answer` says whether the spec wants an error reply
    /// (it does for requests and unclassifiable objects; never for responses).
    Invalid { id: Option<Id>, error: ErrorObject, answer: bool },
}

/// A call's params as its own (copied if they are borrowed from the frame).
pub(crate) fn owned_params(params: Option<Cow<'_, RawValue>>) -> Option<Cow<'static, RawValue>> {
    params.map(|p| Cow::Owned(p.into_owned()))
}

impl Incoming<'_> {
    /// The message, owning its params.
    pub(crate) fn into_owned(self) -> Incoming<'static> {
        match self {
            Incoming::Request { id, method, params, trace } => {
                Incoming::Request { id, method: method.into_owned(), params: owned_params(params), trace }
            }
            Incoming::Notification { method, params, trace } => {
                Incoming::Notification { method: method.into_owned(), params: owned_params(params), trace }
            }
            Incoming::Response { id, outcome } => Incoming::Response { id, outcome },
            Incoming::Invalid { id, error, answer } => Incoming::Invalid { id, error, answer },
        }
    }
}

/// StreamJsonRpc's top-level W3C trace context members of a call (`traceparent`, `tracestate`),
/// kept only when asked for (a layer that reads them is installed) and only when `traceparent`
/// is a JSON string; each is bounded by the frame's own limit. Their text is the decoded string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceMembers {
    pub(crate) traceparent: String,
    pub(crate) tracestate: Option<String>,
}

impl TraceMembers {
    /// The bytes its text holds.
    pub(crate) fn len(&self) -> usize {
        self.traceparent.len() + self.tracestate.as_ref().map_or(0, String::len)
    }

    fn from_raw(traceparent: Option<&RawValue>, tracestate: Option<&RawValue>) -> Option<Box<Self>> {
        let text = |raw: &RawValue| serde_json::from_str::<String>(raw.get()).ok();
        let traceparent = text(traceparent?)?;
        Some(Box::new(TraceMembers { traceparent, tracestate: tracestate.and_then(text) }))
    }
}

/// A frame: one message or a batch.
#[derive(Debug)]
pub(crate) enum ParsedMessage<'a> {
    Single(Incoming<'a>),
    /// A top-level array; empty arrays are reported as `Single(Invalid)` instead.
    Batch(Vec<Incoming<'a>>),
}

/// The members of a message object, read in one pass; params, results, ids and unknown members
/// stay raw text. Only a JSON object is a message: an array or a scalar is refused (serde's
/// derived structs would also read a sequence, `["2.0",1,"echo",[5]]`, as the fields in order).
struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<Checked<String>>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    /// Borrowed slices, free to take: turned into [`TraceMembers`] only when asked for.
    traceparent: Option<&'a RawValue>,
    tracestate: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> serde::de::Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message object")
    }
    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Envelope<'de>, M::Error> {
        let mut env = Envelope {
            jsonrpc: None,
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
            traceparent: None,
            tracestate: None,
        };
        fn once<T, E: serde::de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
            if slot.replace(value).is_some() {
                return Err(E::duplicate_field(name));
            }
            Ok(())
        }
        while let Some(key) = map.next_key::<Member>()? {
            match key {
                Member::Jsonrpc => once(&mut env.jsonrpc, map.next_value()?, "jsonrpc")?,
                Member::Id => once(&mut env.id, map.next_value()?, "id")?,
                Member::Method => {
                    let method = map.next_value_seed(CheckedSeed(StringVisitor))?;
                    once(&mut env.method, method, "method")?
                }
                Member::Params => once(&mut env.params, map.next_value()?, "params")?,
                Member::Result => once(&mut env.result, map.next_value()?, "result")?,
                Member::Error => once(&mut env.error, map.next_value()?, "error")?,
                // The first of each wins; they are extensions, not the envelope.
                Member::Traceparent if env.traceparent.is_none() => env.traceparent = Some(map.next_value()?),
                Member::Tracestate if env.tracestate.is_none() => env.tracestate = Some(map.next_value()?),
                Member::Traceparent | Member::Tracestate | Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(env)
    }
}

/// A member name of a message object.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Traceparent,
    Tracestate,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Member, E> {
                Ok(match v {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "result" => Member::Result,
                    "error" => Member::Error,
                    "traceparent" => Member::Traceparent,
                    "tracestate" => Member::Tracestate,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// A member read straight into its type in the one pass, or `Bad` when it has the wrong JSON type
/// (the message is then invalid, not unparsable: the value is skipped, the parse goes on).
enum Checked<T> {
    Good(T),
    Bad,
}

/// Reads a value with [`CheckedVisitor`].
struct CheckedSeed<V>(V);

impl<'de, V: serde::de::Visitor<'de>> serde::de::DeserializeSeed<'de> for CheckedSeed<V> {
    type Value = Checked<V::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(CheckedVisitor(self.0))
    }
}

/// A string (as a method name).
struct StringVisitor;

impl<'de> serde::de::Visitor<'de> for StringVisitor {
    type Value = String;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        Ok(crate::util::names::take(v))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
}

/// Runs `V` on a value of any JSON type; what `V` refuses becomes `Bad` instead of an error that
/// would end the whole parse (arrays and objects are skipped to their end).
struct CheckedVisitor<V>(V);

impl<'de, V: serde::de::Visitor<'de>> serde::de::Visitor<'de> for CheckedVisitor<V> {
    type Value = Checked<V::Value>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_u64::<E>(v)))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_i64::<E>(v)))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_f64::<E>(v)))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_str::<E>(v)))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_string::<E>(v)))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_unit::<E>()))
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_none::<E>()))
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(checked(self.0.visit_bool::<E>(v)))
    }
    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Checked::Bad)
    }
    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Checked::Bad)
    }
}

fn checked<T, E>(value: Result<T, E>) -> Checked<T> {
    value.map_or(Checked::Bad, Checked::Good)
}

/// Parse a frame. `Err` is a parse error (invalid JSON or invalid UTF-8): the caller answers
/// `-32700` with `"id": null`. A batch of more than `max_batch_len` messages is refused whole
/// (one `-32600` with `"id": null`, as the spec answers a batch it cannot take) as soon as the
/// count is passed: nothing is kept of it, whatever its length.
#[cfg(any(test, fuzzing))]
pub(crate) fn parse_frame(frame: &[u8], max_batch_len: usize) -> Result<ParsedMessage<'_>, ErrorObject> {
    parse_frame_keeping(frame, max_batch_len, false)
}

/// [`parse_frame`], keeping a call's top-level [`TraceMembers`] when `keep_trace` (a frame that
/// has them is no plain message: the general parse reads them, as borrowed slices, for free).
pub(crate) fn parse_frame_keeping(
    frame: &[u8],
    max_batch_len: usize,
    keep_trace: bool,
) -> Result<ParsedMessage<'_>, ErrorObject> {
    // The common shapes first, straight from the bytes: every piece it keeps is checked to be
    // UTF-8 as it is taken, and it skips nothing unchecked.
    if let Some(message) = plain_message(frame) {
        return Ok(ParsedMessage::Single(message));
    }
    parse_general(frame, max_batch_len, keep_trace)
}

/// [`parse_frame_keeping`] for what the plain parse does not read (batches, escapes, other
/// members, error answers, anything malformed), out of line: inlined, serde_json's general
/// parse put twice the plain parse's code around it, on the path of every message.
#[inline(never)]
fn parse_general(frame: &[u8], max_batch_len: usize, keep_trace: bool) -> Result<ParsedMessage<'_>, ErrorObject> {
    // Otherwise the whole frame is checked once up front: serde_json validates UTF-8 only in the
    // strings it keeps, so invalid bytes inside an ignored member (or a skipped batch element)
    // would otherwise slip through. Parsing from `&str` afterwards skips the per-string checks.
    let frame = std::str::from_utf8(frame)
        .map_err(|e| ErrorObject::parse_error(format!("the message is not valid UTF-8 ({e})")))?;
    let invalid = |why: String| {
        Ok(ParsedMessage::Single(Incoming::Invalid {
            id: None,
            error: ErrorObject::invalid_request(why),
            answer: true,
        }))
    };
    match frame.bytes().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => {
            let too_long = std::cell::Cell::new(false);
            let mut de = serde_json::Deserializer::from_str(frame);
            let seed = BatchSeed { max: max_batch_len, too_long: &too_long };
            let items = match seed.deserialize(&mut de) {
                Ok(items) => items,
                Err(_) if too_long.get() => {
                    return invalid(format!("a batch may hold at most {max_batch_len} messages"));
                }
                Err(e) => return Err(ErrorObject::parse_error(e)),
            };
            de.end().map_err(ErrorObject::parse_error)?;
            if items.is_empty() {
                return invalid("empty batch".to_owned());
            }
            Ok(ParsedMessage::Batch(items.into_iter().map(|raw| classify_value(raw.get(), keep_trace)).collect()))
        }
        Some(b'{') => match serde_json::from_str::<Envelope<'_>>(frame) {
            Ok(env) => Ok(ParsedMessage::Single(classify(env, keep_trace))),
            Err(e) => {
                // Distinguish "not JSON" from "JSON, but not a message" (a member twice) only on
                // this cold path.
                if serde_json::from_str::<IgnoredAny>(frame).is_ok() {
                    invalid(e.to_string())
                } else {
                    Err(ErrorObject::parse_error(e))
                }
            }
        },
        // Valid JSON that is no object: say what it is, never quote it.
        _ => match serde_json::from_str::<IgnoredAny>(frame) {
            Ok(_) => invalid(not_an_object(frame)),
            Err(e) => Err(ErrorObject::parse_error(e)),
        },
    }
}

/// The value of the member `name` of a JSON object (the first, if it is there twice), found in
/// one pass that keeps nothing else: `None` for anything but an object that has it.
pub(crate) fn member<'a>(object: &'a RawValue, name: &str) -> Option<&'a RawValue> {
    struct Find<'n>(&'n str);
    impl<'de> serde::de::Visitor<'de> for Find<'_> {
        type Value = Option<&'de RawValue>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut found = None;
            while let Some(is_it) = map.next_key_seed(KeyIs(self.0))? {
                if found.is_none() && is_it {
                    found = Some(map.next_value()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(object.get());
    de.deserialize_map(Find(name)).ok().flatten()
}

/// Whether a member name is `.0` (compared where it lies; an escaped name is unescaped first).
struct KeyIs<'n>(&'n str);

impl<'de> serde::de::DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

/// Why a JSON value that is not an object is not a message.
fn not_an_object(value: &str) -> String {
    let kind = match value.trim_start().as_bytes().first() {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    };
    format!("a message must be a JSON object, not {kind}")
}

/// The elements of a batch array as raw text, refused (with `too_long` set) at the element past
/// `max`: an over-long batch costs no memory beyond its frame.
struct BatchSeed<'c> {
    max: usize,
    too_long: &'c std::cell::Cell<bool>,
}

impl<'de> serde::de::DeserializeSeed<'de> for BatchSeed<'_> {
    type Value = Vec<&'de RawValue>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for BatchSeed<'_> {
    type Value = Vec<&'de RawValue>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a batch array")
    }
    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            if items.len() == self.max {
                self.too_long.set(true);
                return Err(serde::de::Error::custom("the batch is too long"));
            }
            items.push(item);
        }
        Ok(items)
    }
}

/// The common shapes read without the general envelope parse: a request or notification
/// (`jsonrpc` "2.0", a method, maybe an id and params) or a successful response (`jsonrpc`, an
/// id, a result), with member names and strings that need no unescaping, no other members, no
/// member twice. Anything else is `None`, and the general parse decides (it gives the same
/// result for what this accepts). Values of `params` and `result` are still parsed (and
/// validated) by serde_json, straight from where they start.
///
/// The members in the order this crate, StreamJsonRpc and vscode-jsonrpc write them, with no
/// whitespace, are read in that order ([`in_order`]); any other order goes through the loop
/// ([`any_order`]).
#[inline(always)]
fn plain_message(frame: &[u8]) -> Option<Incoming<'_>> {
    match in_order(frame) {
        Some(verdict) => verdict,
        None => any_order(frame),
    }
}

/// [`plain_message`] for a compact frame with its members in the usual order:
/// `{"jsonrpc":"2.0",` then `"id":I,` (not in a notification), then `"method":M` and maybe
/// `,"params":P`, or `"result":R`, then `}`. Each member is expected where it is: straight-line
/// code, where the loop dispatched on every member's name (an indirect jump each, predicted
/// badly: a tenth of the parse's time under `perf record`, row A). `Some` is the plain path's
/// verdict: the message, or `None` for a frame the loop would refuse as well (the usual members,
/// the id among them, and then another, such as StreamJsonRpc's `traceparent`: see [`more`]),
/// which goes to the general parse without a second reading of its params. `None` for anything
/// else, and the loop reads it again from the start (the same verdict on what both accept).
#[inline(always)]
fn in_order(frame: &[u8]) -> Option<Option<Incoming<'_>>> {
    let rest = frame.strip_prefix(b"{\"jsonrpc\":\"2.0\",\"")?;
    let (id, rest) = match rest.strip_prefix(b"id\":") {
        Some(rest) => {
            let (id, rest) = plain_id(rest)?;
            (Some(id), rest.strip_prefix(b",\"")?)
        }
        None => (None, rest),
    };
    if let Some(rest) = rest.strip_prefix(b"result\":") {
        let (result, rest) = raw_value(rest)?;
        if !closed(rest)? {
            return more(&id);
        }
        return Some(Some(Incoming::Response { id: id?, outcome: Ok(result.to_owned()) }));
    }
    let (name, rest) = plain_string(rest.strip_prefix(b"method\":")?)?;
    let method = std::str::from_utf8(name).ok()?;
    let (params, rest) = match rest.strip_prefix(b",\"params\":") {
        Some(rest) => {
            let (params, rest) = raw_value(rest)?;
            (Some(params), rest)
        }
        // Without params only the object's end is read here: a comma may bring params that
        // the loop reads (`, "params":` and the like).
        None if rest.starts_with(b"}") => (None, rest),
        None => return None,
    };
    if !closed(rest)? {
        return more(&id);
    }
    Some(call(id, method, params))
}

/// What follows the usual members: `Some(true)` for the object's end (`}`, then nothing but
/// whitespace), `Some(false)` for a comma (another member follows: see [`more`]), `None` for
/// anything else (whitespace before the comma or brace: the loop reads it).
#[inline(always)]
fn closed(rest: &[u8]) -> Option<bool> {
    match rest.first()? {
        b'}' => skip_ws(&rest[1..]).is_empty().then_some(true),
        b',' => Some(false),
        _ => None,
    }
}

/// The verdict on the usual members followed by another: with the id read, whatever follows is
/// a member twice, `result` beside `method` (or `method` or `params` beside `result`), or one the
/// plain path does not read, and the loop would refuse the frame too (`Some(None)`); without
/// it, the id may follow, and the loop reads the frame (`None`).
#[inline(always)]
fn more<'a>(id: &Option<Id>) -> Option<Option<Incoming<'a>>> {
    id.is_some().then_some(None)
}

/// A request (with an id) or a notification, once its members are read: `params` must be an
/// array, an object or `null` (which counts as none), or the general parse decides.
#[inline(always)]
fn call<'a>(id: Option<Id>, method: &'a str, params: Option<&'a RawValue>) -> Option<Incoming<'a>> {
    let params = match params {
        None => None,
        Some(p) if p.get() == "null" => None,
        Some(p) if matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) => Some(Cow::Borrowed(p)),
        Some(_) => return None,
    };
    let method = MethodName::Borrowed(method);
    Some(match id {
        Some(id) => Incoming::Request { id, method, params, trace: None },
        None => Incoming::Notification { method, params, trace: None },
    })
}

/// [`plain_message`] for members in any order and with whitespace between tokens, out of line
/// (the usual frame is read by [`in_order`]).
#[inline(never)]
fn any_order(frame: &[u8]) -> Option<Incoming<'_>> {
    let mut rest = skip_ws(frame).strip_prefix(b"{")?;
    let (mut jsonrpc, mut id, mut method, mut params, mut result) = (false, None, None, None, None);
    loop {
        rest = skip_ws(rest);
        let (key, after) = plain_key(rest)?;
        rest = skip_ws(after).strip_prefix(b":")?;
        rest = skip_ws(rest);
        match key {
            PlainKey::Jsonrpc if !jsonrpc => {
                rest = rest.strip_prefix(b"\"2.0\"")?;
                jsonrpc = true;
            }
            PlainKey::Id if id.is_none() => {
                let (value, after) = plain_id(rest)?;
                id = Some(value);
                rest = after;
            }
            PlainKey::Method if method.is_none() => {
                let (name, after) = plain_string(rest)?;
                method = Some(std::str::from_utf8(name).ok()?);
                rest = after;
            }
            PlainKey::Params if params.is_none() => {
                let (value, after) = raw_value(rest)?;
                params = Some(value);
                rest = after;
            }
            PlainKey::Result if result.is_none() => {
                let (value, after) = raw_value(rest)?;
                result = Some(value);
                rest = after;
            }
            _ => return None,
        }
        rest = skip_ws(rest);
        if let Some(after) = rest.strip_prefix(b",") {
            rest = after;
            continue;
        }
        rest = rest.strip_prefix(b"}")?;
        break;
    }
    if !skip_ws(rest).is_empty() || !jsonrpc {
        return None;
    }
    match (method, result) {
        (Some(method), None) => call(id, method, params),
        (None, Some(result)) if params.is_none() => {
            Some(Incoming::Response { id: id?, outcome: Ok(result.to_owned()) })
        }
        _ => None,
    }
}

/// `s` from its first byte that is not JSON whitespace ([`scan::skip_ws`]). Most frames have
/// none between their tokens, so that case is one test inline, before any slicing, and the loop
/// is out of line: inlined, it carried its slice bounds through the whole parse (about 130
/// instructions a plain message in its 16-odd calls; slicing every time, about 230: callgrind,
/// row A).
#[inline(always)]
fn skip_ws(s: &[u8]) -> &[u8] {
    match s.first() {
        Some(b' ' | b'\t' | b'\n' | b'\r') => skip_ws_from(s),
        _ => s,
    }
}

#[inline(never)]
fn skip_ws_from(s: &[u8]) -> &[u8] {
    &s[scan::skip_ws(s, 0)..]
}

/// A member name a plain message may have.
#[derive(Clone, Copy)]
enum PlainKey {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
}

/// A member name of a plain message (spelled without escapes), and what follows it; `None` for
/// any other name (the general parse reads those). Matched where it lies, by its first letter:
/// no search for the closing quote first (which cost row A ~350 instructions a call).
///
/// With eight bytes at hand (every member of a frame but a last `"id"` right before its closing
/// brace), the name and its closing quote are compared as one little-endian word, masked to the
/// name's length: no `memcmp` call. Callgrind counted that call as cheap (about 18 instructions),
/// but in time the seven of them a round trip cost about 47 ns of row A's 1.2 µs (`perf record`,
/// one worker thread): an indirect call into libc and its length dispatch each time.
#[inline]
fn plain_key(s: &[u8]) -> Option<(PlainKey, &[u8])> {
    /// A name and its closing quote as the first `N` bytes of a little-endian word.
    const fn word<const N: usize>(name: &[u8; N]) -> (u64, usize) {
        let mut bytes = [0u8; 8];
        let mut i = 0;
        while i < N {
            bytes[i] = name[i];
            i += 1;
        }
        (u64::from_le_bytes(bytes), N)
    }
    const JSONRPC: (u64, usize) = word(b"jsonrpc\"");
    const ID: (u64, usize) = word(b"id\"");
    const METHOD: (u64, usize) = word(b"method\"");
    const PARAMS: (u64, usize) = word(b"params\"");
    const RESULT: (u64, usize) = word(b"result\"");
    let body = s.strip_prefix(b"\"")?;
    let (key, (name, len)) = match body.first()? {
        b'j' => (PlainKey::Jsonrpc, JSONRPC),
        b'i' => (PlainKey::Id, ID),
        b'm' => (PlainKey::Method, METHOD),
        b'p' => (PlainKey::Params, PARAMS),
        b'r' => (PlainKey::Result, RESULT),
        _ => return None,
    };
    let have = match body.first_chunk::<8>() {
        Some(bytes) => u64::from_le_bytes(*bytes) & (u64::MAX >> (64 - 8 * len)),
        // Fewer than eight bytes left: the name is compared from what there is.
        None if body.len() >= len => crate::util::hash::short_word(&body[..len]),
        None => return None,
    };
    (have == name).then(|| (key, &body[len..]))
}

/// A string that needs no unescaping (no backslash, no control character), and what follows
/// it. Its bytes are not checked for UTF-8 here: callers that keep them do that.
fn plain_string(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let body = s.strip_prefix(b"\"")?;
    let end = string_end(body);
    if body.get(end) != Some(&b'"') {
        return None;
    }
    Some((&body[..end], &body[end + 1..]))
}

/// The index of the first `"`, `\` or control byte (or the length). A function of its own: inlined
/// into the parse, its loop carried every slice bound along (18 instructions a byte, not 6).
#[inline(never)]
fn string_end(bytes: &[u8]) -> usize {
    bytes.iter().position(|&b| matches!(b, b'"' | b'\\' | 0..=0x1f)).unwrap_or(bytes.len())
}

/// An integer, a plain string or `null` as an id, and what follows it.
fn plain_id(s: &[u8]) -> Option<(Id, &[u8])> {
    if let Some(after) = s.strip_prefix(b"null") {
        return Some((Id::Null, after));
    }
    if s.starts_with(b"\"") {
        let (text, after) = plain_string(s)?;
        return Some((Id::String(std::str::from_utf8(text).ok()?.to_owned()), after));
    }
    if let Some(word) = s.first_chunk::<8>() {
        // The usual id: one to seven digits, then what follows, all in the first 8 bytes: counted
        // and read in the one word (a loop over the digits waited on each byte's test).
        let word = u64::from_le_bytes(*word);
        let n = leading_digits(word);
        if (1..8).contains(&n) {
            let after = &s[n..];
            // JSON forbids leading zeros; fractions and exponents go the general way.
            if (n > 1 && s[0] == b'0') || matches!(after[0], b'.' | b'e' | b'E') {
                return None;
            }
            // The digits at the top of the word (the last digit in the last byte), '0's below.
            let pad = 8 * (8 - n as u32);
            return Some((Id::from(word_value((word << pad) | (DIGIT_ZEROS >> (64 - pad)))), after));
        }
    }
    let digits_from = usize::from(s.starts_with(b"-"));
    let len = digits_from + s[digits_from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, after) = s.split_at(len);
    let digits = &number[digits_from..];
    // JSON forbids leading zeros; fractions and exponents go the general way.
    if digits.is_empty() || (digits.starts_with(b"0") && digits.len() > 1) {
        return None;
    }
    if matches!(after.first(), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    if digits_from == 0
        && let Some(n) = digits_value(digits)
    {
        return Some((Id::from(n), after));
    }
    // A negative or longer integer keeps its spelling (ASCII digits and a sign: valid UTF-8).
    Some((Id::Number(std::str::from_utf8(number).ok()?.parse().ok()?), after))
}

/// Eight ASCII zeros, a little-endian word.
const DIGIT_ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);

/// How many of `word`'s bytes, from its first (lowest), are ASCII digits (8 if all are).
/// A byte is a digit when its high half is 3 and stays 3 with 6 added (`0x30`–`0x39`). The
/// addition carries into the next byte only from a byte of `0xFA` or more, which is no digit
/// and ends the count before the byte it changed.
#[inline(always)]
fn leading_digits(word: u64) -> usize {
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    const SIXES: u64 = 0x0606_0606_0606_0606;
    let not_digits = ((word & HIGH) ^ THREES) | ((word.wrapping_add(SIXES) & HIGH) ^ THREES);
    (not_digits.trailing_zeros() / 8) as usize
}

/// The value of eight ASCII digits in a little-endian word (the first digit in the lowest
/// byte), combined in three steps, each joining neighbours (digits, then pairs, then fours).
#[inline(always)]
fn word_value(word: u64) -> u64 {
    let v = word.wrapping_sub(DIGIT_ZEROS);
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    (v.wrapping_mul(10_000) + (v >> 32)) & 0xffff_ffff
}

/// The value of a run of ASCII digits (at least one), or `None` past `u64::MAX`.
///
/// Up to 8 digits (every id a connection numbers below 100 million) are read as one word and
/// combined in three steps, each joining neighbours (digits, then pairs, then fours): the
/// digit-by-digit `n * 10 + d` is a chain of multiplies, one after the other, that the CPU
/// waits on (about a fifth of a frame's parse on row A, where ids reach 7 digits).
#[inline]
fn digits_value(digits: &[u8]) -> Option<u64> {
    let n = digits.len();
    if (1..=8).contains(&n) {
        // The digits at the top of the word (the last digit in the last byte), '0's below.
        let pad = 8 * (8 - n as u32);
        let word = (crate::util::hash::short_word(digits) << pad) | DIGIT_ZEROS.checked_shr(64 - pad).unwrap_or(0);
        return Some(word_value(word));
    }
    // 19 digits cannot overflow a u64; 20 may.
    if n < 20 {
        return Some(digits.iter().fold(0u64, |v, d| v * 10 + u64::from(d - b'0')));
    }
    digits.iter().try_fold(0u64, |v, d| v.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

/// One JSON value as raw text, and what follows it. A plain value (the common params and
/// results) is read by [`scan::plain_value_len`]; any other, serde_json parses from the bytes and
/// checks it is UTF-8 as it takes it (a raw value from a byte slice is validated whole).
fn raw_value(s: &[u8]) -> Option<(&RawValue, &[u8])> {
    if let Some(len) = scan::plain_value_len(s)
        && let Ok(text) = std::str::from_utf8(&s[..len])
        && let Some(value) = scan::known_raw_value(text)
    {
        return Some((value, &s[len..]));
    }
    let mut de = serde_json::Deserializer::from_slice(s);
    let value = <&RawValue>::deserialize(&mut de).ok()?;
    // The raw text is a slice of `s`: what follows starts right after it.
    let used = value.get().as_ptr() as usize - s.as_ptr() as usize + value.get().len();
    Some((value, s.get(used..)?))
}

/// Classify one element of a batch (already known to be valid JSON).
fn classify_value(raw: &str, keep_trace: bool) -> Incoming<'_> {
    let invalid = |why: String| Incoming::Invalid { id: None, error: ErrorObject::invalid_request(why), answer: true };
    if !raw.starts_with('{') {
        return invalid(not_an_object(raw));
    }
    match serde_json::from_str::<Envelope<'_>>(raw) {
        Ok(env) => classify(env, keep_trace),
        Err(e) => invalid(e.to_string()),
    }
}

fn classify(env: Envelope<'_>, keep_trace: bool) -> Incoming<'_> {
    let id = match env.id.map(Id::from_raw) {
        None => None,
        Some(Some(id)) => Some(id),
        Some(None) => {
            return Incoming::Invalid {
                id: None,
                error: ErrorObject::invalid_request("\"id\" must be a string, a number or null"),
                answer: env.method.is_some() || (env.result.is_none() && env.error.is_none()),
            };
        }
    };

    if let Some(method) = env.method {
        let invalid = |id: Option<Id>, why: &str| Incoming::Invalid {
            id,
            error: ErrorObject::invalid_request(why),
            answer: true,
        };
        if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            return invalid(id, "\"jsonrpc\" must be \"2.0\"");
        }
        let Checked::Good(method) = method else {
            return invalid(id, "\"method\" must be a string");
        };
        let method = MethodName::Owned(method);
        let params = match env.params {
            None => None,
            Some(p) if p.get() == "null" => None,
            Some(p) if matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) => Some(Cow::Borrowed(p)),
            Some(_) => return invalid(id, "\"params\" must be an object or an array"),
        };
        let trace = if keep_trace { TraceMembers::from_raw(env.traceparent, env.tracestate) } else { None };
        return match id {
            Some(id) => Incoming::Request { id, method, params, trace },
            None => Incoming::Notification { method, params, trace },
        };
    }

    if env.result.is_some() || env.error.is_some() {
        let Some(id) = id else {
            return Incoming::Invalid {
                id: None,
                error: ErrorObject::invalid_request("response without an \"id\""),
                answer: false,
            };
        };
        let outcome = match (env.result, env.error) {
            (Some(_), Some(_)) => {
                Err(ErrorObject::internal_error("the peer's response carried both \"result\" and \"error\""))
            }
            (Some(result), None) => Ok(result.to_owned()),
            (None, Some(error)) => Err(serde_json::from_str::<ErrorObject>(error.get()).unwrap_or_else(|e| {
                ErrorObject::internal_error(format!(
                    "the peer's error object is malformed ({e}): {}",
                    crate::quote::cut(error.get(), MALFORMED_QUOTE)
                ))
            })),
            (None, None) => unreachable!("checked above"),
        };
        return Incoming::Response { id, outcome };
    }

    Incoming::Invalid {
        id,
        error: ErrorObject::invalid_request("a message needs \"method\", \"result\" or \"error\""),
        answer: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_read_as_words_are_their_number() {
        let mut cases: Vec<u64> = vec![0, 1, 9, 10, 99, 100, 12_345_678, 99_999_999, 100_000_000, u64::MAX];
        cases.extend((0..20).map(|k| 10u64.pow(k)));
        cases.extend((1..20).map(|k| 10u64.pow(k) - 1));
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push(x >> (x % 64));
        }
        for n in cases {
            assert_eq!(digits_value(n.to_string().as_bytes()), Some(n), "{n}");
        }
        assert_eq!(digits_value(b"18446744073709551616"), None, "u64::MAX + 1");
        assert_eq!(digits_value(b"99999999999999999999"), None);
    }

    /// The count of leading digits in a word agrees with a byte-by-byte count, whatever byte
    /// (each of the 256) follows a run of each length, and whatever comes after that byte.
    #[test]
    fn leading_digits_in_a_word_are_counted_as_one_by_one() {
        for run in 0..=8 {
            for stop in 0..=255u8 {
                for tail in [0x00u8, b'0', b'9', 0xff] {
                    let mut bytes = [tail; 8];
                    for (i, b) in bytes.iter_mut().enumerate().take(run) {
                        *b = b'1' + (i as u8 % 9);
                    }
                    if run < 8 {
                        bytes[run] = stop;
                    }
                    let expected = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                    assert_eq!(leading_digits(u64::from_le_bytes(bytes)), expected, "{bytes:?}");
                }
            }
        }
    }

    /// An integer id read from its word is the one the byte-by-byte path reads, for every
    /// length and what may follow it; what JSON forbids is left to the general parse.
    #[test]
    fn ids_read_from_a_word_are_read_as_byte_by_byte() {
        for text in ["0", "7", "42", "1234567", "12345678", "123456789", "18446744073709551615", "-1", "-0"] {
            for after in [",\"method\":\"m\"}", "}", ",\"result\":1}           ", " ,", "]"] {
                let s = format!("{text}{after}");
                let (id, rest) = plain_id(s.as_bytes()).unwrap_or_else(|| panic!("{s}"));
                assert_eq!(id, Id::Number(text.parse().unwrap()), "{s}");
                assert_eq!(rest, after.as_bytes(), "{s}");
            }
        }
        for refused in ["01,\"method\"", "00}       ", "1.5,\"method\"", "1e3}      ", "12E3}     "] {
            assert!(plain_id(refused.as_bytes()).is_none(), "{refused}");
        }
    }

    fn parse(frame: &[u8]) -> Result<ParsedMessage<'_>, ErrorObject> {
        parse_frame(frame, 1000)
    }

    fn single(text: &str) -> Incoming<'_> {
        match parse(text.as_bytes()).unwrap() {
            ParsedMessage::Single(m) => m,
            other => panic!("expected a single message, got {other:?}"),
        }
    }

    #[test]
    fn top_level_trace_members_are_kept_when_asked_for() {
        let keep = |text: &str| match parse_frame_keeping(text.as_bytes(), 10, true).unwrap() {
            ParsedMessage::Single(Incoming::Request { trace, .. }) => trace,
            other => panic!("{other:?}"),
        };
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let got =
            keep(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","traceparent":"{tp}","tracestate":"a=1,b=2"}}"#));
        assert_eq!(got.as_deref().map(|t| t.traceparent.as_str()), Some(tp));
        assert_eq!(got.as_deref().and_then(|t| t.tracestate.as_deref()), Some("a=1,b=2"));
        // Before the envelope's members, escaped, without a tracestate.
        let got = keep(r#"{"traceparent":"00-\u0061b","id":"x","method":"n","jsonrpc":"2.0"}"#).unwrap();
        assert_eq!((got.traceparent.as_str(), got.tracestate), ("00-ab", None));
        // Not a string: nothing (the message itself is fine).
        assert_eq!(keep(r#"{"jsonrpc":"2.0","id":1,"method":"m","traceparent":7}"#), None);
        // Twice: the first.
        let got = keep(r#"{"jsonrpc":"2.0","id":1,"method":"m","traceparent":"a","traceparent":"b"}"#).unwrap();
        assert_eq!(got.traceparent, "a");
        // In a batch, each its own.
        match parse_frame_keeping(
            br#"[{"jsonrpc":"2.0","id":1,"method":"m","traceparent":"x"},{"jsonrpc":"2.0","id":2,"method":"m"}]"#,
            10,
            true,
        )
        .unwrap()
        {
            ParsedMessage::Batch(items) => {
                assert!(matches!(&items[0], Incoming::Request { trace: Some(t), .. } if t.traceparent == "x"));
                assert!(matches!(&items[1], Incoming::Request { trace: None, .. }));
            }
            other => panic!("{other:?}"),
        }
        // A notification's, the same way; not kept unless asked for.
        let note = format!(r#"{{"jsonrpc":"2.0","method":"n","tracestate":"k=v","traceparent":"{tp}"}}"#);
        match parse_frame_keeping(note.as_bytes(), 10, true).unwrap() {
            ParsedMessage::Single(Incoming::Notification { trace: Some(t), .. }) => {
                assert_eq!((t.traceparent.as_str(), t.tracestate.as_deref()), (tp, Some("k=v")));
                assert_eq!(t.len(), tp.len() + 3);
            }
            other => panic!("{other:?}"),
        }
        match parse_frame_keeping(note.as_bytes(), 10, false).unwrap() {
            ParsedMessage::Single(Incoming::Notification { trace: None, .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        match single(r#"{"jsonrpc":"2.0","id":0,"method":"add","params":[1,2],"traceparent":"x"}"#) {
            Incoming::Request { id, method, params, trace } => {
                assert_eq!(id, Id::from(0u64));
                assert_eq!(&*method, "add");
                assert_eq!(params.unwrap().get(), "[1,2]");
                assert_eq!(trace, None, "not kept unless asked for");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(single(r#"{"method":"x","jsonrpc":"2.0"}"#), Incoming::Notification { params: None, .. }));
        match single(r#"{"jsonrpc":"2.0","id":"a","result":null}"#) {
            Incoming::Response { id, outcome: Ok(r) } => {
                assert_eq!(id, Id::from("a"));
                assert_eq!(r.get(), "null");
            }
            other => panic!("{other:?}"),
        }
        match single(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m","data":[1]}}"#) {
            Incoming::Response { outcome: Err(e), .. } => {
                assert_eq!(e.code, -1);
                assert_eq!(e.data.unwrap().get(), "[1]");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn null_id_is_a_request() {
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#),
            Incoming::Request { id: Id::Null, .. }
        ));
    }

    #[test]
    fn invalid_shapes() {
        for text in [
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
            r#"5"#,
        ] {
            assert!(matches!(single(text), Incoming::Invalid { answer: true, .. }), "{text}");
        }
    }

    #[test]
    fn parse_errors() {
        for text in [
            &b"{"[..],
            b"{\"a\":}",
            b"",
            b"\xff\xfe",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"ignored\":\"\xff\"}",
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"ignored\":\"\xff\"}]",
        ] {
            assert!(parse(text).is_err(), "{text:?}");
        }
    }

    /// The plain path must read what it accepts exactly as the general parse does.
    #[test]
    fn the_plain_path_agrees_with_the_general_parse() {
        let ids = ["0", "7", "-3", "18446744073709551615", "-9223372036854775808", "\"a\"", "\"\"", "null", "-0"];
        let values = ["[]", "[1,2]", "{\"a\":[1,{\"b\":null}]}", "null", "\"s\"", "1.5e3", "true", "[\"\\u0041\"]"];
        let mut texts = Vec::new();
        for id in ids {
            for value in values {
                texts.push(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m/x","params":{value}}}"#));
                texts.push(format!(r#"{{ "params" : {value} , "method":"m", "jsonrpc" : "2.0" }}"#));
                texts.push(format!("{{\n\t\"id\": {id},\r\n \"jsonrpc\":\"2.0\", \"result\": {value}}}"));
                texts.push(format!(r#"{{"jsonrpc":"2.0","result":{value},"id":{id}}}"#));
            }
        }
        let accepted_before = texts.len();
        // Shapes it must leave to the general parse (or read the same way).
        texts.extend(
            [
                r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
                r#"{"jsonrpc":"2.0","id":01,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1e2,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":-,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":"A","method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"a
b"}"#,
                r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
                r#"{"id":1,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1,}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1],"traceparent":"00-a-b-01"}"#,
                r#"{"jsonrpc":"2.0","method":"m","params":[1],"x":1}"#,
                r#"{"jsonrpc":"2.0","method":"m","params":[1],"id":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":1,"traceparent":"x"}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m", "params":[1]}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m" ,"params":[1]}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1] ,"x":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
                r#"{"jsonrpc":"2.0","result":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":1,"params":[]}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":1,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
                // Member names that start like ours, or are ours spelled with an escape.
                r#"{"json\u0072pc":"2.0","id":1,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","i\u0064":1,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","ids":1,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","i":1,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1,"methods":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m","param":[]}"#,
                r#"{"jsonrpc":"2.0","id":1,"resul":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"result\"":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"":1}"#,
                r#"{"jsonrpc"#,
                r#"{"j"#,
                r#"{}"#,
            ]
            .map(str::to_owned),
        );
        let mut accepted = 0;
        let mut in_order_accepted = 0;
        for text in &texts {
            if let Some(plain) = plain_message(text.as_bytes()) {
                accepted += 1;
                assert_eq!(format!("{plain:?}"), general(text), "{text}");
            }
            // The straight-line read of the usual order takes nothing the loop would read
            // otherwise (or refuse).
            if let Some(fast) = in_order(text.as_bytes()) {
                in_order_accepted += 1;
                let looped = any_order(text.as_bytes()).map(|m| format!("{m:?}"));
                assert_eq!(fast.map(|m| format!("{m:?}")), looped, "{text}");
            }
        }
        assert!(in_order_accepted > 0);
        // Most of the first group is read the plain way (not: requests whose params are not an
        // array, an object or null, which are invalid, and the id `-0`).
        assert!(accepted > accepted_before * 2 / 3, "{accepted} of {accepted_before}");
        for common in [
            r#"{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"position":{"line":1}}}"#,
            r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"contents":"x"}}"#,
            "{\"jsonrpc\": \"2.0\", \"id\": \"a-1\", \"result\": null}\n",
        ] {
            assert!(plain_message(common.as_bytes()).is_some(), "{common}");
        }
        // What this crate, StreamJsonRpc and vscode-jsonrpc write is read in order, and the
        // loop reads it the same way.
        for usual in [
            r#"{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"position":{"line":1}}}"#,
            r#"{"jsonrpc":"2.0","id":"x-1","method":"shutdown"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#,
            r#"{"jsonrpc":"2.0","method":"exit"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"contents":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":-7,"result":null} "#,
        ] {
            let fast = in_order(usual.as_bytes()).flatten().unwrap_or_else(|| panic!("{usual}"));
            assert_eq!(format!("{fast:?}"), general(usual), "{usual}");
        }
        // In the usual order but not a message the plain way: left to the loop, which refuses
        // them too.
        for odd in [
            r#"{"jsonrpc":"2.0","result":1}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1],"params":[2]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","id":2}"#,
            r#"{"jsonrpc":"2.0","method":"m","jsonrpc":"2.0"}"#,
        ] {
            assert!(in_order(odd.as_bytes()).flatten().is_none(), "{odd}");
            assert!(plain_message(odd.as_bytes()).is_none(), "{odd}");
        }
        // The usual members and then another (a trace context, as StreamJsonRpc adds it): the
        // verdict comes from the straight read, the loop is not run; and params after a comma
        // with whitespace are left to the loop, which reads them.
        let traced = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1]},"traceparent":"00-a-b-01"}"#;
        assert!(matches!(in_order(traced.as_bytes()), Some(None)), "{traced}");
        assert!(any_order(traced.as_bytes()).is_none(), "{traced}");
        let spaced = r#"{"jsonrpc":"2.0","id":1,"method":"m", "params":[1]}"#;
        assert!(in_order(spaced.as_bytes()).is_none(), "{spaced}");
        let plain = plain_message(spaced.as_bytes()).unwrap_or_else(|| panic!("{spaced}"));
        assert_eq!(format!("{plain:?}"), general(spaced), "{spaced}");
    }

    /// What the general (envelope) parse makes of `text`.
    fn general(text: &str) -> String {
        match serde_json::from_str::<Envelope<'_>>(text) {
            Ok(env) => format!("{:?}", classify(env, false)),
            Err(e) => format!("error {e}"),
        }
    }

    #[test]
    fn invalid_utf8_anywhere_is_a_parse_error_and_valid_utf8_passes_the_plain_way() {
        // The plain path reads bytes: what it keeps it checks itself (method, string id), the
        // raw values serde_json checks as it takes them; nothing is skipped unchecked.
        let bad = [0xffu8];
        let with = |before: &str, after: &str| [before.as_bytes(), &bad, after.as_bytes()].concat();
        for frame in [
            with(r#"{"jsonrpc":"2.0","id":1,"method":"m"#, r#""}"#),
            with(r#"{"jsonrpc":"2.0","id":"a"#, r#"","method":"m"}"#),
            with(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":["#, r#""]}"#),
            with(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"k":""#, r#""}}"#),
            with(r#"{"jsonrpc":"2.0","id":1,"result":""#, r#""}"#),
            with(r#"{"jsonrpc":"2.0","id":1,"#, r#"":1,"method":"m"}"#),
            with(r#"{"jsonrpc":"2.0","id":1,"method":"m","x":""#, r#""}"#),
        ] {
            let parsed = parse(&frame);
            assert!(
                matches!(&parsed, Err(e) if e.code == crate::message::codes::PARSE_ERROR),
                "{:?}: {parsed:?}",
                String::from_utf8_lossy(&frame)
            );
        }
        let text = r#"{"jsonrpc":"2.0","id":"é","method":"mé","params":["ü"]}"#;
        let plain = plain_message(text.as_bytes()).expect("plain");
        assert_eq!(format!("{plain:?}"), general(text));
        assert!(matches!(plain, Incoming::Request { ref method, .. } if &**method == "mé"));
    }

    #[test]
    fn batches() {
        assert!(matches!(parse(b"[]").unwrap(), ParsedMessage::Single(Incoming::Invalid { .. })));
        match parse(br#"[1, {"jsonrpc":"2.0","method":"n"}]"#).unwrap() {
            ParsedMessage::Batch(items) => {
                assert!(matches!(items[0], Incoming::Invalid { .. }));
                assert!(matches!(items[1], Incoming::Notification { .. }));
            }
            other => panic!("{other:?}"),
        }
    }

    fn invalid_message<'a>(message: &'a Incoming<'_>) -> &'a str {
        match message {
            Incoming::Invalid { error, answer: true, id: None }
                if error.code == crate::message::codes::INVALID_REQUEST =>
            {
                &error.message
            }
            other => panic!("expected an invalid request, got {other:?}"),
        }
    }

    #[test]
    fn arrays_are_not_messages_in_a_batch_or_alone() {
        match parse(
            br#"[["2.0",1,"echo",[5]], ["2.0",null,"record",{"value":1}], "x", {"jsonrpc":"2.0","method":"n"}]"#,
        )
        .unwrap()
        {
            ParsedMessage::Batch(items) => {
                assert_eq!(items.len(), 4);
                for item in &items[..3] {
                    assert!(invalid_message(item).contains("must be a JSON object"), "{item:?}");
                }
                assert!(matches!(items[3], Incoming::Notification { .. }));
            }
            other => panic!("{other:?}"),
        }
        let big_string = format!("\"{}\"", "a".repeat(10_000));
        for text in ["5", "\"s\"", "true", "null", big_string.as_str()] {
            let message = single(text);
            let why = invalid_message(&message);
            assert!(why.contains("must be a JSON object") && why.len() < 100, "{why}");
        }
    }

    #[test]
    fn an_error_that_is_an_array_is_not_an_error_object() {
        match single(r#"{"jsonrpc":"2.0","id":1,"error":[-32050,"x"]}"#) {
            Incoming::Response { outcome: Err(e), .. } => {
                assert_eq!(e.code, crate::message::codes::INTERNAL_ERROR, "{e}");
                assert!(e.message.contains("malformed"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_batch_over_the_limit_is_one_invalid_request_whatever_follows() {
        let batch = |n: usize, tail: &str| format!("[{}{tail}]", vec!["1"; n].join(","));
        assert!(
            matches!(parse_frame(batch(3, "").as_bytes(), 3).unwrap(), ParsedMessage::Batch(items) if items.len() == 3)
        );
        for frame in [batch(4, ""), batch(4, ", not json at all"), batch(1_000_000, "")] {
            match parse_frame(frame.as_bytes(), 3).unwrap() {
                ParsedMessage::Single(message) => {
                    assert!(invalid_message(&message).contains("at most 3 messages"), "{message:?}")
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(parse_frame(b"[1,2] x", 3).is_err(), "trailing text after a batch");
        assert!(parse_frame(b"[1,2", 3).is_err());
    }

    #[test]
    fn ids_keep_their_spelling_on_both_paths() {
        for id in ["18446744073709551617", "18446744073709551616", "1.50", "1e2", "-0", "-9223372036854775809"] {
            for text in [
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m","x":1}}"#),
            ] {
                match single(&text) {
                    Incoming::Request { id: got, .. } => assert_eq!(got.to_string(), id, "{text}"),
                    other => panic!("{other:?}"),
                }
            }
        }
        let id = |text: &str| match single(&format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"m"}}"#)) {
            Incoming::Request { id, .. } => id,
            other => panic!("{other:?}"),
        };
        assert_ne!(id("18446744073709551616"), id("18446744073709551617"));
        assert_eq!(id("18446744073709551615").as_u64(), Some(u64::MAX));
    }

    #[test]
    fn plain_keys_match_whole_names_only() {
        for (text, name) in [
            ("\"jsonrpc\":", "jsonrpc"),
            ("\"id\":1}", "id"),
            ("\"id\":1234567}", "id"),
            ("\"method\":\"m\"}", "method"),
            ("\"params\":[]}", "params"),
            ("\"result\":1}", "result"),
            ("\"result\":", "result"),
            ("\"method\"", "method"),
            ("\"id\"", "id"),
        ] {
            let (_, rest) = plain_key(text.as_bytes()).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(rest, &text.as_bytes()[name.len() + 2..], "{text}");
        }
        for text in [
            "\"ids\":1}",
            "\"idx\":1234567}",
            "\"paramsX\":[]}",
            "\"param\":[]}",
            "\"jsonrp\":1}",
            "\"jsonrpcc\":1}",
            "\"i",
            "\"id",
            "\"metho\"",
            "\"methox\":1}",
            "\"resulT\":1}",
            "\"jsonrpc:\"2.0\"",
        ] {
            assert!(plain_key(text.as_bytes()).is_none(), "{text}");
        }
    }

    #[test]
    fn a_member_is_found_without_keeping_the_others() {
        let raw = RawValue::from_string(r#"{"a":[1,{"id":2}],"id":3,"id":4,"\u0069d2":5}"#.to_owned()).unwrap();
        assert_eq!(member(&raw, "id").map(RawValue::get), Some("3"));
        assert_eq!(member(&raw, "id2").map(RawValue::get), Some("5"));
        assert!(member(&raw, "b").is_none());
        let array = RawValue::from_string("[1]".to_owned()).unwrap();
        assert!(member(&array, "id").is_none());
    }
}
