//! The generator side's handle on one stream: [`Handle::offer_stream`] and the enumerable object
//! it serializes as.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::{Stream, StreamExt};
use serde::ser::{Error as _, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::producer::{Batch, End, Items, Producer};
use super::{StreamSettings, Streams};
use crate::connection::{Extension, Handle};
use crate::message::ErrorObject;
use crate::message::bind::{Found, serialize_bound};

/// A stream this side offers to the peer; it serializes as StreamJsonRpc's enumerable object
/// `{"token": N, "values": [..]?}` and the connection serves the peer's `$/enumerator/next` for it.
///
/// Put it where the value goes — the result of a request handler, or (a field of) the params of a
/// request — and it binds itself to that message when it is serialized:
/// - in a **result**, the stream lives until the consumer has taken its last item, aborts, or the
///   connection ends;
/// - in a **request's params**, it also ends when that request is answered (the protocol's rule
///   for streams passed as arguments: the callee must consume them before it answers).
///
/// It can be sent once, only on the connection that offered it, and never in a notification
/// (nothing would ever end it; StreamJsonRpc refuses that too): serializing it anywhere else is a
/// serialization error. Dropped without being sent, it drops its stream.
///
/// ```
/// use futures::StreamExt;
/// use jsonrpc_duplex_core::{Connection, Router, transport::memory};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Router::new().request_raw("countTo", |req, reply| async move {
///     match req.decode_params::<(u64,)>() {
///         // The items are produced only as the consumer pulls them.
///         Ok((n,)) => reply.ok(req.peer().offer_stream(futures::stream::iter(1..=n))),
///         Err(e) => reply.err(e),
///     };
/// });
/// let (client, _server) = memory::pair(Connection::builder(), Connection::builder().serve(server));
///
/// let numbers: Vec<u64> = client
///     .handle()
///     .request_stream::<u64>("countTo", (3,), Default::default())
///     .map(|item| item.expect("an item"))
///     .collect()
///     .await;
/// assert_eq!(numbers, [1, 2, 3]);
/// # Ok(()) }
/// ```
#[must_use = "an offered stream is withdrawn when dropped unsent"]
pub struct OfferedStream {
    /// The streams of the connection that offered it (held: its address marks this stream).
    streams: Arc<Streams>,
    /// `None` once the whole sequence is in `values` (prefetched to its end).
    token: Option<u64>,
    /// Prefetched items, as a JSON array.
    values: Option<Box<RawValue>>,
    sent: AtomicBool,
    /// Refused at the connection's limit of live offered streams (the limit): sending it fails.
    refused: Option<usize>,
    /// Refused because the connection can offer no stream (why): sending it fails.
    unavailable: Option<Arc<str>>,
}

impl std::fmt::Debug for OfferedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfferedStream")
            .field("token", &self.token)
            .field("prefetched", &self.values.as_ref().map(|v| v.get()))
            .field("sent", &self.sent.load(Ordering::Relaxed))
            .finish()
    }
}

impl Handle {
    /// Offer `stream` to the peer, paced by the connection's [`StreamSettings`]
    /// ([`Builder::stream_settings`](crate::Builder::stream_settings)). See [`OfferedStream`].
    pub fn offer_stream<S>(&self, stream: S) -> OfferedStream
    where
        S: Stream + Send + 'static,
        S::Item: Serialize,
    {
        self.offer_stream_with(stream, self.stream_settings())
    }

    /// [`Handle::offer_stream`] with settings of its own.
    pub fn offer_stream_with<S>(&self, stream: S, settings: StreamSettings) -> OfferedStream
    where
        S: Stream + Send + 'static,
        S::Item: Serialize,
    {
        self.offer_try_stream_with(stream.map(Ok::<_, ErrorObject>), settings)
    }

    /// Offer a stream whose items may be errors: an `Err` item is the answer to the consumer's
    /// `next` (after the items before it have been delivered), and the stream ends there.
    pub fn offer_try_stream<S, T, E>(&self, stream: S) -> OfferedStream
    where
        S: Stream<Item = Result<T, E>> + Send + 'static,
        T: Serialize,
        E: Into<ErrorObject>,
    {
        self.offer_try_stream_with(stream, self.stream_settings())
    }

