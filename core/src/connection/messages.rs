//! The message-level seam: a connection over a transport that delimits messages itself
//! (WebSocket, a channel, a message queue). Inbound, a stream of [`Frame`]s (what a byte-stream
//! decoder yields too); outbound, one body per message into a [`Sink`].

use std::io;
use std::sync::Arc;

use futures::{Sink, Stream};

use super::outbound::SinkWriter;
use super::reader::EofReason;
use super::shared::Shared;
use super::{Builder, Connection};
use crate::framing::{Frame, FrameError};

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
    /// let sum: i64 = client.handle().request("add", (40, 2)).await?;
    /// assert_eq!(sum, 42);
    /// # Ok(()) }
    /// ```
    pub fn connect_messages<St, Si>(self, incoming: St, outgoing: Si) -> Connection
    where
        St: Stream<Item = Result<Frame, FrameError>> + Send + Unpin + 'static,
        Si: Sink<Vec<u8>, Error = io::Error> + Send + Unpin + 'static,
    {
        self.start_messages(incoming, |_| outgoing, None, None).0
    }

    /// [`Builder::connect_messages`] for transports that need the connection's state to build
    /// their sink (to say why in a closing frame) or know why the peer went away.
    pub(crate) fn start_messages<St, Si, F>(
        self,
        incoming: St,
        outgoing: F,
        eof_reason: Option<EofReason>,
        in_message: Option<super::frames::InMessage>,
    ) -> (Connection, Arc<Shared>)
    where
        St: Stream<Item = Result<Frame, FrameError>> + Send + Unpin + 'static,
        Si: Sink<Vec<u8>, Error = io::Error> + Send + Unpin + 'static,
        F: FnOnce(&Arc<Shared>) -> Si,
    {
        let frames = super::frames::MessageFrames::new(incoming, in_message);
        self.start_with(frames, eof_reason, None, move |shared| Box::new(SinkWriter::new(outgoing(shared))))
    }

    /// [`Builder::start_messages`] with the reader handed back for the caller's task to poll
    /// (see [`Builder::start_driven`]).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn start_messages_driven<St, Si>(
        self,
        incoming: St,
        outgoing: Si,
    ) -> (Connection, futures::future::BoxFuture<'static, ()>)
    where
        St: Stream<Item = Result<Frame, FrameError>> + Send + Unpin + 'static,
        Si: Sink<Vec<u8>, Error = io::Error> + Send + Unpin + 'static,
    {
        let frames = super::frames::MessageFrames::new(incoming, None);
        let (connection, _, reader) =
            self.start_driven(frames, None, None, move |_| Box::new(SinkWriter::new(outgoing)), true);
        (connection, reader.unwrap_or_else(|| Box::pin(async {})))
    }
}
