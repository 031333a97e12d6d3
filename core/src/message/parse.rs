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
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
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

/// Parse a frame. `Err` is a parse error (invalid JSON or invalid UTF-8): the caller answers
/// `-32700` with `"id": null`.
pub(crate) fn parse_frame(frame: &[u8]) -> Result<ParsedMessage, ErrorObject> {
    // The whole frame is checked once up front: serde_json validates UTF-8 only in the strings it
    // keeps, so invalid bytes inside an ignored member (or a skipped batch element) would
    // otherwise slip through. Parsing from `&str` afterwards skips the per-string checks again.
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

/// Classify one element of a batch (already known to be valid JSON).
fn classify_value(raw: &str) -> Incoming {
    match serde_json::from_str::<Envelope<'_>>(raw) {
        Ok(env) => classify(env),
        Err(e) => Incoming::Invalid { id: None, error: ErrorObject::invalid_request(e), answer: true },
    }
}

fn classify(env: Envelope<'_>) -> Incoming {
    let id = match env.id.map(|raw| serde_json::from_str::<Id>(raw.get())) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(_)) => {
            return Incoming::Invalid {
                id: None,
                error: ErrorObject::invalid_request("\"id\" must be a string, a number or null"),
                answer: env.method.is_some() || (env.result.is_none() && env.error.is_none()),
            };
        }
    };

    if let Some(method_raw) = env.method {
        let invalid = |id: Option<Id>, why: &str| Incoming::Invalid {
            id,
            error: ErrorObject::invalid_request(why),
            answer: true,
        };
        if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            return invalid(id, "\"jsonrpc\" must be \"2.0\"");
        }
        let Ok(method) = serde_json::from_str::<String>(method_raw.get()) else {
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
