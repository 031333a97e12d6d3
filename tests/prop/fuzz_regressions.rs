//! Inputs the fuzz targets (fuzz/) found, kept as tests. Each decoder must frame a byte stream
//! the same way however its bytes arrive: whole, one byte at a time, or in any other chunks.

use bytes::BytesMut;
use jsonrpc_duplex::framing::{Frame, FrameLimits, Framing};
use tokio_util::codec::Decoder;

/// The limits the decoder fuzz targets run with.
const LIMITS: FrameLimits = FrameLimits::new().max_message_size(100).max_header_size(64);

/// The frames, then the error as text (if any).
fn decode(framing: Framing, pieces: &[&[u8]]) -> (Vec<Frame>, Option<String>) {
    let mut codec = framing.codec(LIMITS);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(e) => return (frames, Some(e.to_string())),
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => return (frames, None),
            Err(e) => return (frames, Some(e.to_string())),
        }
    }
}

/// Decode `input` whole and one byte at a time; both must give `expected`.
fn assert_framed_alike(framing: Framing, input: &[u8], expected: &(Vec<Frame>, Option<String>)) {
    let whole = decode(framing, &[input]);
    assert_eq!(&whole, expected, "whole");
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(&decode(framing, &bytes), expected, "one byte at a time");
}

fn message(body: &[u8]) -> Frame {
    Frame::Message(BytesMut::from(body))
}

/// fuzz/frame_content_length: a header block whose blank line starts at exactly the limit was
/// refused as over-long when its last bytes ("\r\n\r" then "\n") arrived apart, and accepted
/// when they arrived together.
#[test]
fn a_header_block_ending_at_its_limit_is_judged_alike_however_it_arrives() {
    for pad in [44, 45, 46] {
        // "X: " + pad + "\r\n" + "Content-Length: 2" = the header block before its blank line.
        let mut input = format!("X: {}\r\nContent-Length: 2", "a".repeat(pad)).into_bytes();
        let block = input.len();
        input.extend_from_slice(b"\r\n\r\n{}");
        let expected = if block <= LIMITS.max_header_size {
            (vec![message(b"{}")], None)
        } else {
            (vec![], Some("header block exceeds 64 bytes without a terminating blank line".to_owned()))
        };
        assert_framed_alike(Framing::ContentLength, &input, &expected);
    }
    // The crash input itself: a malformed block of 63 bytes, refused for what it says, not for
    // its length.
    let crash = b"C\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0onte$t-Leng\n\r\n\rth: 2\r\n\r\n{}";
    let (frames, error) = decode(Framing::ContentLength, &[crash]);
    assert!(frames.is_empty());
    let error = error.expect("an error");
    assert!(error.starts_with("bad header"), "{error}");
    assert_framed_alike(Framing::ContentLength, crash, &(frames, Some(error)));
}

/// fuzz/frame_newline: an over-long line of blanks was discarded (and answered `-32600`) when it
/// arrived in pieces, and skipped silently when it arrived whole.
#[test]
fn an_over_long_blank_line_is_discarded_however_it_arrives() {
    let mut input = vec![b' '; 120];
    input.extend_from_slice(b"\n{}\n");
    assert_framed_alike(
        Framing::NewlineDelimited,
        &input,
        &(vec![Frame::Discarded { limit: 100 }, message(b"{}")], None),
    );
}

/// Found with the same target's invariant: a line ending in several carriage returns was cut to
/// its length without them when it arrived whole, but discarded for its length with them when
/// its newline arrived later. Only the one `\r` before `\n` is dropped now.
#[test]
fn a_line_ending_in_several_carriage_returns_is_judged_alike_however_it_arrives() {
    let mut input = vec![b'1'; 100];
    input.extend_from_slice(b"\r\r\r\n[]\r\n");
    assert_framed_alike(
        Framing::NewlineDelimited,
        &input,
        &(vec![Frame::Discarded { limit: 100 }, message(b"[]")], None),
    );
    // At the limit with its one "\r": a message.
    let mut input = vec![b'2'; 100];
    input.extend_from_slice(b"\r\n");
    assert_framed_alike(Framing::NewlineDelimited, &input, &(vec![message(&[b'2'; 100])], None));
}
