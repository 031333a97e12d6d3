//! What the fuzz targets share: an allocation guard, chunked feeding of a decoder, and a whole
//! connection driven by arbitrary bytes on a paused clock.
//!
//! Every target takes its first input byte as a control byte (framing, how the rest is cut into
//! chunks) and the rest as the bytes a peer sends.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use jsonrpc_duplex_core::framing::{Frame, FrameCodec, FrameError, FrameLimits, Framing};
use tokio_util::codec::Decoder;

/// The largest single allocation any target may make. The targets run with limits of a few
/// KiB, so anything near this is an allocation the limits failed to bound (say a
/// `Content-Length` believed before it was checked).
pub const MAX_SINGLE_ALLOCATION: usize = 1024 * 1024;
/// The most memory a target may hold at once (Rust allocations only).
pub const MAX_LIVE_BYTES: usize = 256 * 1024 * 1024;

/// A global allocator that aborts (a crash libFuzzer records, with the input) on an allocation
/// over [`MAX_SINGLE_ALLOCATION`] or when live memory passes [`MAX_LIVE_BYTES`].
pub struct AllocGuard;

static LIVE: AtomicUsize = AtomicUsize::new(0);

fn over_limit(what: &[u8], size: usize) -> ! {
    // No allocation here: format the number by hand.
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut err = std::io::stderr();
    let _ = err.write_all(what);
    let _ = err.write_all(&digits[i..]);
    let _ = err.write_all(b" bytes\n");
    std::process::abort()
}

fn check(size: usize) {
    // A panic's report (backtrace symbolization) may allocate a lot; it is reported anyway.
    if std::thread::panicking() {
        return;
    }
    if size > MAX_SINGLE_ALLOCATION {
        over_limit(b"AllocGuard: one allocation of ", size);
    }
    let live = LIVE.load(Ordering::Relaxed) + size;
    if live > MAX_LIVE_BYTES {
        over_limit(b"AllocGuard: live memory would reach ", live);
    }
}

// SAFETY: every call is forwarded to `System` with the same arguments; the guard only counts.
unsafe impl GlobalAlloc for AllocGuard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            check(new_size - layout.size());
            if new_size > MAX_SINGLE_ALLOCATION && !std::thread::panicking() {
                over_limit(b"AllocGuard: one reallocation to ", new_size);
            }
        }
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

/// Cut `data` into chunks whose sizes cycle through two lengths taken from `ctl` (1..=16 each):
/// the same bytes, arriving in a different way.
pub fn chunks(ctl: u8, data: &[u8]) -> Vec<&[u8]> {
    let sizes = [usize::from(ctl & 0x0f) + 1, usize::from(ctl >> 4) + 1];
    let mut out = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % 2].min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    out
}

/// What a decoder made of a byte stream: its frames, then how it ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Frames in order.
    pub frames: Vec<Frame>,
    /// `None`: clean end; otherwise the error, as text.
    pub error: Option<String>,
}

/// Feed `pieces` to a fresh decoder one after another (as `FramedRead` does, decoding after
/// each read), then signal EOF. Panics if the decoder breaks an invariant: a frame over the
/// limit, a frame that consumed nothing, more frames than there were bytes.
pub fn decode_pieces(framing: Framing, limits: FrameLimits, pieces: &[&[u8]]) -> Decoded {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let mut codec: FrameCodec = framing.codec(limits);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let push = |frame: Frame, frames: &mut Vec<Frame>| {
        if let Frame::Message(body) = &frame {
            assert!(!body.is_empty() || framing == Framing::ContentLength, "an empty newline frame");
            assert!(
                body.len() <= limits.max_message_size,
                "a frame of {} bytes passed the limit of {}",
                body.len(),
                limits.max_message_size
            );
        }
        frames.push(frame);
        assert!(frames.len() <= total + 1, "more frames than input bytes: the decoder loops");
    };
    let fail = |e: FrameError, frames: Vec<Frame>| Decoded { frames, error: Some(e.to_string()) };
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            let before = buf.len();
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    assert!(
                        buf.len() < before || matches!(frame, Frame::Discarded { .. }),
                        "a frame that consumed no input"
                    );
                    push(frame, &mut frames);
                }
                Ok(None) => break,
                Err(e) => return fail(e, frames),
            }
        }
        assert!(
            buf.capacity() <= 2 * (limits.max_message_size + limits.max_header_size) + 64 * 1024 + total,
            "the buffer grew to {} bytes",
            buf.capacity()
        );
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(frame)) => push(frame, &mut frames),
            Ok(None) => break,
            Err(e) => return fail(e, frames),
        }
    }
    Decoded { frames, error: None }
}

/// The limits the decoder targets run with: small, so the fuzzer reaches them.
pub const SMALL_FRAME_LIMITS: FrameLimits = FrameLimits::new().max_message_size(100).max_header_size(64);

