//! Cutting one direction's bytes into messages, whatever they hold: the framing is detected from
//! the bytes (or fixed), frames are cut by the library's own codecs, and anything that is not a
//! frame (a log line on stdout, a broken header) comes out as unframed bytes, after which the
//! splitter finds the next message again. Nothing here can stop the bytes themselves: they were
//! forwarded before they got here.

use bytes::{Buf, BytesMut};
use jsonrpc_duplex_core::Framing;
use jsonrpc_duplex_core::framing::{Frame, FrameCodec, FrameError, FrameLimits};
use tokio_util::codec::Decoder;

use super::WireFraming;

/// Unframed bytes are reported in pieces of at most this many bytes when no line end comes.
const MAX_UNFRAMED: usize = 64 * 1024;

/// What one direction's bytes held.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// One message body (JSON or not: that is decided later).
    Message {
        /// How it was delimited.
        framing: WireFraming,
        /// The body, without headers or line end.
        body: BytesMut,
    },
    /// Bytes outside any frame, and why they are not one.
    Unframed {
        /// The bytes.
        bytes: BytesMut,
        /// Why.
        why: String,
    },
    /// A message too large to keep: passed on, not recorded.
    Skipped {
        /// How it was delimited.
        framing: WireFraming,
        /// Its size in bytes, when the framing says.
        size: Option<u64>,
        /// The limit it exceeded.
        limit: usize,
    },
}

enum State {
    /// Between messages, framing not known (or lost after junk).
    Detect,
    /// Inside a framed stream.
    Framed(FrameCodec, WireFraming),
    /// Passing over the body of a message over the size limit.
    Skip { remaining: u64, size: u64 },
}

/// One direction's splitter.
pub(crate) struct Splitter {
    fixed: Option<Framing>,
    limits: FrameLimits,
    state: State,
    buf: BytesMut,
}

impl Splitter {
    /// A splitter that detects the framing (`fixed: None`) or is told it.
    pub(crate) fn new(fixed: Option<Framing>, max_message_size: usize) -> Self {
        let limits = FrameLimits::new().max_message_size(max_message_size);
        Splitter { fixed, limits, state: State::Detect, buf: BytesMut::new() }
    }

    /// Feed bytes; complete pieces are appended to `out`.
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut Vec<Piece>) {
        self.buf.extend_from_slice(bytes);
        self.drain(false, out);
    }

    /// The stream ended: whatever is left becomes pieces.
    pub(crate) fn finish(&mut self, out: &mut Vec<Piece>) {
        self.drain(true, out);
        if !self.buf.is_empty() {
            let bytes = self.buf.split();
            out.push(Piece::Unframed { bytes, why: "the stream ended inside a frame".into() });
        }
        self.state = State::Detect;
    }

    /// Bytes went by unseen (the recorder could not keep up): start over at the next message.
    pub(crate) fn lose_sync(&mut self) {
        self.buf.clear();
        self.state = State::Detect;
    }

    fn drain(&mut self, eof: bool, out: &mut Vec<Piece>) {
        loop {
            match &mut self.state {
                State::Skip { remaining, size } => {
                    let n = (*remaining).min(self.buf.len() as u64);
                    self.buf.advance(n as usize);
                    *remaining -= n;
                    if *remaining > 0 {
                        return;
                    }
                    let size = *size;
                    out.push(Piece::Skipped {
                        framing: WireFraming::ContentLength,
                        size: Some(size),
                        limit: self.limits.max_message_size,
                    });
                    self.state = State::Detect;
                }
                State::Detect => match detect(&mut self.buf, self.fixed, eof) {
                    Detected::NeedMore => return,
                    Detected::Junk(n) => out.push(Piece::Unframed {
                        bytes: self.buf.split_to(n),
                        why: "not a message: no Content-Length header and not JSON".into(),
                    }),
                    Detected::Start(framing) => {
                        let wire = match framing {
                            Framing::ContentLength => WireFraming::ContentLength,
                            _ => WireFraming::Newline,
                        };
                        self.state = State::Framed(framing.codec(self.limits), wire);
                    }
                },
                State::Framed(codec, wire) => {
                    let wire = *wire;
                    let decoded = if eof { codec.decode_eof(&mut self.buf) } else { codec.decode(&mut self.buf) };
                    match decoded {
                        Ok(Some(Frame::Message(body))) => {
                            if wire == WireFraming::Newline && self.fixed.is_none() && starts_with_header(&body) {
                                // The other framing after all (a server that printed a line
                                // before its first header): read the line again as a header.
                                let mut again = body;
                                again.extend_from_slice(b"\r\n");
                                again.unsplit(self.buf.split());
                                self.buf = again;
                                self.state = State::Detect;
                                continue;
                            }
                            out.push(Piece::Message { framing: wire, body });
                        }
                        Ok(Some(Frame::Discarded { limit })) => {
                            out.push(Piece::Skipped { framing: wire, size: None, limit })
                        }
                        // A kind of frame this version does not know carries no message to show.
                        Ok(Some(_)) => {}
                        Ok(None) => return,
                        Err(FrameError::TooLarge { size, .. }) if let Some(end) = find(&self.buf, b"\r\n\r\n") => {
                            self.buf.advance(end + 4);
                            self.state = State::Skip { remaining: size, size };
                        }
                        Err(e) => {
                            // Junk: at least one byte goes, so detection cannot find the same
                            // broken header again.
                            self.state = State::Detect;
                            let n = junk_len(&self.buf).unwrap_or(self.buf.len()).min(self.buf.len());
                            if n == 0 {
                                return;
                            }
                            out.push(Piece::Unframed { bytes: self.buf.split_to(n), why: e.to_string() });
                        }
                    }
                }
            }
        }
    }
}

