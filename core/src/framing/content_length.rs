//! `Content-Length: N\r\n\r\n<body>` framing (LSP base protocol).

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use super::{Found, Frame, FrameError, FrameLimits};

/// Decoder for `Content-Length` framing.
///
/// Header names are matched case-insensitively; `Content-Type` is accepted when its charset is
/// UTF-8 (`utf-8` or the old `utf8`); other headers are ignored; header lines must end in CRLF. A
/// length above the limit is refused before any buffer of that size is allocated.
#[derive(Debug)]
pub struct ContentLengthCodec {
    limits: FrameLimits,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Looking for the blank line; `scanned` bytes are known not to start it.
    Header { scanned: usize },
    /// The header is read (its `start` bytes are left at the front of the buffer, consumed
    /// with the body: an advance of its own costs ~35 instructions a message); `len` bytes of
    /// body follow it.
    Body { start: usize, len: usize },
}

impl ContentLengthCodec {
    /// A decoder with these limits.
    pub fn new(limits: FrameLimits) -> Self {
        ContentLengthCodec { limits, state: State::Header { scanned: 0 } }
    }
}

pub(super) fn encode_header(body_len: usize, dst: &mut BytesMut) {
    dst.extend_from_slice(b"Content-Length: ");
    let mut digits = [0u8; 20];
    let mut n = body_len;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    dst.extend_from_slice(&digits[i..]);
    dst.extend_from_slice(b"\r\n\r\n");
}

pub(super) fn encode(body: &[u8], dst: &mut BytesMut) {
    dst.reserve(body.len() + 32);
    encode_header(body.len(), dst);
    dst.extend_from_slice(body);
}

/// The length and header size of a header block that is exactly `Content-Length: N\r\n\r\n`
/// (`None` for anything else, which the general parser then reads).
fn plain_header(src: &[u8]) -> Option<(u64, usize)> {
    const NAME: &[u8] = b"Content-Length: ";
    let rest = src.strip_prefix(NAME)?;
    let digits = rest.iter().take(20).take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits == 20 || !rest[digits..].starts_with(b"\r\n\r\n") {
        return None;
    }
    let len = rest[..digits].iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Some((len, NAME.len() + digits + 4))
}

fn parse_header_block(block: &[u8], limits: &FrameLimits) -> Result<usize, FrameError> {
    let bad = |why: String| Err(FrameError::BadHeader(why));
    let mut length: Option<usize> = None;
    for line in block.split(|&b| b == b'\n') {
        // Every line but the last was followed by '\n' and must end in '\r' (CRLF); the block
        // passed in excludes the final "\r\n\r\n", so its last line has no terminator.
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.contains(&b'\r') {
            return bad("stray carriage return in a header line".into());
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return bad(format!("header line without a colon: {:?}", String::from_utf8_lossy(line)));
        };
        let name = line[..colon].trim_ascii();
        let value = line[colon + 1..].trim_ascii();
        if name.eq_ignore_ascii_case(b"content-length") {
            if value.is_empty() || value.len() > 20 || !value.iter().all(u8::is_ascii_digit) {
                return bad(format!("Content-Length is not a number: {:?}", String::from_utf8_lossy(value)));
            }
            let n: u64 = std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| FrameError::BadHeader("Content-Length out of range".into()))?;
            if n > limits.max_message_size as u64 {
                return Err(FrameError::TooLarge { size: n, limit: limits.max_message_size });
            }
            if length.is_some_and(|prev| prev as u64 != n) {
                return bad("conflicting Content-Length headers".into());
            }
            length = Some(n as usize);
        } else if name.eq_ignore_ascii_case(b"content-type") {
            check_charset(value)?;
        }
    }
    // CRLF discipline: every '\n' inside the block must be preceded by '\r'.
    if block.windows(2).filter(|w| w[1] == b'\n').any(|w| w[0] != b'\r') || block.first() == Some(&b'\n') {
        return bad("header lines must end in CRLF".into());
    }
    length.ok_or_else(|| FrameError::BadHeader("no Content-Length header".into()))
}

fn check_charset(value: &[u8]) -> Result<(), FrameError> {
    for param in value.split(|&b| b == b';').skip(1) {
        let param = param.trim_ascii();
        if let Some(eq) = param.iter().position(|&b| b == b'=')
            && param[..eq].trim_ascii().eq_ignore_ascii_case(b"charset")
        {
            let cs = param[eq + 1..].trim_ascii();
            let cs = cs.strip_prefix(b"\"").and_then(|c| c.strip_suffix(b"\"")).unwrap_or(cs);
            if !(cs.eq_ignore_ascii_case(b"utf-8") || cs.eq_ignore_ascii_case(b"utf8")) {
                return Err(FrameError::BadHeader(format!(
                    "unsupported charset {:?} (only UTF-8 is supported)",
                    String::from_utf8_lossy(cs)
                )));
            }
        }
    }
    Ok(())
}

