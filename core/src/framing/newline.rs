//! Newline-delimited JSON framing (ACP, MCP over stdio).

use bytes::BytesMut;
use tokio_util::codec::Decoder;

use super::{Frame, FrameError, FrameLimits};

/// Decoder for newline-delimited JSON: lines end in `\n` (a preceding `\r` is dropped), blank
/// lines are skipped. A line longer than the limit is discarded up to its newline and reported as
/// [`Frame::Discarded`]; the stream goes on. Bytes already searched are never searched again.
#[derive(Debug)]
pub struct NewlineCodec {
    limits: FrameLimits,
    /// Bytes at the front of the buffer known to hold no newline.
    scanned: usize,
    /// Inside an over-long line that is being skipped.
    discarding: bool,
}

impl NewlineCodec {
    /// A decoder with these limits (only `max_message_size` applies).
    pub fn new(limits: FrameLimits) -> Self {
        NewlineCodec { limits, scanned: 0, discarding: false }
    }
}

pub(super) fn encode(body: &[u8], dst: &mut BytesMut) {
    dst.reserve(body.len() + 1);
    let start = dst.len();
    dst.extend_from_slice(body);
    flatten(&mut dst[start..]);
    dst.extend_from_slice(b"\n");
}

/// Keep one JSON message on one line. Raw JSON (a `RawValue` result, params or error data)
/// reaches the wire as it was written, possibly pretty-printed; since JSON strings cannot hold a
/// raw CR or LF, every such byte in valid JSON is insignificant whitespace and may become a space.
pub(super) fn flatten(body: &mut [u8]) {
    for b in body {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
}

/// Drop the line's `\n` and one `\r` before it (more would make the verdict on an over-long
/// line depend on how the bytes arrive; any other `\r` is JSON whitespace).
fn trim_line(mut line: BytesMut) -> BytesMut {
    if line.last() == Some(&b'\n') {
        line.truncate(line.len() - 1);
    }
    if line.last() == Some(&b'\r') {
        line.truncate(line.len() - 1);
    }
    line
}

impl Decoder for NewlineCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let max = self.limits.max_message_size;
        loop {
            let Some(pos) = src[self.scanned..].iter().position(|&b| b == b'\n').map(|p| p + self.scanned) else {
                if self.discarding || src.len() > max + 1 {
                    // Too long already: drop what we have and skip to the next newline.
                    src.clear();
                    self.scanned = 0;
                    self.discarding = true;
                } else {
                    self.scanned = src.len();
                }
                return Ok(None);
            };
            let line = src.split_to(pos + 1);
            self.scanned = 0;
            if std::mem::take(&mut self.discarding) {
                return Ok(Some(Frame::Discarded { limit: max }));
            }
            let line = trim_line(line);
            // Length first: an over-long line is discarded before its end is seen, blank or not.
            if line.len() > max {
                return Ok(Some(Frame::Discarded { limit: max }));
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(Frame::Message(line)));
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if let Some(frame) = self.decode(src)? {
            return Ok(Some(frame));
        }
        if std::mem::take(&mut self.discarding) {
            src.clear();
            return Ok(Some(Frame::Discarded { limit: self.limits.max_message_size }));
        }
        self.scanned = 0;
        // A last line without its newline is still a message.
        let rest = trim_line(src.split());
        if rest.len() > self.limits.max_message_size {
            return Ok(Some(Frame::Discarded { limit: self.limits.max_message_size }));
        }
        if rest.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        Ok(Some(Frame::Message(rest)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], chunk: usize) -> Vec<Frame> {
        let mut c = NewlineCodec::new(FrameLimits { max_message_size: 8, max_header_size: 0 });
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(f) = c.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        while let Some(f) = c.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        out
    }

    fn msg(s: &str) -> Frame {
        Frame::Message(BytesMut::from(s.as_bytes()))
    }

    #[test]
    fn lines_crlf_and_blank_lines() {
        for chunk in [1, 2, 3, 100] {
            let frames = decode_all(b"{}\n\r\n\n[1]\r\n  \n{\"a\":1}", chunk);
            assert_eq!(frames, vec![msg("{}"), msg("[1]"), msg("{\"a\":1}")], "chunk {chunk}");
        }
    }

    #[test]
    fn over_long_lines_are_discarded_and_the_stream_goes_on() {
        for chunk in [1, 4, 100] {
            let frames = decode_all(b"0123456789abcdef\n{}\n123456789\n[]\n", chunk);
            assert_eq!(
                frames,
                vec![Frame::Discarded { limit: 8 }, msg("{}"), Frame::Discarded { limit: 8 }, msg("[]")],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn encodes_with_lf() {
        let mut dst = BytesMut::new();
        encode(b"{}", &mut dst);
        assert_eq!(&dst[..], b"{}\n");
        let mut dst = BytesMut::new();
        encode(b"{\r\n  \"a\": \"b\\nc\"\n}", &mut dst);
        assert_eq!(&dst[..], b"{    \"a\": \"b\\nc\" }\n");
    }
}
