//! The practical limit: a hand-written minimal JSON-RPC loop, no framework.
//!
//! Framing by hand over one reused read buffer, `serde_json` with borrowed fields
//! (`&RawValue`, `Cow<str>`), a pending-id map of oneshot senders. The server is one task that
//! reads every complete frame in its buffer, handles each inline (no spawn, no queue), appends the
//! answers to one reused output buffer and writes it once per read. The client has no writer
//! task: frames are appended to a shared buffer, and whoever finds nobody writing writes it, and
//! keeps writing what others appended meanwhile. A call does that from its own task (a lone call
//! costs no task hop); a notification leaves it to a spawned flush (a burst of notifications
//! leaves in few writes). One reader task completes the pending calls. What it leaves out (cancellation, limits,
//! ordering guarantees beyond the stream's, error paths beyond panics) is what a framework adds.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write as _;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use jsonrpc_duplex::Framing;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, WriteHalf};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::harness::{Client, Contender, Io, Link, Tally};

/// The smallest read-buffer reservation (an idle connection keeps about this much).
const READ_CHUNK: usize = 8 * 1024;

/// Frames out of a byte stream, over one reused buffer.
struct FrameReader<R> {
    io: R,
    buf: Vec<u8>,
    /// Start of the first unconsumed byte.
    pos: usize,
    /// Newline framing: bytes before this were searched already.
    scanned: usize,
    /// Content-Length framing: bytes the frame in progress needs in all.
    want: usize,
    framing: Framing,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    fn new(io: R, framing: Framing) -> Self {
        FrameReader { io, buf: Vec::new(), pos: 0, scanned: 0, want: 0, framing }
    }

    /// The next complete frame already in the buffer, as a range of `buf`.
    fn next_frame(&mut self) -> Option<Range<usize>> {
        let avail = &self.buf[self.pos..];
        match self.framing {
            Framing::ContentLength => {
                let header_end = avail.windows(4).position(|w| w == b"\r\n\r\n")?;
                let len = content_length(&avail[..header_end]);
                let start = self.pos + header_end + 4;
                if self.buf.len() < start + len {
                    self.want = start + len - self.pos;
                    return None;
                }
                self.pos = start + len;
                self.want = 0;
                Some(start..start + len)
            }
            Framing::NewlineDelimited => {
                let from = self.scanned.max(self.pos);
                match self.buf[from..].iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        let end = from + i;
                        let frame = self.pos..end;
                        self.pos = end + 1;
                        self.scanned = self.pos;
                        Some(frame)
                    }
                    None => {
                        self.scanned = self.buf.len();
                        None
                    }
                }
            }
            other => panic!("the hand-written loop does not speak {other:?}"),
        }
    }

    /// Read more bytes (after moving the unconsumed tail to the front). 0 at EOF.
    async fn fill(&mut self) -> std::io::Result<usize> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.scanned = self.scanned.saturating_sub(self.pos);
            self.pos = 0;
        }
        let need = self.want.saturating_sub(self.buf.len()).max(READ_CHUNK);
        self.buf.reserve(need);
        self.io.read_buf(&mut self.buf).await
    }
}

fn content_length(header: &[u8]) -> usize {
    for line in header.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(colon) = line.iter().position(|&b| b == b':')
            && line[..colon].eq_ignore_ascii_case(b"content-length")
        {
            let value = std::str::from_utf8(&line[colon + 1..]).expect("ascii header");
            return value.trim().parse().expect("a length");
        }
    }
    panic!("no Content-Length in {:?}", String::from_utf8_lossy(header));
}

/// Append one framed message, its body serialized from `msg` (via `scratch` for Content-Length).
fn put_frame(framing: Framing, msg: &impl Serialize, scratch: &mut Vec<u8>, out: &mut Vec<u8>) {
    match framing {
        Framing::ContentLength => {
            scratch.clear();
            serde_json::to_writer(&mut *scratch, msg).expect("serialize");
            write!(out, "Content-Length: {}\r\n\r\n", scratch.len()).expect("write to a Vec");
            out.extend_from_slice(scratch);
        }
        Framing::NewlineDelimited => {
            serde_json::to_writer(&mut *out, msg).expect("serialize");
            out.push(b'\n');
        }
        other => panic!("the hand-written loop does not speak {other:?}"),
    }
}

