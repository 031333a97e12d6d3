//! Server-sent events (the WHATWG `text/event-stream` format): an encoder for the events the
//! server sends and an incremental parser for the client, bounded in bytes.
//!
//! No crate is used: the format is a few lines (fields `id`, `event`, `data`, `retry`, comments
//! starting with `:`, events ended by a blank line, lines ended by CR, LF or CRLF), and the
//! parser must bound the event it is building, which the small SSE crates do not.

use bytes::{BufMut, Bytes, BytesMut};

/// One event, as parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `id` field, if the event had one.
    pub id: Option<String>,
    /// The `event` field (the type); `None` means `message`.
    pub event: Option<String>,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The `retry` field in milliseconds, if the event carried one.
    pub retry: Option<u64>,
}

/// Encode one event: `id`, optional `retry`, and `data` (split on line ends, one `data:` line
/// each, so a body with newlines survives). An empty `data` still writes `data:` (a priming
/// event: an id and nothing else).
pub fn encode_event(id: Option<&str>, retry_ms: Option<u64>, data: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(data.len() + 48);
    if let Some(id) = id {
        out.put_slice(b"id: ");
        out.put_slice(id.as_bytes());
        out.put_u8(b'\n');
    }
    if let Some(retry) = retry_ms {
        out.put_slice(format!("retry: {retry}\n").as_bytes());
    }
    if data.is_empty() {
        out.put_slice(b"data:\n");
    }
    let mut rest = data;
    while !rest.is_empty() {
        let end = rest.iter().position(|b| *b == b'\n' || *b == b'\r').unwrap_or(rest.len());
        out.put_slice(b"data: ");
        out.put_slice(&rest[..end]);
        out.put_u8(b'\n');
        rest = &rest[end..];
        // One line end (CRLF counts as one).
        if rest.starts_with(b"\r\n") {
            rest = &rest[2..];
        } else if !rest.is_empty() {
            rest = &rest[1..];
        }
    }
    out.put_u8(b'\n');
    out.freeze()
}

/// What the parser refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// An event (or one line of it) grew past the limit.
    #[error("an SSE event is larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The stream is not UTF-8.
    #[error("an SSE line is not UTF-8")]
    NotUtf8,
}

/// An incremental `text/event-stream` parser: feed it bytes as they arrive, take whole events.
#[derive(Debug)]
pub struct SseParser {
    buf: BytesMut,
    limit: usize,
    /// Bytes of the event being built (its fields so far).
    event_bytes: usize,
    current: SseEvent,
    has_data: bool,
    /// The last byte fed was a CR: an LF right after it ends nothing more.
    after_cr: bool,
}

impl SseParser {
    /// A parser that refuses events (or lines) larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        SseParser {
            buf: BytesMut::new(),
            limit,
            event_bytes: 0,
            current: SseEvent::default(),
            has_data: false,
            after_cr: false,
        }
    }

    /// Feed bytes; the whole events they complete are pushed to `out` (a `retry`-only or
    /// `id`-only event is an event too: it carries what a client must remember).
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        while !bytes.is_empty() {
            if self.after_cr && bytes[0] == b'\n' {
                bytes = &bytes[1..];
                self.after_cr = false;
                continue;
            }
            self.after_cr = false;
            match bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
                None => {
                    if self.buf.len() + bytes.len() > self.limit {
                        return Err(SseError::TooLarge { limit: self.limit });
                    }
                    self.buf.extend_from_slice(bytes);
                    return Ok(());
                }
                Some(end) => {
                    if self.buf.len() + end > self.limit {
                        return Err(SseError::TooLarge { limit: self.limit });
                    }
                    self.buf.extend_from_slice(&bytes[..end]);
                    self.after_cr = bytes[end] == b'\r';
                    bytes = &bytes[end + 1..];
                    let line = self.buf.split();
                    self.line(&line, out)?;
                }
            }
        }
        Ok(())
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.current);
            let had_data = std::mem::replace(&mut self.has_data, false);
            self.event_bytes = 0;
            if had_data || event.id.is_some() || event.retry.is_some() {
                out.push(event);
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        self.event_bytes += line.len();
        if self.event_bytes > self.limit {
            return Err(SseError::TooLarge { limit: self.limit });
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.current.id = Some(value.to_owned()),
            "event" => self.current.event = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.current.retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]], limit: usize) -> Result<Vec<SseEvent>, SseError> {
        let mut parser = SseParser::new(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn encodes_and_parses_back() {
        let bytes = encode_event(Some("3-7"), Some(500), br#"{"a":1}"#);
        assert_eq!(&bytes[..], b"id: 3-7\nretry: 500\ndata: {\"a\":1}\n\n");
        let events = parse_all(&[&bytes], 1024).unwrap();
        assert_eq!(
            events,
            vec![SseEvent { id: Some("3-7".into()), event: None, data: r#"{"a":1}"#.into(), retry: Some(500) }]
        );
    }

    #[test]
    fn a_priming_event_is_an_id_and_empty_data() {
        let bytes = encode_event(Some("0-0"), None, b"");
        assert_eq!(&bytes[..], b"id: 0-0\ndata:\n\n");
        let events = parse_all(&[&bytes], 1024).unwrap();
        assert_eq!(events[0].data, "");
        assert_eq!(events[0].id.as_deref(), Some("0-0"));
    }

    #[test]
    fn multi_line_data_round_trips() {
        let bytes = encode_event(None, None, b"one\ntwo\r\nthree\rfour");
        let events = parse_all(&[&bytes], 1024).unwrap();
        assert_eq!(events[0].data, "one\ntwo\nthree\nfour");
    }

    #[test]
    fn any_split_of_the_bytes_gives_the_same_events() {
        let stream =
            b": comment\r\nevent: message\r\nid: 1\r\ndata: a\r\ndata: b\r\n\r\nretry: 20\n\nid: 2\rdata: c\r\r";
        let whole = parse_all(&[stream], 1024).unwrap();
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].data, "a\nb");
        assert_eq!(whole[0].event.as_deref(), Some("message"));
        assert_eq!(whole[1].retry, Some(20));
        assert_eq!(whole[2].id.as_deref(), Some("2"));
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(parse_all(&[a, b], 1024).unwrap(), whole, "split at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse_all(&bytes, 1024).unwrap(), whole);
    }

    #[test]
    fn an_event_over_the_limit_is_refused_before_it_is_buffered() {
        let long = vec![b'x'; 100];
        assert_eq!(parse_all(&[b"data: ", &long], 64), Err(SseError::TooLarge { limit: 64 }));
        // Many short lines of one event add up.
        let lines = b"data: 0123456789\n".repeat(10);
        assert_eq!(parse_all(&[&lines], 64), Err(SseError::TooLarge { limit: 64 }));
        // The same lines split into events are fine.
        let events = b"data: 0123456789\n\n".repeat(10);
        assert_eq!(parse_all(&[&events], 64).unwrap().len(), 10);
    }

    #[test]
    fn comments_and_blank_events_yield_nothing() {
        assert_eq!(parse_all(&[b": keep-alive\n\n\n\n"], 64).unwrap(), vec![]);
    }

    #[test]
    fn a_bad_retry_is_ignored() {
        let events = parse_all(&[b"retry: soon\ndata: x\n\n"], 64).unwrap();
        assert_eq!(events[0].retry, None);
    }
}