impl ContentLengthCodec {
    /// The next frame, found in place at the front of `src`, its header before its body (see
    /// [`Found`]).
    pub(crate) fn decode_at(&mut self, src: &mut BytesMut) -> Result<Option<Found>, FrameError> {
        loop {
            match self.state {
                State::Header { scanned } => {
                    // What every peer we know writes: exactly `Content-Length: N\r\n\r\n`.
                    if scanned == 0
                        && let Some((len, header)) = plain_header(src)
                    {
                        if len > self.limits.max_message_size as u64 {
                            return Err(FrameError::TooLarge { size: len, limit: self.limits.max_message_size });
                        }
                        let len = len as usize;
                        src.reserve((header + len).saturating_sub(src.len()));
                        self.state = State::Body { start: header, len };
                        continue;
                    }
                    // Resume where the last search stopped (minus a partial "\r\n\r\n").
                    let from = scanned.saturating_sub(3);
                    let found = src[from..].windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + from);
                    let Some(end) = found else {
                        // The blank line may still start in the last 3 bytes (a partial
                        // "\r\n\r"): only past those is the block over its limit whatever comes
                        // next, so the verdict does not depend on how the bytes arrive.
                        if src.len() > self.limits.max_header_size.saturating_add(3) {
                            return Err(FrameError::HeaderTooLong { limit: self.limits.max_header_size });
                        }
                        self.state = State::Header { scanned: src.len() };
                        return Ok(None);
                    };
                    if end > self.limits.max_header_size {
                        return Err(FrameError::HeaderTooLong { limit: self.limits.max_header_size });
                    }
                    let len = parse_header_block(&src[..end], &self.limits)?;
                    let start = end + 4;
                    src.reserve((start + len).saturating_sub(src.len()));
                    self.state = State::Body { start, len };
                }
                State::Body { start, len } => {
                    let end = start + len;
                    if src.len() < end {
                        return Ok(None);
                    }
                    self.state = State::Header { scanned: 0 };
                    return Ok(Some(Found::Message { start, end, next: end }));
                }
            }
        }
    }

    /// Its header is read, its body not complete.
    pub(crate) fn in_body(&self) -> bool {
        matches!(self.state, State::Body { .. })
    }

    /// How many bytes the body being read still lacks when `buffered` bytes of its frame (its
    /// header first) are at hand (0 outside a body).
    pub(crate) fn body_rest(&self, buffered: usize) -> usize {
        match self.state {
            State::Body { start, len } => (start + len).saturating_sub(buffered),
            State::Header { .. } => 0,
        }
    }

    /// A [`Decoder`] leaves in `src` only what it has not read: the header of a body still
    /// incomplete is consumed (the reader's in-place path keeps it, and consumes it with the
    /// body).
    fn consume_header(&mut self, src: &mut BytesMut) {
        if let State::Body { start, .. } = &mut self.state
            && *start > 0
        {
            src.advance(std::mem::take(start));
        }
    }

    /// [`ContentLengthCodec::decode_at`] once the stream has ended: what is left must be nothing.
    pub(crate) fn decode_eof_at(&mut self, src: &mut BytesMut) -> Result<Option<Found>, FrameError> {
        if let Some(found) = self.decode_at(src)? {
            return Ok(Some(found));
        }
        match self.state {
            State::Header { .. } if src.is_empty() => Ok(None),
            State::Header { .. } => Err(FrameError::Truncated(format!(
                "{} bytes of an unfinished header block: {:?}",
                src.len(),
                String::from_utf8_lossy(&src[..src.len().min(64)])
            ))),
            State::Body { start, len } => Err(FrameError::Truncated(format!(
                "expected a body of {len} bytes, got {}",
                src.len().saturating_sub(start)
            ))),
        }
    }
}

