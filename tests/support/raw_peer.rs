//! A JSON-RPC peer written by hand on raw bytes, never on our own `Connection`, so that it catches
//! malformed frames we write.
//!
//! It writes exactly the bytes a test gives it, and a spawned task reads continuously into a
//! buffer (so a synchronous pipe never deadlocks the test); frames are cut from that buffer by
//! this module's own strict parser: a `Content-Length` frame must be exactly
//! `Content-Length: N\r\n\r\n` + N bytes of UTF-8, a newline frame one non-blank line ending in a
//! bare `\n`. Every wait is bounded by [`WAIT`], so a hang fails in seconds.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonrpc_duplex::{Builder, Connection, Framing};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::time::{WAIT, within};

/// What the reader task has seen so far.
#[derive(Default)]
struct Inbox {
    buf: Vec<u8>,
    eof: bool,
    error: Option<String>,
}

/// The hand-written peer.
pub(crate) struct RawPeer {
    framing: Framing,
    writer: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    inbox: Arc<watch::Sender<Inbox>>,
    reading: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Drop for RawPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Our `Connection` (built from `builder` with `framing`) and a raw peer on the other end of an
/// in-memory pipe of 64 KiB each way.
pub(crate) fn pair(builder: Builder, framing: Framing) -> (Connection, RawPeer) {
    pair_with_buffer(builder, framing, 64 * 1024)
}

/// [`pair`] with a chosen pipe buffer size.
pub(crate) fn pair_with_buffer(builder: Builder, framing: Framing, buffer: usize) -> (Connection, RawPeer) {
    let (ours, theirs) = tokio::io::duplex(buffer);
    let conn = builder.framing(framing).connect_io(ours);
    let (r, w) = tokio::io::split(theirs);
    (conn, RawPeer::new(r, w, framing))
}

impl RawPeer {
    /// A peer reading from `reader` and writing to `writer`.
    pub(crate) fn new<R, W>(reader: R, writer: W, framing: Framing) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let inbox = Arc::new(watch::Sender::new(Inbox::default()));
        let (reading, gate) = watch::channel(true);
        let task = tokio::spawn(read_loop(reader, inbox.clone(), gate));
        RawPeer { framing, writer: Some(Box::new(writer)), inbox, reading, task }
    }

    /// Stop (`false`) or resume (`true`) reading from the pipe, to play a peer that does not read.
    pub(crate) fn set_reading(&self, on: bool) {
        self.reading.send_replace(on);
    }

    /// `body` framed the way this peer's framing wants it.
    pub(crate) fn frame(&self, body: &[u8]) -> Vec<u8> {
        frame(self.framing, body)
    }

    /// Write exactly these bytes and flush.
    pub(crate) async fn send_raw(&mut self, bytes: impl AsRef<[u8]>) {
        let writer = self.writer.as_mut().expect("the raw peer's write side is closed");
        within(async {
            writer.write_all(bytes.as_ref()).await.expect("raw peer write");
            writer.flush().await.expect("raw peer flush");
        })
        .await
    }

    /// Write one framed message.
    pub(crate) async fn send(&mut self, body: impl AsRef<[u8]>) {
        let bytes = self.frame(body.as_ref());
        self.send_raw(bytes).await
    }

    /// Write one framed JSON message.
    pub(crate) async fn send_json(&mut self, message: Value) {
        self.send(message.to_string()).await
    }

    /// Take the write side (e.g. to flood from another task).
    pub(crate) fn take_writer(&mut self) -> Box<dyn AsyncWrite + Send + Unpin> {
        self.writer.take().expect("the raw peer's write side is already taken")
    }

    /// Give back a write side taken with [`RawPeer::take_writer`].
    pub(crate) fn put_writer(&mut self, writer: Box<dyn AsyncWrite + Send + Unpin>) {
        self.writer = Some(writer);
    }

