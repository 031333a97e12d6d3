//! Property: for both framings, what the codec encodes decodes back to the same messages, in
//! the same order, however the bytes are cut into chunks on the way (fed to the decoder chunk
//! by chunk, as a transport's reads would), with nothing left over at EOF.

use crate::support;

use bytes::BytesMut;
use jsonrpc_duplex::framing::{Frame, FrameCodec, FrameLimits, Framing};
use proptest::prelude::*;
use serde_json::Value;
use support::arb_json;
use tokio_util::codec::Decoder;

const LIMITS: FrameLimits = FrameLimits::new().max_message_size(4096).max_header_size(256);

/// Feed `bytes` to a fresh decoder in chunks whose sizes cycle through `sizes`, then EOF.
fn decode_chunked(framing: Framing, bytes: &[u8], sizes: &[usize]) -> Vec<BytesMut> {
    let mut codec: FrameCodec = framing.codec(LIMITS);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].clamp(1, rest.len());
        i += 1;
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(frame) = codec.decode(&mut buf).expect("a frame we encoded failed to decode") {
            match frame {
                Frame::Message(body) => out.push(body),
                other => panic!("a message within the limit became {other:?}"),
            }
        }
    }
    if let Some(frame) = codec.decode_eof(&mut buf).expect("a clean end failed to decode") {
        panic!("EOF produced another frame: {frame:?}");
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    out
}

fn json() -> impl Strategy<Value = Value> {
    arb_json::json(4, 48, 6)
}

fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..80, 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `Content-Length` carries any bytes: identity down to the byte.
    #[test]
    fn content_length_round_trips_any_bytes(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..600), 0..8),
        sizes in chunk_sizes(),
    ) {
        let codec = Framing::ContentLength.codec(LIMITS);
        let mut wire = BytesMut::new();
        for body in &bodies {
            codec.encode(body, &mut wire);
        }
        let decoded = decode_chunked(Framing::ContentLength, &wire, &sizes);
        let decoded: Vec<Vec<u8>> = decoded.iter().map(|b| b.to_vec()).collect();
        prop_assert_eq!(decoded, bodies);
    }

    /// Both framings carry any JSON message, compact or pretty-printed (newline framing flattens
    /// the line breaks of pretty JSON, which must not change its meaning).
    #[test]
    fn json_messages_round_trip_in_both_framings(
        values in prop::collection::vec(json(), 1..8),
        pretty in any::<bool>(),
        newline in any::<bool>(),
        sizes in chunk_sizes(),
    ) {
        let framing = if newline { Framing::NewlineDelimited } else { Framing::ContentLength };
        let codec = framing.codec(LIMITS);
        let mut wire = BytesMut::new();
        let mut texts = Vec::new();
        for v in &values {
            let text = if pretty { serde_json::to_vec_pretty(v) } else { serde_json::to_vec(v) }.unwrap();
            prop_assume!(text.len() <= LIMITS.max_message_size);
            codec.encode(&text, &mut wire);
            texts.push(text);
        }
        let decoded = decode_chunked(framing, &wire, &sizes);
        prop_assert_eq!(decoded.len(), values.len());
        for ((body, text), value) in decoded.iter().zip(&texts).zip(&values) {
            if framing == Framing::ContentLength || !pretty {
                prop_assert_eq!(&body[..], &text[..]);
            }
            let back: Value = serde_json::from_slice(body).unwrap();
            prop_assert_eq!(&back, value);
        }
    }
}
