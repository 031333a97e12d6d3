//! Records from what crossed the wire, and the trace file they are appended to.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::value::RawValue;

use super::split::Piece;
use super::{Kind, Record, Side, WireFraming};

/// The record of one piece of a direction's bytes, read at `t`.
pub(crate) fn piece_record(t: f64, from: Side, piece: Piece) -> Record {
    let base = Record { kind: Kind::Message, t: Some(t), from: Some(from), ..Record::default() };
    match piece {
        Piece::Message { framing, body } => message_record(base, framing, &body),
        Piece::Unframed { bytes, why } => Record {
            size: Some(bytes.len() as u64),
            framing: Some(WireFraming::Unframed),
            raw: Some(String::from_utf8_lossy(&bytes).into_owned()),
            error: Some(why),
            ..base
        },
        Piece::Skipped { framing, size, limit } => Record {
            size,
            framing: Some(framing),
            raw: Some(String::new()),
            error: Some(format!("larger than the recording limit of {limit} bytes: passed on, not recorded")),
            ..base
        },
    }
}

/// The record of one message body: its JSON when it is JSON, else its text and why not.
pub(crate) fn message_record(base: Record, framing: WireFraming, body: &[u8]) -> Record {
    let size = Some(body.len() as u64);
    match one_line_json(body) {
        Ok(message) => Record { size, framing: Some(framing), message: Some(message), ..base },
        Err(why) => Record {
            size,
            framing: Some(framing),
            raw: Some(String::from_utf8_lossy(body).into_owned()),
            error: Some(format!("not JSON: {why}")),
            ..base
        },
    }
}

/// The body as JSON on one line: the text as sent, except that CR and LF (whitespace between
/// tokens, never inside a JSON string) become spaces.
fn one_line_json(body: &[u8]) -> Result<Box<RawValue>, NotJson> {
    let text = std::str::from_utf8(body)?;
    let json: &RawValue = serde_json::from_str(text)?;
    if !json.get().contains(['\r', '\n']) {
        return Ok(json.to_owned());
    }
    Ok(RawValue::from_string(json.get().replace(['\r', '\n'], " "))?)
}

/// Why a message body is not JSON (the `error` of its record).
#[derive(Debug, thiserror::Error)]
enum NotJson {
    #[error(transparent)]
    Utf8(#[from] std::str::Utf8Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// A trace file being written: one record per line, flushed when asked (so that a reader
/// following it sees whole lines).
pub(crate) struct TraceWriter {
    out: BufWriter<File>,
}

impl TraceWriter {
    /// Create (or truncate) the file at `path`.
    pub(crate) fn create(path: &Path) -> io::Result<TraceWriter> {
        let file = File::create(path)?;
        Ok(TraceWriter { out: BufWriter::with_capacity(64 * 1024, file) })
    }

    /// Append one record.
    pub(crate) fn write(&mut self, record: &Record) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, record)?;
        self.out.write_all(b"\n")
    }

    /// Write what is buffered to the file.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    fn line(record: &Record) -> String {
        serde_json::to_string(record).unwrap()
    }

    #[test]
    fn a_message_is_recorded_as_sent_on_one_line() {
        let body = BytesMut::from(&b"{\"jsonrpc\":\"2.0\",\r\n  \"id\":1, \"method\":\"a\\nb\"}"[..]);
        let record = piece_record(0.5, Side::Client, Piece::Message { framing: WireFraming::ContentLength, body });
        assert_eq!(
            line(&record),
            r#"{"type":"message","t":0.5,"from":"client","size":45,"framing":"content-length","message":{"jsonrpc":"2.0",    "id":1, "method":"a\nb"}}"#
        );
    }

    #[test]
    fn text_that_is_not_json_is_kept_with_the_reason() {
        let body = BytesMut::from(&b"hello \xff"[..]);
        let record = piece_record(1.0, Side::Server, Piece::Message { framing: WireFraming::Newline, body });
        assert_eq!(record.raw.as_deref(), Some("hello \u{fffd}"));
        assert!(record.error.as_deref().is_some_and(|e| e.starts_with("not JSON")), "{record:?}");
        assert!(record.message.is_none());
        let junk = piece_record(
            1.0,
            Side::Server,
            Piece::Unframed { bytes: BytesMut::from(&b"log line\n"[..]), why: "no header".into() },
        );
        assert_eq!(
            line(&junk),
            r#"{"type":"message","t":1.0,"from":"server","size":9,"framing":"unframed","raw":"log line\n","error":"no header"}"#
        );
    }
}