/// Decode `data` whole, byte by byte, and in the chunks `ctl` picks: all three must agree.
pub fn check_decoder(framing: Framing, input: &[u8]) {
    let Some((&ctl, data)) = input.split_first() else { return };
    let limits = SMALL_FRAME_LIMITS;
    let whole = decode_pieces(framing, limits, &[data]);
    let chunked = decode_pieces(framing, limits, &chunks(ctl, data));
    assert_eq!(whole, chunked, "the frames depend on how the bytes arrive (chunks of {ctl:#04x})");
    if data.len() <= 512 {
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        let one_by_one = decode_pieces(framing, limits, &bytes);
        assert_eq!(whole, one_by_one, "the frames depend on how the bytes arrive (one byte at a time)");
    }
    // Re-encoding what was decoded and decoding it again gives the same messages.
    let mut again = BytesMut::new();
    let codec = framing.codec(limits);
    let messages: Vec<&BytesMut> = whole
        .frames
        .iter()
        .filter_map(|f| match f {
            Frame::Message(b) => Some(b),
            _ => None,
        })
        .collect();
    for body in &messages {
        codec.encode(body, &mut again);
    }
    let redecoded = decode_pieces(framing, limits, &[&again]);
    assert_eq!(redecoded.error, None, "our own encoding did not decode");
    let redecoded: Vec<&BytesMut> = redecoded
        .frames
        .iter()
        .filter_map(|f| match f {
            Frame::Message(b) => Some(b),
            _ => None,
        })
        .collect();
    // Newline framing turns a raw CR inside a line into a space (a JSON body keeps its meaning);
    // `Content-Length` carries any bytes as they are.
    let flatten = framing == Framing::NewlineDelimited;
    let expected: Vec<Vec<u8>> = messages
        .iter()
        .map(|b| b.iter().map(|&c| if flatten && (c == b'\r' || c == b'\n') { b' ' } else { c }).collect())
        .collect();
    let got: Vec<Vec<u8>> = redecoded.iter().map(|b| b.to_vec()).collect();
    assert_eq!(expected, got, "encode then decode changed a message");
}

/// The in-memory pipe's buffer each way: large enough that the connection's answers rarely wait
/// for the peer's reader (each wait is a task switch), small enough to be reached by a flood.
pub const PIPE_BUFFER: usize = 16 * 1024;

/// How the peer's bytes are cut into writes for a whole connection: pieces whose sizes cycle
/// through two multiples (1..=8, from the low 6 bits of `ctl`) of a thirty-second of the input,
/// so that an input takes about eight writes and frames still arrive split at every kind of
/// place; with `ctl`'s bit 6 set, the first 64 bytes come in pieces of 1..=8 bytes (headers
/// and the start of a message cut anywhere). Each write is a round of task switches, the
/// fuzzer's budget: cutting every input into 1..=16-byte pieces cost more than the connection.
pub fn connection_pieces(ctl: u8, data: &[u8]) -> Vec<&[u8]> {
    let (a, b) = (usize::from(ctl & 7) + 1, usize::from((ctl >> 3) & 7) + 1);
    let coarse = (data.len() / 32).max(1);
    let fine = if ctl & 0x40 != 0 { 64.min(data.len()) } else { 0 };
    let mut out = Vec::with_capacity(48);
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let done = data.len() - rest.len();
        let unit = if done < fine { 1 } else { coarse };
        let n = (if i % 2 == 0 { a } else { b } * unit).min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    out
}

/// How long (on the paused clock) a connection fed one input may take to end.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(3600);

/// The limits a fuzzed connection runs with: small, so that every one of them is reached.
pub fn small_limits() -> jsonrpc_duplex_core::Limits {
    jsonrpc_duplex_core::Limits::new()
        .frame(FrameLimits::new().max_message_size(1024).max_header_size(256))
        .max_batch_len(8)
        .max_concurrent_requests(4)
        .max_concurrent_request_bytes(2048)
        .read_ahead(8)
        .read_ahead_bytes(2048)
        .max_buffered_inbound(64)
        .max_buffered_inbound_bytes(2048)
        .outbound_buffer(1024)
        .max_pending_calls(16)
        .max_offered_streams(8)
        .max_trace_len(256)
}

/// A service that reaches every part of the connection: typed and raw params (decoded as
/// `serde_json::Value`, so deep nesting meets serde_json's recursion limit), a call back to the
/// peer (who never answers), a stream result, a request that waits for its cancellation (or
/// 1 s), a panicking handler and a notification.
pub fn fuzz_router() -> jsonrpc_duplex_core::Router {
    use jsonrpc_duplex_core::{ErrorObject, Router};
    Router::new()
        .method("add", |(a, b): (i64, i64), _cx| async move { Ok::<_, ErrorObject>(a.wrapping_add(b)) })
        .method("echo", |v: serde_json::Value, _cx| async move { Ok::<_, ErrorObject>(v) })
        .method("callback", |(): (), cx| async move {
            cx.peer().request::<serde_json::Value>("ping", ()).await.map_err(ErrorObject::internal_error)
        })
        .request_raw("count", |req, reply| async move {
            let n = req.decode_params::<(u8,)>().map(|(n,)| n).unwrap_or(3);
            let stream = req.peer().offer_stream(futures::stream::iter(0..u64::from(n)));
            reply.ok(stream);
        })
        // Waits for its cancellation, or 1 s (on the paused clock: no real time passes), so that
        // every handler ends by itself and the connection must end once its input has (at most
        // ~200 of these fit in an input, 4 at a time: well within the deadline).
        .method("wait", |(): (), cx| async move {
            tokio::select! {
                _ = cx.cancellation().cancelled() => Err(ErrorObject::internal_error("cancelled")),
                _ = tokio::time::sleep(Duration::from_secs(1)) => Ok(()),
            }
        })
        .method("panic", |(): (), _cx| async move {
            if true {
                std::panic::panic_any(DELIBERATE_PANIC);
            }
            Ok::<(), ErrorObject>(())
        })
        .notification("note", |_: serde_json::Value, _cx| async move {})
}