impl Decoder for ContentLengthCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let found = self.decode_at(src);
        self.consume_header(src);
        super::split_found(found, src)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let found = self.decode_eof_at(src);
        self.consume_header(src);
        super::split_found(found, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(max: usize) -> ContentLengthCodec {
        ContentLengthCodec::new(FrameLimits { max_message_size: max, max_header_size: 256 })
    }

    fn decode_all(input: &[u8]) -> Result<Vec<Frame>, FrameError> {
        let mut c = codec(1024);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        // Feed one byte at a time: no frame may depend on how the bytes arrive.
        for &b in input {
            buf.extend_from_slice(&[b]);
            while let Some(f) = c.decode(&mut buf)? {
                out.push(f);
            }
        }
        while let Some(f) = c.decode_eof(&mut buf)? {
            out.push(f);
        }
        Ok(out)
    }

    #[test]
    fn in_place_a_header_stays_until_its_body_is_consumed_and_a_decoder_consumes_it_at_once() {
        // In place (the reader): the body is found behind its header, nothing consumed.
        let mut c = codec(1024);
        let mut src = BytesMut::from(&b"Content-Length: 7\r\n\r\n{\"a\""[..]);
        assert_eq!(c.decode_at(&mut src).unwrap(), None);
        assert_eq!(src.len(), 25);
        assert_eq!(c.body_rest(src.len()), 3);
        src.extend_from_slice(b":1}Content-Length: 2\r\n\r\n{}");
        let Some(Found::Message { start, end, next }) = c.decode_at(&mut src).unwrap() else { panic!("no frame") };
        assert_eq!((&src[start..end], next), (&b"{\"a\":1}"[..], 28));
        src.advance(next);
        let Some(Found::Message { start, end, .. }) = c.decode_at(&mut src).unwrap() else { panic!("no frame") };
        assert_eq!(&src[start..end], b"{}");
        // As a `Decoder`: what is left in the buffer is only what it has not read.
        let mut c = codec(1024);
        let mut src = BytesMut::from(&b"Content-Length: 7\r\n\r\n{\"a\""[..]);
        assert_eq!(c.decode(&mut src).unwrap(), None);
        assert_eq!(&src[..], b"{\"a\"");
        src.extend_from_slice(b":1}");
        assert_eq!(c.decode(&mut src).unwrap(), Some(Frame::Message(BytesMut::from(&b"{\"a\":1}"[..]))));
        assert!(src.is_empty());
        let mut src = BytesMut::from(&b"Content-Length: 7\r\n\r\n{\"a\""[..]);
        let mut c = codec(1024);
        let err = c.decode_eof(&mut src).unwrap_err();
        assert_eq!(err.to_string(), "stream ended inside a frame: expected a body of 7 bytes, got 4");
        assert_eq!(&src[..], b"{\"a\"");
    }

    #[test]
    fn encodes_exactly_content_length() {
        let mut dst = BytesMut::new();
        encode(b"{}", &mut dst);
        assert_eq!(&dst[..], b"Content-Length: 2\r\n\r\n{}");
        let mut dst = BytesMut::new();
        encode(&[b'x'; 1234], &mut dst);
        assert!(dst.starts_with(b"Content-Length: 1234\r\n\r\n"));
    }

    #[test]
    fn decodes_split_and_joined_frames_with_any_header_case() {
        let input = b"content-LENGTH: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf8\r\nX-Other: 1\r\n\r\n{}Content-Length:3\r\n\r\n[1]";
        let frames = decode_all(input).unwrap();
        assert_eq!(
            frames,
            vec![Frame::Message(BytesMut::from(&b"{}"[..])), Frame::Message(BytesMut::from(&b"[1]"[..]))]
        );
    }

    #[test]
    fn refuses_oversized_length_before_allocating() {
        let mut c = codec(1024);
        let mut buf = BytesMut::from(&b"Content-Length: 99999999999999\r\n\r\n"[..]);
        assert!(matches!(c.decode(&mut buf), Err(FrameError::TooLarge { size: 99999999999999, limit: 1024 })));
        assert!(buf.capacity() < 1024);
    }

    #[test]
    fn bad_headers() {
        for input in [
            &b"Content-Length: abc\r\n\r\n"[..],
            b"Content-Length: -1\r\n\r\n",
            b"Content-Type: application/json\r\n\r\n",
            b"Content-Length 2\r\n\r\n{}",
            b"Content-Length: 2\nX: y\r\n\r\n{}",
            b"Content-Length: 2\r\nContent-Type: application/json; charset=latin1\r\n\r\n{}",
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        ] {
            assert!(matches!(decode_all(input), Err(FrameError::BadHeader(_))), "{:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn over_long_header_block() {
        let mut input = b"X: ".to_vec();
        input.extend(std::iter::repeat_n(b'a', 300));
        assert!(matches!(decode_all(&input), Err(FrameError::HeaderTooLong { limit: 256 })));
    }

    #[test]
    fn truncation_is_an_error_and_clean_eof_is_not() {
        assert!(decode_all(b"").unwrap().is_empty());
        assert!(matches!(decode_all(b"Content-Length: 5\r\n\r\n{}"), Err(FrameError::Truncated(_))));
        assert!(matches!(decode_all(b"Content-Len"), Err(FrameError::Truncated(_))));
    }
}
