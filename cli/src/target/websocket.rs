//! WebSocket through the library's message seam, so that each message is recorded whole.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::BytesMut;
use futures::{Sink, StreamExt};
use jsonrpc_duplex_core::framing::{Frame, FrameError};
use jsonrpc_duplex_core::transport::websocket::tokio_tungstenite;
use jsonrpc_duplex_core::{Builder, Connection};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::{SharedRecorder, lock};
use crate::error::CliError;
use crate::trace::{Side, WireFraming};

pub(super) async fn connect(url: &str, builder: Builder, recorder: SharedRecorder) -> Result<Connection, CliError> {
    let (ws, _response) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|source| CliError::WebSocket { target: url.to_owned(), source: Box::new(source) })?;
    let (sink, stream) = ws.split();
    let seen = recorder.clone();
    let incoming = stream.filter_map(move |message| {
        let body = match message {
            Ok(Message::Text(text)) => Some(Ok(BytesMut::from(text.as_bytes()))),
            Ok(Message::Binary(bytes)) => Some(Ok(BytesMut::from(&bytes[..]))),
            // Pings are answered by tungstenite; the close handshake ends the stream.
            Ok(_) => None,
            Err(e) => Some(Err(FrameError::Io(std::io::Error::other(e)))),
        };
        if let Some(Ok(body)) = &body {
            let mut recorder = lock(&seen);
            recorder.message(Side::Server, Instant::now(), WireFraming::Websocket, body);
            recorder.flush();
        }
        std::future::ready(body.map(|b| b.map(Frame::Message)))
    });
    let outgoing = Outgoing { inner: sink, recorder, closing: false };
    Ok(builder.connect_messages(Box::pin(incoming), outgoing))
}

/// Bodies out as text frames, recorded; closing says goodbye with a normal close frame.
struct Outgoing<S> {
    inner: S,
    recorder: SharedRecorder,
    closing: bool,
}

impl<S: Sink<Message, Error = WsError> + Unpin> Sink<Vec<u8>> for Outgoing<S> {
    type Error = std::io::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.inner).poll_ready(cx).map_err(std::io::Error::other)
    }

    fn start_send(mut self: Pin<&mut Self>, body: Vec<u8>) -> Result<(), Self::Error> {
        {
            let mut recorder = lock(&self.recorder);
            recorder.message(Side::Client, Instant::now(), WireFraming::Websocket, &body);
            recorder.flush();
        }
        let text = String::from_utf8(body).map_err(std::io::Error::other)?;
        Pin::new(&mut self.inner).start_send(Message::Text(text.into())).map_err(std::io::Error::other)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.inner).poll_flush(cx).map_err(std::io::Error::other)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !self.closing {
            ready!(Pin::new(&mut self.inner).poll_ready(cx)).map_err(std::io::Error::other)?;
            let goodbye = CloseFrame { code: CloseCode::Normal, reason: "".into() };
            Pin::new(&mut self.inner).start_send(Message::Close(Some(goodbye))).map_err(std::io::Error::other)?;
            self.closing = true;
        }
        Pin::new(&mut self.inner).poll_close(cx).map_err(std::io::Error::other)
    }
}
