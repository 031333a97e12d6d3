//! Newline-delimited JSON framing (ACP, MCP over stdio).

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use super::{Found, Frame, FrameError, FrameLimits};

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

/// Whether `body` holds no raw CR or LF.
pub(super) fn is_one_line(body: &[u8]) -> bool {
    find_line_end(body).is_none()
}

/// [`encode`] for a body known to be on one line (see [`write_flat`]): no scan.
pub(super) fn encode_one_line(body: &[u8], dst: &mut BytesMut) {
    debug_assert!(is_one_line(body), "a raw CR or LF in a message encoded on one line");
    dst.reserve(body.len() + 1);
    dst.extend_from_slice(body);
    dst.extend_from_slice(b"\n");
}

/// Write `bytes` (JSON) with each raw CR and LF as a space, as [`flatten`] would leave them:
/// what the message encoder writes raw JSON with (a `RawValue`, JSON text given as it is), so
/// that every message it encodes is on one line without a scan of the whole message.
pub(crate) fn write_flat<W: std::io::Write + ?Sized>(w: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    let mut from = 0;
    while let Some(i) = find_line_end(&bytes[from..]) {
        w.write_all(&bytes[from..from + i])?;
        w.write_all(b" ")?;
        from += i + 1;
    }
    w.write_all(&bytes[from..])
}

/// Keep one JSON message on one line. Raw JSON (a `RawValue` result, params or error data)
/// reaches the wire as it was written, possibly pretty-printed; since JSON strings cannot hold a
/// raw CR or LF, every such byte in valid JSON is insignificant whitespace and may become a space.
pub(crate) fn flatten(body: &mut [u8]) {
    // Almost always there is none: a vectorized (or, for a tiny body, word-at-a-time) search
    // finds that in a fraction of a byte loop.
    let mut from = 0;
    while let Some(i) = find_line_end(&body[from..]) {
        body[from + i] = b' ';
        from += i + 1;
    }
}

/// Below this many bytes (one SSE2 vector) the word-at-a-time search is used; from there on the
/// vectorized one. Under callgrind, row A's ~60-byte messages cost 466 instructions per call in
/// `flatten` with the word-at-a-time search and 257 with the vectorized one (decoding 399 and
/// 355): the vectorized search's setup pays for itself from one vector on.
const SHORT: usize = 16;

/// Below this many bytes (x86_64) the SSE2 search (the architecture's baseline, no run-time
/// dispatch) is used; from there on the run-time dispatched one (AVX2 where there is). On a
/// 64-byte line the SSE2 search costs ~80 instructions for two bytes and ~70 for one against
/// ~100 and ~85 (their own callgrind counts); the AVX2 one wins from about 128 bytes on.
#[cfg(target_arch = "x86_64")]
const MID: usize = 128;

/// The first `\n` in `s`.
fn find_newline(s: &[u8]) -> Option<usize> {
    if s.len() < SHORT {
        return memchr::arch::all::memchr::One::new(b'\n').find(s);
    }
    #[cfg(target_arch = "x86_64")]
    if s.len() < MID
        && let Some(sse2) = memchr::arch::x86_64::sse2::memchr::One::new(b'\n')
    {
        return sse2.find(s);
    }
    memchr::memchr(b'\n', s)
}

/// The first `\n` or `\r` in `s`.
fn find_line_end(s: &[u8]) -> Option<usize> {
    if s.len() < SHORT {
        return memchr::arch::all::memchr::Two::new(b'\n', b'\r').find(s);
    }
    #[cfg(target_arch = "x86_64")]
    if s.len() < MID
        && let Some(sse2) = memchr::arch::x86_64::sse2::memchr::Two::new(b'\n', b'\r')
    {
        return sse2.find(s);
    }
    memchr::memchr2(b'\n', b'\r', s)
}

/// The length of `line` without its `\n` and one `\r` before it (more would make the verdict on
/// an over-long line depend on how the bytes arrive; any other `\r` is JSON whitespace).
fn trimmed_len(line: &[u8]) -> usize {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line).len()
}

impl NewlineCodec {
    /// The next line, found in place (see [`Found`]); blank lines and discarded ones are
    /// consumed here.
    pub(crate) fn decode_at(&mut self, src: &mut BytesMut) -> Result<Option<Found>, FrameError> {
        let max = self.limits.max_message_size;
        loop {
            let Some(pos) = find_newline(&src[self.scanned..]).map(|p| p + self.scanned) else {
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
            self.scanned = 0;
            let next = pos + 1;
            if std::mem::take(&mut self.discarding) {
                src.advance(next);
                return Ok(Some(Found::Discarded { limit: max }));
            }
            let end = trimmed_len(&src[..next]);
            // Length first: an over-long line is discarded before its end is seen, blank or not.
            if end > max {
                src.advance(next);
                return Ok(Some(Found::Discarded { limit: max }));
            }
            if src[..end].iter().all(u8::is_ascii_whitespace) {
                src.advance(next);
                continue;
            }
            return Ok(Some(Found::Message { start: 0, end, next }));
        }
    }

    /// An over-long line is being skipped.
    pub(crate) fn is_discarding(&self) -> bool {
        self.discarding
    }

    /// [`NewlineCodec::decode_at`] once the stream has ended: a last line without its newline is
    /// still a message.
    pub(crate) fn decode_eof_at(&mut self, src: &mut BytesMut) -> Result<Option<Found>, FrameError> {
        if let Some(found) = self.decode_at(src)? {
            return Ok(Some(found));
        }
        let max = self.limits.max_message_size;
        if std::mem::take(&mut self.discarding) {
            src.clear();
            return Ok(Some(Found::Discarded { limit: max }));
        }
        self.scanned = 0;
        let next = src.len();
        let end = trimmed_len(src);
        if end > max {
            src.clear();
            return Ok(Some(Found::Discarded { limit: max }));
        }
        if src[..end].iter().all(u8::is_ascii_whitespace) {
            src.clear();
            return Ok(None);
        }
        Ok(Some(Found::Message { start: 0, end, next }))
    }
}

impl Decoder for NewlineCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        super::split_found(self.decode_at(src), src)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        super::split_found(self.decode_eof_at(src), src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flatten_and_the_line_search_agree_with_a_byte_loop_short_and_long() {
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 63, 127, 128, 129, 255, 256, 257, 5000] {
            for step in [1, 3, 17, 251] {
                let mut body: Vec<u8> =
                    (0..len).map(|i| if i % step == step - 1 { b"\n\r"[i % 2] } else { b'a' }).collect();
                let first = body.iter().position(|&b| b == b'\n');
                assert_eq!(find_newline(&body), first, "{len}/{step}");
                let mut naive = body.clone();
                naive.iter_mut().filter(|b| **b == b'\n' || **b == b'\r').for_each(|b| *b = b' ');
                flatten(&mut body);
                assert_eq!(body, naive, "{len}/{step}");
            }
        }
    }

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
