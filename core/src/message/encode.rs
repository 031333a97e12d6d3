//! Encoding outgoing messages straight into a byte buffer (one serialization, no intermediate
//! `Value`). Members are written in StreamJsonRpc's order: `jsonrpc`, `id`, `method`, `params`.

use super::bind::{Binder, Target};
use super::{ErrorObject, Id};
use serde::Serialize;

const PARAMS_NULL: &[u8] = b",\"params\":null";

/// Room left after a write that grows the buffer: what follows a large value (a closing quote,
/// brackets, the message's `}`) fits without growing it again.
const SLACK: usize = 1024;

/// A message buffer as serde_json's writer. `Vec`'s own grows a buffer to just what a large
/// write needs when that is more than double; the next byte (a string's closing quote) then
/// doubles it, moving the whole value (under callgrind, row D's 1 MiB echo copied 1 MiB twice
/// more per call that way: 2.4 of its 47.9 million instructions). Here a write that must grow it
/// leaves [`SLACK`] bytes of room.
struct Growing<'a>(&'a mut Vec<u8>);

impl std::io::Write for Growing<'_> {
    #[inline(always)]
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    #[inline(always)]
    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        if self.0.capacity() - self.0.len() < data.len() {
            grow(self.0, data.len());
        }
        self.0.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Room for `more` bytes and [`SLACK`] after them (out of line: most writes fit).
#[cold]
#[inline(never)]
fn grow(buf: &mut Vec<u8>, more: usize) {
    buf.reserve(more + SLACK);
}

fn write_params<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    params: &P,
    binder: &dyn Binder,
    target: Target,
) -> Result<(), serde_json::Error> {
    let mark = buf.len();
    buf.extend_from_slice(b",\"params\":");
    let value_at = buf.len();
    super::bind::to_writer(Growing(&mut *buf), params, binder, target)?;
    // `()` and `None` mean "no params": the member is left out rather than sent as `null`.
    if &buf[mark..] == PARAMS_NULL {
        buf.truncate(mark);
        return Ok(());
    }
    // JSON-RPC 2.0 allows only structured params; a peer would refuse anything else.
    if !matches!(buf.get(value_at), Some(b'{' | b'[')) {
        let found = String::from_utf8_lossy(&buf[value_at..(value_at + 32).min(buf.len())]).into_owned();
        buf.truncate(mark);
        return Err(<serde_json::Error as serde::ser::Error>::custom(format!(
            "params must serialize to an object or an array (wrap a single value in a tuple or array), not {found}"
        )));
    }
    Ok(())
}

/// `{"jsonrpc":"2.0","id":N,"method":M,"params":P}`; `params` is left out when `P` serializes to
/// `null`. Values in the params that bind themselves to their message are told to `binder`.
pub(crate) fn encode_request<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: u64,
    method: &str,
    params: &P,
    binder: &dyn Binder,
) -> Result<(), serde_json::Error> {
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut *buf, &id)?;
    buf.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut *buf, method)?;
    write_params(buf, params, binder, Target::Request(id))?;
    buf.push(b'}');
    Ok(())
}

/// `{"jsonrpc":"2.0","method":M,"params":P}`.
pub(crate) fn encode_notification<P: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    method: &str,
    params: &P,
    binder: &dyn Binder,
) -> Result<(), serde_json::Error> {
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    serde_json::to_writer(&mut *buf, method)?;
    write_params(buf, params, binder, Target::Notification)?;
    buf.push(b'}');
    Ok(())
}

/// A response. A success always carries `result` (`null` for unit), as vscode-jsonrpc requires.
/// If the result fails to serialize, an internal error is written instead. Values in the result
/// that bind themselves to their message are told to `binder`.
pub(crate) fn encode_response<R: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &Id,
    outcome: Result<&R, &ErrorObject>,
    binder: &dyn Binder,
) {
    let start = buf.len();
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    // Ids are numbers, strings or null: serializing them cannot fail.
    let _ = serde_json::to_writer(&mut *buf, id);
    let mark = buf.len();
    match outcome {
        Ok(result) => {
            buf.extend_from_slice(b",\"result\":");
            if let Err(e) = super::bind::to_writer(Growing(&mut *buf), result, binder, Target::Response) {
                buf.truncate(mark);
                write_error(buf, &ErrorObject::internal_error(format!("the result could not be serialized: {e}")));
            }
        }
        Err(error) => write_error(buf, error),
    }
    buf.push(b'}');
    debug_assert!(buf.len() > start);
}

/// A success response whose result is JSON text already (written on one line, as raw JSON is).
pub(crate) fn encode_response_json(buf: &mut Vec<u8>, id: &Id, result: &[u8]) {
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    // Ids are numbers, strings or null: serializing them cannot fail.
    let _ = serde_json::to_writer(&mut *buf, id);
    buf.extend_from_slice(b",\"result\":");
    // Writing to a `Vec` cannot fail.
    let _ = crate::framing::write_flat(buf, result);
    buf.push(b'}');
}

