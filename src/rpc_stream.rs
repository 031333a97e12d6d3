//! The typed stream of a generated client: a [`RemoteStream`] whose errors are the method's.

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use jsonrpc_duplex_core::RemoteStream;
use serde::de::DeserializeOwned;

use crate::error::{ClientError, RpcError, RpcErrorType};

/// A stream of items the peer generates, as a generated client returns it for a streaming
/// method (`fn search(&self, q: String) -> impl Stream<Item = T> + Send` in the trait), and as a
/// streaming *argument* arrives in a server method (`numbers: RpcStream<i64>`).
///
/// Each item is `Ok(T)`, or one `Err` after which the stream ends: the method's own error
/// ([`ClientError::Method`], from a `Result<T, E>` item or a failed call), a cancellation, a lost
/// connection. Items are pulled from the peer only as this stream is polled; dropping it early
/// tells the peer to stop (`$/enumerator/abort`). It wraps the core's [`RemoteStream`], which a
/// hand-written client gets from [`Handle::request_stream`](crate::Handle::request_stream).
#[must_use = "streams do nothing unless polled"]
pub struct RpcStream<T, E = RpcError> {
    inner: RemoteStream<T>,
    _error: PhantomData<fn() -> E>,
}

impl<T, E> From<RemoteStream<T>> for RpcStream<T, E> {
    fn from(inner: RemoteStream<T>) -> Self {
        RpcStream { inner, _error: PhantomData }
    }
}

impl<T, E> RpcStream<T, E> {
    /// The core stream underneath (its errors are the connection's [`Error`](crate::Error)).
    pub fn into_inner(self) -> RemoteStream<T> {
        self.inner
    }
}

impl<T: DeserializeOwned, E> RpcStream<T, E> {
    /// Whether the stream has ended.
    pub fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

impl<T, E> fmt::Debug for RpcStream<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RpcStream").field(&self.inner).finish()
    }
}

impl<T: DeserializeOwned, E: RpcErrorType> Stream for RpcStream<T, E> {
    type Item = Result<T, ClientError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().inner).poll_next(cx).map(|item| item.map(|r| r.map_err(ClientError::from)))
    }
}