    /// [`Handle::offer_try_stream`] with settings of its own.
    pub fn offer_try_stream_with<S, T, E>(&self, stream: S, settings: StreamSettings) -> OfferedStream
    where
        S: Stream<Item = Result<T, E>> + Send + 'static,
        T: Serialize,
        E: Into<ErrorObject>,
    {
        let streams = self.builtin::<Streams>();
        if let Some(why) = streams.unavailable.clone() {
            return OfferedStream {
                streams,
                token: None,
                values: None,
                sent: AtomicBool::new(false),
                refused: None,
                unavailable: Some(why),
            };
        }
        let token = streams.producers.next_token();
        let producer = Producer::new(token, Box::new(Items(Box::pin(stream))), settings);
        let refused = streams.producers.insert(producer).err();
        if let Some(limit) = refused {
            tracing::debug!(target: crate::LOG_TARGET, limit, "a stream offered beyond the limit of live streams refused");
        }
        OfferedStream {
            streams,
            token: refused.is_none().then_some(token),
            values: None,
            sent: AtomicBool::new(false),
            refused,
            unavailable: None,
        }
    }

    /// The connection's default [`StreamSettings`].
    pub fn stream_settings(&self) -> StreamSettings {
        self.builtin::<Streams>().settings
    }
}

impl OfferedStream {
    /// The token the peer pulls with; `None` when every item is prefetched already.
    pub fn token(&self) -> Option<u64> {
        self.token
    }

    /// Produce up to `count` items now and send them inside the enumerable object itself
    /// (StreamJsonRpc's `Prefetch`), saving the consumer that many round trips. If the stream ends
    /// meanwhile, the object carries every item and no token; if it fails, the items before the
    /// failure are sent and the error answers the consumer's first `next`.
    pub async fn prefetch(&mut self, count: usize) {
        let Some(token) = self.token.filter(|_| count > 0) else { return };
        let Some(producer) = self.streams.producers.get(token) else { return };
        let mut out = match self.values.take() {
            // Items prefetched before: go on after them.
            Some(values) => {
                let mut text = String::from(values.get()).into_bytes();
                text.pop();
                if text.len() > 1 {
                    text.push(b',');
                }
                text
            }
            None => b"[".to_vec(),
        };
        let start = out.len();
        let end = match producer.pull(count, &mut out).await {
            Ok(Batch { count: 0, end }) => {
                if start > 1 {
                    out.truncate(start - 1);
                }
                end
            }
            Ok(Batch { end, .. }) => end,
            Err(_) => None,
        };
        out.push(b']');
        if matches!(end, Some(End::Finished)) {
            self.streams.producers.dispose(token);
            self.token = None;
        }
        if out.len() > 2 {
            // Items we serialized ourselves: this parse only re-checks them.
            match String::from_utf8(out).ok().and_then(|s| RawValue::from_string(s).ok()) {
                Some(values) => self.values = Some(values),
                None => tracing::error!(target: crate::LOG_TARGET, token, "prefetched items are not valid JSON"),
            }
        }
    }
}

impl Serialize for OfferedStream {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Some(limit) = self.refused {
            return Err(S::Error::custom(format!(
                "this connection already has {limit} live offered streams, its limit \
                 (Builder::max_offered_streams): the peer must finish or abort some first"
            )));
        }
        if let Some(why) = &self.unavailable {
            return Err(S::Error::custom(format!("a stream cannot be offered on this connection: {why}")));
        }
        if self.sent.swap(true, Ordering::AcqRel) {
            return Err(S::Error::custom("an offered stream can be sent only once"));
        }
        let wire = Enumerable { token: self.token, values: self.values.as_deref() };
        match self.token {
            // The connection's encoder binds it to the message it travels in (see
            // `message::bind`): in a request's params it ends with that request.
            Some(token) => {
                let extension: Arc<dyn Extension> = self.streams.clone();
                let found = Found { registry: crate::connection::registry(&extension), token, strict: true };
                let written = serialize_bound(serializer, found, &wire);
                if written.is_err() {
                    // Refused (in a notification, on another connection): it may still be sent.
                    self.sent.store(false, Ordering::Release);
                }
                written
            }
            // Every item is in `values`: nothing is left to serve.
            None => wire.serialize(serializer),
        }
    }
}

/// StreamJsonRpc's enumerable object.
struct Enumerable<'a> {
    token: Option<u64>,
    values: Option<&'a RawValue>,
}

impl Serialize for Enumerable<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = usize::from(self.token.is_some()) + usize::from(self.values.is_some());
        let mut object = serializer.serialize_struct("Enumerable", fields)?;
        if let Some(token) = self.token {
            object.serialize_field("token", &token)?;
        }
        if let Some(values) = self.values {
            object.serialize_field("values", values)?;
        }
        object.end()
    }
}

impl Drop for OfferedStream {
    fn drop(&mut self) {
        if !self.sent.load(Ordering::Acquire)
            && let Some(token) = self.token
        {
            self.streams.producers.dispose(token);
        }
    }
}
