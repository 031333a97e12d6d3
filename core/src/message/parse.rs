//! One-pass classification of an incoming frame.
//!
//! The frame is parsed once into borrowed raw slices; `params`, `result` and `error.data` are kept
//! as raw JSON (one copy each) until a typed handler decodes them straight into its own types.

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny};
use serde_json::value::RawValue;

use super::{ErrorObject, Id};

/// One message, classified.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A call that wants an answer.
    Request { id: Id, method: String, params: Option<Box<RawValue>> },
    /// A call that wants no answer.
    Notification { method: String, params: Option<Box<RawValue>> },
    /// An answer to one of our calls.
    Response { id: Id, outcome: Result<Box<RawValue>, ErrorObject> },
    /// Valid JSON that is not a valid message. `answer` says whether the spec wants an error reply
    /// (it does for requests and unclassifiable objects; never for responses).
    Invalid { id: Option<Id>, error: ErrorObject, answer: bool },
}

/// A frame: one message or a batch.
#[derive(Debug)]
pub(crate) enum ParsedMessage {
    Single(Incoming),
    /// A top-level array; empty arrays are reported as `Single(Invalid)` instead.
    Batch(Vec<Incoming>),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present_id")]
    id: Option<Checked<Id>>,
    #[serde(default, deserialize_with = "present_method")]
    method: Option<Checked<String>>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Deserialize a member that is present (even as `null`) into `Some`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A member read straight into its type in the one pass, or `Bad` when it has the wrong JSON type
/// (the message is then invalid, not unparsable: the value is skipped, the parse goes on).
enum Checked<T> {
    Good(T),
    Bad,
}

fn present_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Checked<Id>>, D::Error> {
    d.deserialize_any(CheckedVisitor(super::id::IdVisitor)).map(Some)
}

fn present_method<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Checked<String>>, D::Error> {
    d.deserialize_any(CheckedVisitor(StringVisitor)).map(Some)
}

/// A string (as a method name).
struct StringVisitor;

impl<'de> serde::de::Visitor<'de> for StringVisitor {
    type Value = String;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        Ok(super::names::take(v))
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
/// `-32700` with `"id": null`.
pub(crate) fn parse_frame(frame: &[u8]) -> Result<ParsedMessage, ErrorObject> {
    // The common shapes first, straight from the bytes: every piece it keeps is checked to be
    // UTF-8 as it is taken, and it skips nothing unchecked.
    if let Some(message) = plain_message(frame) {
        return Ok(ParsedMessage::Single(message));
    }
    // Otherwise the whole frame is checked once up front: serde_json validates UTF-8 only in the
    // strings it keeps, so invalid bytes inside an ignored member (or a skipped batch element)
    // would otherwise slip through. Parsing from `&str` afterwards skips the per-string checks.
    let frame = std::str::from_utf8(frame)
        .map_err(|e| ErrorObject::parse_error(format!("the message is not valid UTF-8 ({e})")))?;
    let first = frame.bytes().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        let items: Vec<&RawValue> = serde_json::from_str(frame).map_err(ErrorObject::parse_error)?;
        if items.is_empty() {
            return Ok(ParsedMessage::Single(Incoming::Invalid {
                id: None,
                error: ErrorObject::invalid_request("empty batch"),
                answer: true,
            }));
        }
        return Ok(ParsedMessage::Batch(items.into_iter().map(|raw| classify_value(raw.get())).collect()));
    }
    match serde_json::from_str::<Envelope<'_>>(frame) {
        Ok(env) => Ok(ParsedMessage::Single(classify(env))),
        Err(e) => {
            // Distinguish "not JSON" from "JSON, but not a message object" only on this cold path.
            if serde_json::from_str::<IgnoredAny>(frame).is_ok() {
                Ok(ParsedMessage::Single(Incoming::Invalid {
                    id: None,
                    error: ErrorObject::invalid_request(e),
                    answer: true,
                }))
            } else {
                Err(ErrorObject::parse_error(e))
            }
        }
    }
}