/// What the `panic` method panics with.
const DELIBERATE_PANIC: &str = "a handler panicked on purpose";

/// Feed `input` (control byte, then the peer's bytes) to a connection over an in-memory pipe, on
/// a paused clock, reading everything it writes; then end the input and require that the
/// connection ends within [`CONNECTION_DEADLINE`] and that everything it wrote is well framed
/// JSON-RPC.
pub fn check_connection(input: &[u8]) {
    use jsonrpc_duplex_core::Router;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // libFuzzer's panic hook aborts on every panic, even one the connection catches: let the
    // service's deliberate panic through to the connection, and nothing else.
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let fuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&DELIBERATE_PANIC) {
                fuzzer_hook(info)
            }
        }));
    });
    let Some((&ctl, data)) = input.split_first() else { return };
    let framing = if ctl & 1 == 0 { Framing::ContentLength } else { Framing::NewlineDelimited };
    // One runtime for every input (building one costs more than many a run): current-thread,
    // paused, so that the connection's timers (the EOF grace, `wait`'s second) cost no real time.
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
    }
    // One router for every input too (a clone shares its table).
    thread_local! {
        static ROUTER: Router = fuzz_router();
    }
    let written = RUNTIME.with(|rt| {
        rt.block_on(async move {
            let (ours, theirs) = tokio::io::duplex(PIPE_BUFFER);
            let conn = jsonrpc_duplex_core::Connection::builder()
                .framing(framing)
                .limits(small_limits())
                .serve(ROUTER.with(Router::clone))
                .connect_io(ours);
            let (mut rd, mut wr) = tokio::io::split(theirs);
            let reader = tokio::spawn(async move {
                let mut out = Vec::new();
                let _ = rd.read_to_end(&mut out).await;
                out
            });
            let run = async {
                for piece in connection_pieces(ctl >> 1, data) {
                    if wr.write_all(piece).await.is_err() {
                        break;
                    }
                }
                let _ = wr.shutdown().await;
                let reason = conn.closed().await;
                drop(conn);
                let written = reader.await.expect("the reading task");
                (reason, written)
            };
            match tokio::time::timeout(CONNECTION_DEADLINE, run).await {
                Ok((_reason, written)) => written,
                Err(_) => panic!("the connection did not end within {CONNECTION_DEADLINE:?} after its input did"),
            }
        })
    });
    // Everything we wrote must be well framed, valid JSON-RPC 2.0.
    let limits = FrameLimits::new().max_message_size(usize::MAX / 4).max_header_size(64);
    let decoded = decode_pieces(framing, limits, &[&written]);
    assert_eq!(decoded.error, None, "we wrote a broken frame: {:?}", String::from_utf8_lossy(&written));
    for frame in decoded.frames {
        let Frame::Message(body) = frame else { panic!("we wrote an over-long line") };
        let invalid = |e: serde_json::Error| -> ! {
            panic!("we wrote invalid JSON-RPC ({e}): {:?}", String::from_utf8_lossy(&body))
        };
        // Typed shapes, not a `serde_json::Value` per message: the check must cost less than
        // the connection it checks.
        let messages: Vec<Shape> = if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            serde_json::from_slice(&body).unwrap_or_else(|e| invalid(e))
        } else {
            vec![serde_json::from_slice(&body).unwrap_or_else(|e| invalid(e))]
        };
        for m in messages {
            let text = || String::from_utf8_lossy(&body);
            assert_eq!(
                m.jsonrpc.as_deref(),
                Some("2.0"),
                "we wrote a message without \"jsonrpc\": \"2.0\": {}",
                text()
            );
            let is_response = m.result.0 != m.error.0;
            let is_call = m.method.is_some();
            assert!(is_response ^ is_call, "we wrote something that is neither a call nor a response: {}", text());
        }
    }
}

/// The members of a message the output check needs (a `method` must be a string, and
/// `"result": null` is a result).
#[derive(serde::Deserialize)]
struct Shape {
    jsonrpc: Option<String>,
    method: Option<String>,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a member is there, whatever its value (`null` included).
#[derive(Default)]
struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}
