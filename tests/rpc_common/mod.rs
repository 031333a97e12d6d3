//! Shared by the `rpc_*` tests: a hand-written peer on raw bytes (never our own `Connection`),
//! so tests can assert the exact frames a generated client sends and feed a generated server
//! exactly the frames another implementation would.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use jsonrpc_duplex::{Builder, Connection};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// Every wait in these tests is bounded, so a hang fails in seconds.
pub const WAIT: Duration = Duration::from_secs(5);

/// The other end of a connection, speaking `Content-Length` frames by hand.
pub struct RawPeer {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
}

/// Start `builder` on one end of an in-memory pipe; the raw peer holds the other.
pub fn raw_peer(builder: Builder) -> (Connection, RawPeer) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let conn = builder.connect_io(ours);
    let (r, w) = tokio::io::split(theirs);
    (conn, RawPeer { reader: BufReader::new(r), writer: w })
}

impl RawPeer {
    /// Send one message as a frame.
    pub async fn send(&mut self, json: &str) {
        let frame = format!("Content-Length: {}\r\n\r\n{json}", json.len());
        self.writer.write_all(frame.as_bytes()).await.expect("write to the connection");
    }

    /// The next message, as text exactly as it was written.
    pub async fn recv(&mut self) -> String {
        tokio::time::timeout(WAIT, self.read_frame()).await.expect("a message within the wait")
    }

    async fn read_frame(&mut self) -> String {
        let mut length = None;
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).await.expect("read a header");
            assert!(n > 0, "the connection closed while a message was expected");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                length = Some(v.parse::<usize>().expect("a numeric Content-Length"));
            }
        }
        let mut body = vec![0; length.expect("a Content-Length header")];
        self.reader.read_exact(&mut body).await.expect("read the body");
        String::from_utf8(body).expect("UTF-8 body")
    }

    /// The next message, parsed.
    pub async fn recv_json(&mut self) -> serde_json::Value {
        let text = self.recv().await;
        serde_json::from_str(&text).expect("a JSON message")
    }

    /// Send a request and return the answer's text.
    pub async fn call(&mut self, json: &str) -> String {
        self.send(json).await;
        self.recv().await
    }

    /// Close the write side: the connection sees EOF.
    pub async fn close(mut self) {
        let _ = self.writer.shutdown().await;
    }
}

/// Two connected `Connection`s over an in-memory pipe.
pub fn pair(a: Builder, b: Builder) -> (Connection, Connection) {
    let (x, y) = tokio::io::duplex(1 << 20);
    (a.connect_io(x), b.connect_io(y))
}

/// Bound a future by [`WAIT`].
pub async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(WAIT, f).await.expect("finished within the wait")
}
