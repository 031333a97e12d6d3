//! The message-level seam: a connection over a transport that delimits messages itself
//! (WebSocket, a channel, a message queue). Inbound, a stream of [`Frame`]s (what a byte-stream
//! decoder yields too); outbound, one body per message into a [`Sink`].

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures::{Sink, SinkExt, Stream};
use tokio_util::sync::CancellationToken;

use super::outbound::{Chunk, Drain};
use super::reader::EofReason;
use super::shared::Shared;
use super::{Builder, CloseKind, CloseReason, Connection};
use crate::framing::{Frame, FrameError};

/// Messages fed to the sink before it is flushed (when more are queued at once).
const BATCH_BYTES: usize = 64 * 1024;

impl Builder {
    /// Start over a message-oriented transport: `incoming` yields one [`Frame::Message`] per
    /// inbound JSON-RPC message (or batch), `outgoing` takes one body per outbound message.
    ///
    /// The [framing](Builder::framing) setting does not apply; the size limit does: outbound
    /// bodies over [`Builder::max_message_size`] are refused before they reach the sink, and the
    /// transport should refuse larger inbound ones ([`FrameError::TooLarge`]). The stream
    /// ending is the peer's EOF; an error ends the connection ([`FrameError::Io`] as a stream
    /// error, any other variant as the peer's protocol violation). Several bodies may be fed
    /// before the sink is flushed; when the connection ends the sink is closed.
    ///
    /// The WebSocket transport (feature `websocket`) is built on this. Here two connections talk
    /// over channels:
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use futures::{SinkExt, StreamExt, channel::mpsc};
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Router, framing::Frame};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (to_server, server_rx) = mpsc::channel::<Vec<u8>>(16);
    /// let (to_client, client_rx) = mpsc::channel::<Vec<u8>>(16);
    /// let frames = |rx: mpsc::Receiver<Vec<u8>>| rx.map(|body| Ok(Frame::Message(BytesMut::from(&body[..]))));
    ///
    /// let _server = Connection::builder()
    ///     .serve(Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) }))
    ///     .connect_messages(frames(server_rx), to_client.sink_map_err(std::io::Error::other));
    /// let client = Connection::builder().connect_messages(frames(client_rx), to_server.sink_map_err(std::io::Error::other));
    /// let sum: i64 = client.request("add", (40, 2)).await?;
    /// assert_eq!(sum, 42);
    /// # Ok(()) }
    /// ```
    pub fn connect_messages<St, Si>(self, incoming: St, outgoing: Si) -> Connection
    where
        St: Stream<Item = Result<Frame, FrameError>> + Send + Unpin + 'static,
        Si: Sink<Vec<u8>, Error = io::Error> + Send + Unpin + 'static,
    {
        self.start_messages(incoming, |_| outgoing, None).0
    }

    /// [`Builder::connect_messages`] for transports that need the connection's state to build
    /// their sink (to say why in a closing frame) or know why the peer went away.
    pub(crate) fn start_messages<St, Si, F>(
        self,
        incoming: St,
        outgoing: F,
        eof_reason: Option<EofReason>,
    ) -> (Connection, Arc<Shared>)
    where
        St: Stream<Item = Result<Frame, FrameError>> + Send + Unpin + 'static,
        Si: Sink<Vec<u8>, Error = io::Error> + Send + Unpin + 'static,
        F: FnOnce(&Arc<Shared>) -> Si,
    {
        self.start_with(incoming, eof_reason, None, move |shared, tracker, done| {
            let sink = outgoing(&shared);
            run_message_writer(sink, Drain::new(shared, tracker), done)
        })
    }
}

/// The writer task of a message transport: the byte writer's loop (same order, same drain on
/// close, same flush timeout) with one sink item per message instead of framed bytes. Only this
/// task writes here (a sink cannot be written one poll at a time from a caller's task).
async fn run_message_writer<Si>(mut sink: Si, mut drain: Drain, done: CancellationToken)
where
    Si: Sink<Vec<u8>, Error = io::Error> + Unpin,
{
    let shared = drain.shared().clone();
    let out = &shared.outbound;
    let mut batch = VecDeque::new();
    // Always empty: a message transport's queue has no tail.
    let mut tail = bytes::BytesMut::new();
    'outer: while drain.turn().await {
        let mut fed = 0;
        loop {
            let Some(chunk) = batch.pop_front() else {
                if fed < BATCH_BYTES && out.take_or_release(&mut batch, &mut tail) {
                    continue;
                }
                break;
            };
            let Chunk::Body(body) = chunk else { continue };
            fed += body.len();
            match drain.write(sink.feed(body)).await {
                None => break 'outer,
                Some(Err(e)) => return writer_failed(sink, &shared, e, &done).await,
                Some(Ok(())) => {}
            }
        }
        match drain.write(sink.flush()).await {
            None => break,
            Some(Err(e)) => return writer_failed(sink, &shared, e, &done).await,
            Some(Ok(())) => {}
        }
        // Stopped at a batch's size still owning the queue, `turn` goes on at once.
    }
    let _ = tokio::time::timeout(Duration::from_millis(500), sink.close()).await;
    shared.finish();
    done.cancel();
}

/// Writing failed: end the connection, and still try to close the sink (a message transport may
/// have a closing handshake to finish, say a WebSocket whose peer closed first).
async fn writer_failed<Si>(mut sink: Si, shared: &Shared, e: io::Error, done: &CancellationToken)
where
    Si: Sink<Vec<u8>, Error = io::Error> + Unpin,
{
    shared.close(CloseReason::new(CloseKind::StreamError, format!("writing to the peer failed: {e}")));
    let _ = tokio::time::timeout(Duration::from_millis(500), sink.close()).await;
    shared.finish();
    done.cancel();
}