fn write_error(buf: &mut Vec<u8>, error: &ErrorObject) {
    buf.extend_from_slice(b",\"error\":");
    // Error objects hold a string, an integer and raw JSON: serializing them cannot fail. The
    // message encoder's serializer writes their raw data on one line; they bind nothing.
    let _ = super::bind::to_writer(Growing(buf), error, super::bind::UNBOUND, Target::Response);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::bind::UNBOUND;

    fn text(buf: Vec<u8>) -> String {
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn raw_json_is_written_on_one_line_and_means_the_same() {
        // Pretty-printed raw JSON in params, a result, error data and a result given as text:
        // every raw CR and LF becomes a space; escaped ones in strings stay as they are.
        let pretty = "{\n  \"a\": [\r\n    1,\n    \"x\\ny\"\n  ]\r\n}\n";
        let raw = serde_json::value::RawValue::from_string(pretty.to_owned()).unwrap();
        let mut bufs: [Vec<u8>; 4] = Default::default();
        encode_request(&mut bufs[0], 1, "m", &raw, UNBOUND).unwrap();
        encode_response(&mut bufs[1], &Id::from(2u64), Ok(&raw), UNBOUND);
        let error = ErrorObject::new(3, "e").with_raw_data(raw.clone());
        encode_response::<()>(&mut bufs[2], &Id::from(3u64), Err(&error), UNBOUND);
        encode_response_json(&mut bufs[3], &Id::from(4u64), pretty.as_bytes());
        let value = serde_json::json!({"a": [1, "x\ny"]});
        for (buf, at) in bufs.iter().zip(["/params", "/result", "/error/data", "/result"]) {
            assert!(!buf.iter().any(|b| matches!(b, b'\n' | b'\r')), "{}", String::from_utf8_lossy(buf));
            let parsed: serde_json::Value = serde_json::from_slice(buf).unwrap();
            assert_eq!(parsed.pointer(at), Some(&value), "{parsed}");
        }
        // The spaces stand where the line breaks were: nothing else moved.
        assert!(
            text(bufs[3].clone()).ends_with(r#""result":{   "a": [      1,     "x\ny"   ]  } }"#),
            "{}",
            text(bufs[3].clone())
        );
    }

    #[test]
    fn request_shapes() {
        let mut buf = Vec::new();
        encode_request(&mut buf, 0, "add", &[1, 2], UNBOUND).unwrap();
        assert_eq!(text(buf), r#"{"jsonrpc":"2.0","id":0,"method":"add","params":[1,2]}"#);
        let mut buf = Vec::new();
        encode_request(&mut buf, 7, "shutdown", &(), UNBOUND).unwrap();
        assert_eq!(text(buf), r#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#);
        let mut buf = Vec::new();
        encode_notification(&mut buf, "a\"b", &serde_json::json!({"x": null}), UNBOUND).unwrap();
        assert_eq!(text(buf), r#"{"jsonrpc":"2.0","method":"a\"b","params":{"x":null}}"#);
    }

    #[test]
    fn scalar_params_are_refused() {
        for params in [serde_json::json!(5), serde_json::json!("s"), serde_json::json!(true)] {
            let mut buf = Vec::new();
            let err = encode_request(&mut buf, 1, "m", &params, UNBOUND).unwrap_err();
            assert!(err.to_string().contains("object or an array"), "{err}");
        }
        let mut buf = Vec::new();
        encode_notification(&mut buf, "m", &Some([1]), UNBOUND).unwrap();
        assert_eq!(text(buf), r#"{"jsonrpc":"2.0","method":"m","params":[1]}"#);
    }

    #[test]
    fn response_shapes() {
        let mut buf = Vec::new();
        encode_response(&mut buf, &Id::from("x"), Ok(&()), UNBOUND);
        assert_eq!(text(buf), r#"{"jsonrpc":"2.0","id":"x","result":null}"#);
        let mut buf = Vec::new();
        encode_response::<()>(&mut buf, &Id::Null, Err(&ErrorObject::new(-32700, "Parse error")), UNBOUND);
        assert_eq!(text(buf), r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
    }

    #[test]
    fn a_large_value_grows_the_buffer_once() {
        // Without the slack, the closing quote after the string doubles the buffer (a move of
        // the whole value).
        let text = "x".repeat(200_000);
        let mut buf = Vec::with_capacity(256);
        encode_response(&mut buf, &Id::from(1u64), Ok(&text), UNBOUND);
        assert!(buf.capacity() < buf.len() + 2 * SLACK, "grown to {} for {}", buf.capacity(), buf.len());
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["result"].as_str().map(str::len), Some(200_000));
        let mut buf = Vec::with_capacity(256);
        encode_request(&mut buf, 3, "echo", &(&text,), UNBOUND).unwrap();
        assert!(buf.capacity() < buf.len() + 2 * SLACK, "grown to {} for {}", buf.capacity(), buf.len());
        assert!(buf.ends_with(b"\"]}"));
    }

    #[test]
    fn unserializable_result_becomes_internal_error() {
        let mut map = std::collections::HashMap::new();
        map.insert(vec![1u8], 1);
        let mut buf = Vec::new();
        encode_response(&mut buf, &Id::from(1u64), Ok(&map), UNBOUND);
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["error"]["code"], -32603);
        assert!(v.get("result").is_none());
    }
}