enum Detected {
    NeedMore,
    /// The first n bytes are not a message.
    Junk(usize),
    Start(Framing),
}

const HEADER_PREFIX: &[u8] = b"content-";

/// What the bytes at the front of `buf` are (leading whitespace is dropped: it separates
/// messages in both framings).
fn detect(buf: &mut BytesMut, fixed: Option<Framing>, eof: bool) -> Detected {
    let blank = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
    buf.advance(blank);
    if buf.is_empty() {
        return Detected::NeedMore;
    }
    let may_be_header = fixed != Some(Framing::NewlineDelimited);
    let may_be_line = fixed != Some(Framing::ContentLength);
    if may_be_header && starts_with_header(buf) {
        return Detected::Start(Framing::ContentLength);
    }
    if may_be_header && !eof && buf.len() < HEADER_PREFIX.len() && HEADER_PREFIX.starts_with(&lower(buf)) {
        return Detected::NeedMore;
    }
    if may_be_line && (matches!(buf[0], b'{' | b'[') || fixed == Some(Framing::NewlineDelimited)) {
        return Detected::Start(Framing::NewlineDelimited);
    }
    match junk_len(buf) {
        Some(n) => Detected::Junk(n),
        None if eof || buf.len() >= MAX_UNFRAMED => Detected::Junk(buf.len().min(MAX_UNFRAMED)),
        None => Detected::NeedMore,
    }
}

/// How many bytes of junk start `buf` (at least one): up to and including the first line end, or
/// up to the next `Content-Length` header if that comes first (searched from the second byte, as
/// the junk may be a broken header itself). `None` when neither is there yet.
fn junk_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.iter().position(|&b| b == b'\n').map(|p| p + 1);
    let header = buf.get(1..).and_then(|rest| find_ignore_case(rest, b"content-length")).map(|p| p + 1);
    match (line_end, header) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn starts_with_header(bytes: &[u8]) -> bool {
    bytes.len() >= HEADER_PREFIX.len() && bytes[..HEADER_PREFIX.len()].eq_ignore_ascii_case(HEADER_PREFIX)
}