#[derive(Serialize)]
struct OutRequest<'a, P> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    method: &'a str,
    params: P,
}

#[derive(Serialize)]
struct OutResult<'a, R> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: R,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: i32,
    message: &'a str,
}

/// Any inbound message, fields borrowed from the read buffer.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

fn params<T: DeserializeOwned>(p: Option<&RawValue>) -> T {
    serde_json::from_str(p.map_or("null", RawValue::get)).expect("params")
}

/// Serve `add`, `echo` and `tick` on `io` until EOF: one task, handlers inline.
pub async fn serve(io: Io, framing: Framing, tally: Arc<Tally>) {
    // One task owns both directions (no split, no lock): read what is there, answer all of it,
    // write once.
    let mut reader = FrameReader::new(io, framing);
    let mut scratch = Vec::new();
    let mut out = Vec::new();
    loop {
        while let Some(frame) = reader.next_frame() {
            let msg: Incoming<'_> = serde_json::from_slice(&reader.buf[frame]).expect("a message");
            let (Some(method), id) = (msg.method, msg.id) else { continue };
            match (&*method, id) {
                ("add", Some(id)) => {
                    let (a, b): (i64, i64) = params(msg.params);
                    put_frame(framing, &OutResult { jsonrpc: "2.0", id, result: a + b }, &mut scratch, &mut out);
                }
                ("echo", Some(id)) => {
                    let (text,): (String,) = params(msg.params);
                    put_frame(framing, &OutResult { jsonrpc: "2.0", id, result: &text }, &mut scratch, &mut out);
                }
                ("tick", None) => {
                    let (_seq,): (u64,) = params(msg.params);
                    tally.hit();
                }
                (_, Some(id)) => {
                    let error = ErrorBody { code: -32601, message: "method not found" };
                    put_frame(framing, &OutError { jsonrpc: "2.0", id, error }, &mut scratch, &mut out);
                }
                (_, None) => {}
            }
        }
        if !out.is_empty() {
            if reader.io.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
            if out.capacity() > 1 << 20 {
                out.shrink_to(READ_CHUNK);
                scratch.shrink_to(READ_CHUNK);
            }
        }
        match reader.fill().await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

type Reply = Result<Box<RawValue>, String>;
type Pending = std::sync::Mutex<HashMap<u64, oneshot::Sender<Reply>>>;

/// Frames waiting to be written, and whether someone is writing them.
struct Outbox {
    buf: Vec<u8>,
    scratch: Vec<u8>,
    writing: bool,
}

struct Writer {
    io: WriteHalf<Io>,
    /// The buffer being written (swapped with the outbox's).
    spare: Vec<u8>,
}

/// The client's write side: no writer task. Whoever finds nobody writing becomes the writer and
/// also writes what others append meanwhile.
struct WriteSide {
    outbox: std::sync::Mutex<Outbox>,
    writer: tokio::sync::Mutex<Writer>,
    framing: Framing,
}

impl WriteSide {
    /// Append a frame; true if the caller must now write (nobody else is).
    fn append(&self, msg: &impl Serialize) -> bool {
        let mut outbox = self.outbox.lock().expect("outbox");
        let Outbox { buf, scratch, writing } = &mut *outbox;
        put_frame(self.framing, msg, scratch, buf);
        !std::mem::replace(writing, true)
    }

    /// Write until the outbox is empty.
    async fn drain(&self) {
        let mut w = self.writer.lock().await;
        let Writer { io, spare } = &mut *w;
        loop {
            {
                let mut outbox = self.outbox.lock().expect("outbox");
                if outbox.buf.is_empty() {
                    outbox.writing = false;
                    if outbox.buf.capacity() > 1 << 20 {
                        outbox.buf.shrink_to(READ_CHUNK);
                        outbox.scratch.shrink_to(READ_CHUNK);
                    }
                    return;
                }
                std::mem::swap(&mut outbox.buf, spare);
            }
            io.write_all(spare).await.expect("write");
            spare.clear();
            if spare.capacity() > 1 << 20 {
                spare.shrink_to(READ_CHUNK);
            }
        }
    }
}

/// The hand-written client: a call writes its own frame from the caller's task (no hop); a
/// notification is appended and written by a spawned flush if nobody is writing (so a burst
/// leaves in few writes); one reader task completes the pending calls.
pub struct HwClient {
    write: Arc<WriteSide>,
    pending: Arc<Pending>,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
}

impl Drop for HwClient {
    fn drop(&mut self) {
        // The reader holds the read half; with both halves gone the peer sees EOF.
        self.reader.abort();
    }
}

impl HwClient {
    /// Start over `io`.
    pub fn new(io: Io, framing: Framing) -> Self {
        let (r, w) = tokio::io::split(io);
        let pending: Arc<Pending> = Arc::default();
        let reader = tokio::spawn(read_replies(FrameReader::new(r, framing), pending.clone()));
        let write = Arc::new(WriteSide {
            outbox: std::sync::Mutex::new(Outbox { buf: Vec::new(), scratch: Vec::new(), writing: false }),
            writer: tokio::sync::Mutex::new(Writer { io: w, spare: Vec::new() }),
            framing,
        });
        HwClient { write, pending, next_id: AtomicU64::new(1), reader }
    }

    /// Call `method` and decode its result.
    pub async fn call<R: DeserializeOwned>(&self, method: &str, params: impl Serialize) -> R {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending").insert(id, tx);
        if self.write.append(&OutRequest { jsonrpc: "2.0", id: Some(id), method, params }) {
            self.write.drain().await;
        }
        let raw = rx.await.expect("the reader ended").unwrap_or_else(|e| panic!("{method}: error {e}"));
        serde_json::from_str(raw.get()).expect("result")
    }

    /// Send a notification (queued; written by a spawned flush unless a write is under way).
    pub async fn notify(&self, method: &str, params: impl Serialize) {
        if self.write.append(&OutRequest { jsonrpc: "2.0", id: None, method, params }) {
            let write = self.write.clone();
            tokio::spawn(async move { write.drain().await });
        }
    }
}

async fn read_replies(mut reader: FrameReader<tokio::io::ReadHalf<Io>>, pending: Arc<Pending>) {
    loop {
        while let Some(frame) = reader.next_frame() {
            let msg: Incoming<'_> = serde_json::from_slice(&reader.buf[frame]).expect("a message");
            if msg.method.is_some() {
                continue; // requests and notifications from the server: none expected
            }
            let Some(id) = msg.id.and_then(|id| id.get().parse::<u64>().ok()) else { continue };
            let Some(tx) = pending.lock().expect("pending").remove(&id) else { continue };
            let reply = match (msg.result, msg.error) {
                (Some(result), _) => Ok(result.to_owned()),
                (None, Some(error)) => Err(error.get().to_owned()),
                (None, None) => Err("neither result nor error".to_owned()),
            };
            let _ = tx.send(reply);
        }
        match reader.fill().await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

impl Client for HwClient {
    async fn add(&self, a: i64, b: i64) -> i64 {
        self.call("add", (a, b)).await
    }
    async fn echo(&self, text: &str) -> usize {
        self.call::<String>("echo", (text,)).await.len()
    }
    async fn tick(&self, seq: u64) {
        self.notify("tick", (seq,)).await
    }
}

/// Both ends hand-written.
pub struct Handwritten {
    /// The transport.
    pub link: Link,
    /// The framing.
    pub framing: Framing,
    /// Where `tick`s are counted.
    pub tally: Arc<Tally>,
}

impl Contender for Handwritten {
    type Client = HwClient;
    type Guard = JoinHandle<()>;
    async fn open(&self) -> (HwClient, JoinHandle<()>) {
        let (a, b) = self.link.pair();
        let server = tokio::spawn(serve(b, self.framing, self.tally.clone()));
        (HwClient::new(a, self.framing), server)
    }
}