/// The common shapes read without the general envelope parse: a request or notification
/// (`jsonrpc` "2.0", a method, maybe an id and params) or a successful response (`jsonrpc`, an
/// id, a result), with member names and strings that need no unescaping, no other members, no
/// member twice. Anything else is `None`, and the general parse decides (it gives the same
/// result for what this accepts). Values of `params` and `result` are still parsed (and
/// validated) by serde_json, straight from where they start.
fn plain_message(frame: &[u8]) -> Option<Incoming> {
    let mut rest = skip_ws(frame).strip_prefix(b"{")?;
    let (mut jsonrpc, mut id, mut method, mut params, mut result) = (false, None, None, None, None);
    loop {
        rest = skip_ws(rest);
        let (key, after) = plain_string(rest)?;
        rest = skip_ws(after).strip_prefix(b":")?;
        rest = skip_ws(rest);
        // Member names are compared as bytes: anything not ASCII here is not a plain message.
        match key {
            b"jsonrpc" if !jsonrpc => {
                rest = rest.strip_prefix(b"\"2.0\"")?;
                jsonrpc = true;
            }
            b"id" if id.is_none() => {
                let (value, after) = plain_id(rest)?;
                id = Some(value);
                rest = after;
            }
            b"method" if method.is_none() => {
                let (name, after) = plain_string(rest)?;
                method = Some(std::str::from_utf8(name).ok()?);
                rest = after;
            }
            b"params" if params.is_none() => {
                let (value, after) = raw_value(rest)?;
                params = Some(value);
                rest = after;
            }
            b"result" if result.is_none() => {
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
        (Some(method), None) => {
            let params = match params {
                None => None,
                Some(p) if p.get() == "null" => None,
                Some(p) if matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) => Some(p.to_owned()),
                Some(_) => return None,
            };
            let method = super::names::take(method);
            Some(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        (None, Some(result)) if params.is_none() => {
            Some(Incoming::Response { id: id?, outcome: Ok(result.to_owned()) })
        }
        _ => None,
    }
}

fn skip_ws(s: &[u8]) -> &[u8] {
    let mut n = 0;
    while n < s.len() && matches!(s[n], b' ' | b'\t' | b'\n' | b'\r') {
        n += 1;
    }
    &s[n..]
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
    let digits_from = usize::from(s.starts_with(b"-"));
    let len = digits_from + s[digits_from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, after) = s.split_at(len);
    let digits = &number[digits_from..];
    // JSON forbids leading zeros; `-0` (a float to serde_json), fractions and exponents go the
    // general way.
    if digits.is_empty() || (digits.starts_with(b"0") && (digits.len() > 1 || digits_from == 1)) {
        return None;
    }
    if matches!(after.first(), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    // ASCII digits (and a sign): valid UTF-8.
    let number = std::str::from_utf8(number).ok()?;
    let id = match number.parse::<u64>() {
        Ok(n) => Id::Number(n.into()),
        Err(_) => Id::Number(number.parse::<i64>().ok()?.into()),
    };
    Some((id, after))
}

/// One JSON value as raw text, and what follows it. serde_json parses it from the bytes and
/// checks it is UTF-8 as it takes it (a raw value from a byte slice is validated whole).
fn raw_value(s: &[u8]) -> Option<(&RawValue, &[u8])> {
    let mut de = serde_json::Deserializer::from_slice(s);
    let value = <&RawValue>::deserialize(&mut de).ok()?;
    // The raw text is a slice of `s`: what follows starts right after it.
    let used = value.get().as_ptr() as usize - s.as_ptr() as usize + value.get().len();
    Some((value, s.get(used..)?))
}

/// Classify one element of a batch (already known to be valid JSON).
fn classify_value(raw: &str) -> Incoming {
    match serde_json::from_str::<Envelope<'_>>(raw) {
        Ok(env) => classify(env),
        Err(e) => Incoming::Invalid { id: None, error: ErrorObject::invalid_request(e), answer: true },
    }
}

fn classify(env: Envelope<'_>) -> Incoming {
    let id = match env.id {
        None => None,
        Some(Checked::Good(id)) => Some(id),
        Some(Checked::Bad) => {
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
        let params = match env.params {
            None => None,
            Some(p) if p.get() == "null" => None,
            Some(p) if matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) => Some(p.to_owned()),
            Some(_) => return invalid(id, "\"params\" must be an object or an array"),
        };
        return match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
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
                ErrorObject::internal_error(format!("the peer's error object is malformed ({e}): {}", error.get()))
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

    fn single(text: &str) -> Incoming {
        match parse_frame(text.as_bytes()).unwrap() {
            ParsedMessage::Single(m) => m,
            other => panic!("expected a single message, got {other:?}"),
        }
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        match single(r#"{"jsonrpc":"2.0","id":0,"method":"add","params":[1,2],"traceparent":"x"}"#) {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, Id::from(0u64));
                assert_eq!(method, "add");
                assert_eq!(params.unwrap().get(), "[1,2]");
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
            assert!(parse_frame(text).is_err(), "{text:?}");
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
                r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
                r#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
                r#"{"jsonrpc":"2.0","result":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":1,"params":[]}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":1,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
                r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
                r#"{}"#,
            ]
            .map(str::to_owned),
        );
        let mut accepted = 0;
        for text in &texts {
            if let Some(plain) = plain_message(text.as_bytes()) {
                accepted += 1;
                assert_eq!(format!("{plain:?}"), general(text), "{text}");
            }
        }
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
    }

    /// What the general (envelope) parse makes of `text`.
    fn general(text: &str) -> String {
        match serde_json::from_str::<Envelope<'_>>(text) {
            Ok(env) => format!("{:?}", classify(env)),
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
            let parsed = parse_frame(&frame);
            assert!(
                matches!(&parsed, Err(e) if e.code == crate::message::codes::PARSE_ERROR),
                "{:?}: {parsed:?}",
                String::from_utf8_lossy(&frame)
            );
        }
        let text = r#"{"jsonrpc":"2.0","id":"é","method":"mé","params":["ü"]}"#;
        let plain = plain_message(text.as_bytes()).expect("plain");
        assert_eq!(format!("{plain:?}"), general(text));
        assert!(matches!(plain, Incoming::Request { ref method, .. } if method == "mé"));
    }

    #[test]
    fn batches() {
        assert!(matches!(parse_frame(b"[]").unwrap(), ParsedMessage::Single(Incoming::Invalid { .. })));
        match parse_frame(br#"[1, {"jsonrpc":"2.0","method":"n"}]"#).unwrap() {
            ParsedMessage::Batch(items) => {
                assert!(matches!(items[0], Incoming::Invalid { .. }));
                assert!(matches!(items[1], Incoming::Notification { .. }));
            }
            other => panic!("{other:?}"),
        }
    }
}