fn lower(bytes: &[u8]) -> Vec<u8> {
    bytes.to_ascii_lowercase()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece of `input`, fed `step` bytes at a time.
    fn split(input: &[u8], fixed: Option<Framing>, step: usize) -> Vec<Piece> {
        let mut s = Splitter::new(fixed, 1024);
        let mut out = Vec::new();
        for chunk in input.chunks(step) {
            s.push(chunk, &mut out);
        }
        s.finish(&mut out);
        out
    }

    fn msg(framing: WireFraming, body: &str) -> Piece {
        Piece::Message { framing, body: BytesMut::from(body.as_bytes()) }
    }

    fn described(pieces: &[Piece]) -> Vec<String> {
        pieces
            .iter()
            .map(|p| match p {
                Piece::Message { framing, body } => format!("{framing:?} {}", String::from_utf8_lossy(body)),
                Piece::Unframed { bytes, .. } => format!("junk {:?}", String::from_utf8_lossy(bytes)),
                Piece::Skipped { size, .. } => format!("skipped {size:?}"),
            })
            .collect()
    }

    #[test]
    fn content_length_is_detected_and_cut_whatever_the_chunks() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length: 7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1,2,3]";
        for step in [1, 2, 5, 7, input.len()] {
            let pieces = split(input, None, step);
            assert_eq!(pieces, vec![msg(WireFraming::ContentLength, "{}"), msg(WireFraming::ContentLength, "[1,2,3]")]);
        }
    }

    #[test]
    fn newline_is_detected_and_blank_lines_skipped() {
        let input = b"\n{\"a\":1}\r\n\n[2]\n{\"last\":true}";
        for step in [1, 3, input.len()] {
            let pieces = split(input, None, step);
            assert_eq!(
                described(&pieces),
                vec!["Newline {\"a\":1}", "Newline [2]", "Newline {\"last\":true}"],
                "step {step}"
            );
        }
    }

    #[test]
    fn a_log_line_before_the_first_header_is_junk_and_the_frames_still_come() {
        let input = b"Starting server v1.2\nContent-Length: 2\r\n\r\n{}";
        for step in [1, 4, input.len()] {
            assert_eq!(
                described(&split(input, None, step)),
                vec!["junk \"Starting server v1.2\\n\"", "ContentLength {}"],
                "step {step}"
            );
        }
    }

    #[test]
    fn junk_between_frames_is_reported_and_framing_resumes() {
        let input = b"Content-Length: 2\r\n\r\n{}oops, a print()\nContent-Length: 3\r\n\r\n[1]";
        for step in [1, 6, input.len()] {
            assert_eq!(
                described(&split(input, None, step)),
                vec!["ContentLength {}", "junk \"oops, a print()\\n\"", "ContentLength [1]"],
                "step {step}"
            );
        }
    }

    #[test]
    fn a_broken_header_is_junk_up_to_the_next_header() {
        let input = b"Content-Length: abc\r\n\r\nContent-Length: 2\r\n\r\n{}";
        let pieces = split(input, None, input.len());
        assert_eq!(described(&pieces), vec!["junk \"Content-Length: abc\\r\\n\"", "ContentLength {}"]);
    }

    #[test]
    fn a_header_line_in_a_newline_stream_switches_framing() {
        let input = b"{\"first\":1}\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(described(&split(input, None, 1)), vec!["Newline {\"first\":1}", "ContentLength {}"]);
    }

    #[test]
    fn a_message_over_the_limit_is_skipped_and_the_next_one_read() {
        let big = format!("Content-Length: 2000\r\n\r\n{}Content-Length: 2\r\n\r\n{{}}", "x".repeat(2000));
        for step in [1, 100, big.len()] {
            assert_eq!(described(&split(big.as_bytes(), None, step)), vec!["skipped Some(2000)", "ContentLength {}"]);
        }
        let line = format!("{}\n{{}}\n", "y".repeat(2000));
        assert_eq!(
            described(&split(line.as_bytes(), Some(Framing::NewlineDelimited), 64)),
            vec!["skipped None", "Newline {}"]
        );
    }

    #[test]
    fn a_stream_ending_inside_a_frame_leaves_junk() {
        let pieces = split(b"Content-Length: 10\r\n\r\n{\"a\"", None, 3);
        assert_eq!(described(&pieces), vec!["junk \"{\\\"a\\\"\""]);
        assert_eq!(described(&split(b"Cont", None, 1)), vec!["junk \"Cont\""]);
    }

    #[test]
    fn fixed_framing_is_not_second_guessed() {
        let input = b"Content-Length: 2\r\n\r\n{}\n";
        assert_eq!(
            described(&split(input, Some(Framing::NewlineDelimited), 1)),
            vec!["Newline Content-Length: 2", "Newline {}"]
        );
        assert_eq!(
            described(&split(b"{}\nContent-Length: 2\r\n\r\n[]", Some(Framing::ContentLength), 1)),
            vec!["junk \"{}\\n\"", "ContentLength []"]
        );
    }
}