    /// Write `n` messages (`message(i)`, framed) from a task of their own: the task gives the
    /// write side back when all are written (see [`RawPeer::put_writer`]); the count is how many
    /// the pipe has taken so far, to see a flood that our connection has paused.
    pub(crate) fn flood(
        &mut self,
        n: usize,
        message: impl Fn(usize) -> Vec<u8> + Send + 'static,
    ) -> (JoinHandle<Box<dyn AsyncWrite + Send + Unpin>>, Arc<AtomicUsize>) {
        let written = Arc::new(AtomicUsize::new(0));
        let (mut writer, w, framing) = (self.take_writer(), written.clone(), self.framing);
        let task = tokio::spawn(async move {
            for i in 0..n {
                writer.write_all(&frame(framing, &message(i))).await.unwrap();
                w.fetch_add(1, Ordering::SeqCst);
            }
            writer.flush().await.unwrap();
            writer
        });
        (task, written)
    }

    /// Shut the write side down: our connection reads EOF.
    pub(crate) async fn close_write(&mut self) {
        if let Some(mut w) = self.writer.take() {
            within(w.shutdown()).await.expect("raw peer shutdown");
        }
    }

    /// The next frame, exactly as it was on the wire (header included), and its body.
    pub(crate) async fn recv_frame(&self) -> RawFrame {
        let framing = self.framing;
        let mut rx = self.inbox.subscribe();
        let mut taken = None;
        let waited = tokio::time::timeout(WAIT, async {
            loop {
                rx.borrow_and_update();
                self.inbox.send_if_modified(|inbox| match cut_frame(framing, &inbox.buf) {
                    Ok(Some((whole, body))) => {
                        inbox.buf.drain(..whole.len());
                        taken = Some(Ok((whole, body)));
                        true
                    }
                    Ok(None) if inbox.eof => {
                        taken = Some(Err(format!(
                            "the stream ended ({}) with {} unframed bytes: {:?}",
                            inbox.error.as_deref().unwrap_or("EOF"),
                            inbox.buf.len(),
                            String::from_utf8_lossy(&inbox.buf)
                        )));
                        false
                    }
                    Ok(None) => false,
                    Err(why) => {
                        taken = Some(Err(format!(
                            "malformed frame from us: {why}: {:?}",
                            String::from_utf8_lossy(&inbox.buf)
                        )));
                        false
                    }
                });
                if taken.is_some() {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        match (waited, taken) {
            (_, Some(Ok(frame))) => frame,
            (_, Some(Err(why))) => panic!("{why}"),
            (Err(_), None) => panic!(
                "no complete frame within {WAIT:?}; buffered: {:?}",
                String::from_utf8_lossy(&self.inbox.borrow().buf)
            ),
            (Ok(()), None) => panic!("the raw peer's reader is gone"),
        }
    }

    /// The next message's body as text.
    pub(crate) async fn recv_text(&self) -> String {
        let (_, body) = self.recv_frame().await;
        String::from_utf8(body).expect("we wrote a body that is not UTF-8")
    }

    /// Write one framed message and return the next message's body as text (the answer, when
    /// nothing else is on its way).
    pub(crate) async fn call(&mut self, body: &str) -> String {
        self.send(body).await;
        self.recv_text().await
    }

    /// The next message as JSON.
    pub(crate) async fn recv(&self) -> Value {
        let text = self.recv_text().await;
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("we wrote invalid JSON ({e}): {text}"))
    }

    /// Assert the next message equals `expected`.
    #[track_caller]
    pub(crate) fn expect(&self, expected: Value) -> impl Future<Output = ()> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            let got = self.recv().await;
            assert_eq!(got, expected, "unexpected message (expected at {caller})");
        }
    }

    /// The next message, which must be an error response; returns `(id, code, message)`.
    pub(crate) async fn recv_error(&self) -> (Value, i64, String) {
        let got = self.recv().await;
        let error = got.get("error").unwrap_or_else(|| panic!("expected an error response, got {got}"));
        assert_eq!(got["jsonrpc"], "2.0", "{got}");
        assert!(got.get("result").is_none(), "an error response with a result: {got}");
        let code = error["code"].as_i64().unwrap_or_else(|| panic!("error without an integer code: {got}"));
        let message = error["message"].as_str().unwrap_or_else(|| panic!("error without a message: {got}")).to_owned();
        (got["id"].clone(), code, message)
    }

    /// Wait until our side has shut its write side down, with nothing unread before it.
    pub(crate) async fn expect_eof(&self) {
        let mut rx = self.inbox.subscribe();
        let seen = within(rx.wait_for(|inbox| inbox.eof || !inbox.buf.is_empty()))
            .await
            .map(|i| (i.eof, String::from_utf8_lossy(&i.buf).into_owned()));
        match seen {
            Ok((true, rest)) if rest.is_empty() => {}
            Ok((_, rest)) => panic!("expected EOF, got bytes: {rest:?}"),
            Err(_) => panic!("the raw peer's reader is gone"),
        }
    }

    /// Assert that no byte arrives within `window` (a short window: this is the one place a test
    /// waits for time to pass, to prove something does *not* happen).
    pub(crate) async fn expect_silence(&self, window: Duration) {
        let mut rx = self.inbox.subscribe();
        if let Ok(Ok(inbox)) = tokio::time::timeout(window, rx.wait_for(|i| !i.buf.is_empty())).await {
            panic!("expected silence, got: {:?}", String::from_utf8_lossy(&inbox.buf));
        }
    }

    /// Whether our side's write side has been shut (EOF seen), regardless of buffered bytes.
    pub(crate) fn saw_eof(&self) -> bool {
        self.inbox.borrow().eof
    }

    /// Bytes received but not yet taken as frames.
    pub(crate) fn buffered(&self) -> Vec<u8> {
        self.inbox.borrow().buf.clone()
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: R,
    inbox: Arc<watch::Sender<Inbox>>,
    mut gate: watch::Receiver<bool>,
) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        if gate.wait_for(|on| *on).await.is_err() {
            return;
        }
        match reader.read(&mut chunk).await {
            Ok(0) => {
                inbox.send_modify(|i| i.eof = true);
                return;
            }
            Ok(n) => inbox.send_modify(|i| i.buf.extend_from_slice(&chunk[..n])),
            Err(e) => {
                inbox.send_modify(|i| {
                    i.eof = true;
                    i.error = Some(e.to_string());
                });
                return;
            }
        }
    }
}

