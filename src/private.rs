//! What generated code refers to, under one hidden path (`jsonrpc_duplex::__private`) so that
//! users depend on this crate alone. Not a public API: names here may change with the macro.

pub use serde;
pub use serde_json;
pub use serde_json::value::RawValue;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use futures::Stream;
pub use jsonrpc_duplex_core::handler::{NotificationStart, RequestStart, decode_params};
pub use jsonrpc_duplex_core::{
    CallOptions, Enumerable, Error, ErrorObject, Handle, Notification, NotificationContext, OfferedStream, Progress,
    ProgressToken, Request, RequestContext, Responder, Router,
};

pub use crate::context::{FromNotificationContext, FromRequestContext};
pub use crate::error::{ClientError, RpcError, RpcErrorType};
pub use crate::generator::{Begin, Generator, Yielder, generate};
pub use crate::params::{ArrayProbe, ParamsReader, ReadArray, ReadArrayNot};
pub use crate::rpc_stream::RpcStream;

/// `describe! { .. }`: what `#[rpc]` writes for the `openrpc` feature, kept only with it.
pub use crate::__jsonrpc_duplex_describe as describe;
#[cfg(feature = "openrpc")]
pub use crate::openrpc;
#[cfg(feature = "openrpc")]
pub use crate::openrpc::probe::{Probe, WithErrors, WithSchema, WithoutErrors, WithoutSchema};

/// The typed error of a call (a function of its own, so that a missing `RpcErrorType` is
/// reported once, at the method's error type).
pub fn client_result<E: RpcErrorType>(result: Result<Box<RawValue>, Error>) -> Result<Box<RawValue>, ClientError<E>> {
    result.map_err(ClientError::from)
}

/// Decode a call's result (what `Handle::request_with` does; a function of its own, so that a
/// missing `Deserialize` is reported at the method's result type).
pub fn decode_result<R: DeserializeOwned, E>(raw: &RawValue) -> Result<R, ClientError<E>> {
    serde_json::from_str(raw.get()).map_err(|e| ClientError::Call(Error::Deserialize(e)))
}

/// Answer with a result (a function of its own, so that a missing `Serialize` is reported at
/// the method's result type).
pub fn reply_ok<R: Serialize>(reply: Responder, result: R) -> bool {
    reply.ok(result)
}

/// A notification whose params do not decode is dropped (it has no answer to carry the error);
/// say so where people look.
pub fn notification_dropped(method: &str, error: &ErrorObject) {
    tracing::warn!(
        target: jsonrpc_duplex_core::LOG_TARGET,
        %method,
        %error,
        "notification dropped: its params do not decode"
    );
}

/// Answer a streaming request: run the method until it has its stream (or fails), then answer
/// with the stream's enumerable object, prefetching as the connection's settings say.
///
/// A boxed future (not an `async fn`), so that a missing `Serialize` is reported once, at the
/// call, which the macro spans at the item type.
pub fn reply_stream<I, E>(reply: Responder, peer: Handle, mut body: Generator<Begin<I, E>>) -> BoxFuture<'static, ()>
where
    I: Serialize + Send + 'static,
    E: RpcErrorType + Send + 'static,
{
    Box::pin(async move {
        match started(&mut body).await {
            Ok(()) => {
                let mut offer = peer.offer_stream(items(body));
                offer.prefetch(peer.stream_settings().prefetch).await;
                reply.ok(offer);
            }
            Err(error) => {
                reply.err(error);
            }
        }
    })
}

/// [`reply_stream`] for a stream of `Result<T, IE>` items: an `Err` item ends the stream with its
/// error object.
pub fn reply_try_stream<T, IE, E>(
    reply: Responder,
    peer: Handle,
    mut body: Generator<Begin<Result<T, IE>, E>>,
) -> BoxFuture<'static, ()>
where
    T: Serialize + Send + 'static,
    IE: RpcErrorType + Send + 'static,
    E: RpcErrorType + Send + 'static,
{
    Box::pin(async move {
        match started(&mut body).await {
            Ok(()) => {
                let items = items(body).map(|item| item.map_err(IE::into_error_object));
                let mut offer = peer.offer_try_stream(items);
                offer.prefetch(peer.stream_settings().prefetch).await;
                reply.ok(offer);
            }
            Err(error) => {
                reply.err(error);
            }
        }
    })
}

async fn started<I, E: RpcErrorType>(body: &mut Generator<Begin<I, E>>) -> Result<(), ErrorObject> {
    match body.next().await {
        Some(Begin::Started) => Ok(()),
        Some(Begin::Failed(e)) => Err(e.into_error_object()),
        _ => Err(ErrorObject::internal_error("the streaming method ended without a stream")),
    }
}

fn items<I: Send + 'static, E: Send + 'static>(body: Generator<Begin<I, E>>) -> impl Stream<Item = I> + Send + 'static {
    body.into_items()
}

/// A stream argument as the server method receives it.
pub fn open_stream<T: DeserializeOwned, E>(peer: &Handle, enumerable: Enumerable) -> RpcStream<T, E> {
    RpcStream::from(peer.open_stream(enumerable))
}

/// Call a streaming method (lazily: the request goes out when the stream is first polled).
pub fn request_stream<T: DeserializeOwned, E, P: Serialize + ?Sized>(
    handle: &Handle,
    method: &str,
    params: &P,
    options: CallOptions,
) -> RpcStream<T, E> {
    RpcStream::from(handle.request_stream(method, params, options))
}

/// Offer a stream argument (a function of its own, so that a missing `Serialize` is reported at
/// the item type).
pub fn offer_stream<S>(handle: &Handle, stream: S) -> jsonrpc_duplex_core::OfferedStream
where
    S: Stream + Send + 'static,
    S::Item: Serialize,
{
    handle.offer_stream(stream)
}