/// `body` framed for `framing`.
pub(crate) fn frame(framing: Framing, body: &[u8]) -> Vec<u8> {
    match framing {
        Framing::ContentLength => {
            let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
            out.extend_from_slice(body);
            out
        }
        _ => {
            let mut out = body.to_vec();
            out.push(b'\n');
            out
        }
    }
}

/// A whole frame as it was on the wire, and its body.
type RawFrame = (Vec<u8>, Vec<u8>);

/// Cut one frame off the front of `buf` with the strictest reading of what we promise to write.
/// `Ok(None)`: not complete yet.
fn cut_frame(framing: Framing, buf: &[u8]) -> Result<Option<RawFrame>, String> {
    match framing {
        Framing::ContentLength => {
            const PREFIX: &[u8] = b"Content-Length: ";
            let n = buf.len().min(PREFIX.len());
            if buf[..n] != PREFIX[..n] {
                return Err("a frame must start with exactly \"Content-Length: \"".into());
            }
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                if buf.len() > 64 {
                    return Err("header longer than any we write".into());
                }
                return Ok(None);
            };
            let digits = &buf[PREFIX.len()..end];
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) || (digits[0] == b'0' && digits.len() > 1) {
                return Err(format!(
                    "the header must be one Content-Length line, got {:?}",
                    String::from_utf8_lossy(&buf[..end])
                ));
            }
            let len: usize =
                std::str::from_utf8(digits).map_err(|e| e.to_string())?.parse().map_err(|e| format!("{e}"))?;
            let start = end + 4;
            if buf.len() < start + len {
                return Ok(None);
            }
            let body = buf[start..start + len].to_vec();
            check_body(&body)?;
            Ok(Some((buf[..start + len].to_vec(), body)))
        }
        _ => {
            let Some(nl) = buf.iter().position(|&b| b == b'\n') else { return Ok(None) };
            let body = buf[..nl].to_vec();
            if body.is_empty() {
                return Err("a blank line".into());
            }
            if body.ends_with(b"\r") {
                return Err("a line ending in CRLF (we write bare LF)".into());
            }
            check_body(&body)?;
            Ok(Some((buf[..=nl].to_vec(), body)))
        }
    }
}

fn check_body(body: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("a body that is not UTF-8 ({e})"))?;
    serde_json::from_str::<Value>(text).map_err(|e| format!("a body that is not JSON ({e}): {text}"))?;
    if text.starts_with('\u{feff}') {
        return Err("a body with a BOM".into());
    }
    Ok(())
}
