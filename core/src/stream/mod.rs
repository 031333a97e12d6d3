//! Streams over JSON-RPC: StreamJsonRpc's `IAsyncEnumerable<T>` protocol.
//!
//! The side that owns a sequence (the *generator*) sends an enumerable object where a value goes
//! (a whole result, or one param of a request): `{"token": N, "values": [..]?}`. The other side
//! (the *consumer*) pulls with the request `$/enumerator/next` `[N]` and gets
//! `{"values": [..], "finished": bool}`; it stops early with the notification
//! `$/enumerator/abort` `[N]`.
//!
//! ```text
//! --> {"jsonrpc":"2.0","id":0,"method":"countTo","params":{"n":2}}
//! <-- {"jsonrpc":"2.0","id":0,"result":{"token":1}}
//! --> {"jsonrpc":"2.0","id":1,"method":"$/enumerator/next","params":[1]}
//! <-- {"jsonrpc":"2.0","id":1,"result":{"values":[1],"finished":false}}
//! --> {"jsonrpc":"2.0","id":2,"method":"$/enumerator/next","params":[1]}
//! <-- {"jsonrpc":"2.0","id":2,"result":{"values":[2],"finished":false}}
//! --> {"jsonrpc":"2.0","id":3,"method":"$/enumerator/next","params":[1]}
//! <-- {"jsonrpc":"2.0","id":3,"result":{"values":[],"finished":true}}
//! ```
//!
//! - Generator side: [`Handle::offer_stream`](crate::Handle::offer_stream) turns any
//!   `Stream` into an [`OfferedStream`], which serializes as the enumerable object. In a result it
//!   lives until the consumer finishes or aborts it; in a request's params, until that request is
//!   answered (the protocol's rule for streams passed as arguments). The connection answers
//!   `$/enumerator/next` itself, pulling the stream only as fast as the consumer asks
//!   ([`StreamSettings`]: batch size, read-ahead and prefetch, with StreamJsonRpc's defaults), so
//!   a slow consumer keeps the producer paused. An unknown or finished token is answered `-32001`.
//! - Consumer side: [`Handle::open_stream`](crate::Handle::open_stream) turns a received
//!   [`Enumerable`] into a [`RemoteStream`]; [`Handle::request_stream`](crate::Handle::request_stream)
//!   calls a method whose result is one. Dropping a `RemoteStream` early sends the abort.
//!
//! Errors end a stream: an item that is an error reaches the consumer as an `Err` item and the
//! stream ends; cancelling a `next` (its [`CallOptions`](crate::CallOptions) token) ends the
//! sequence on both sides (`-32800`); the connection ending ends every stream with
//! [`Error::ConnectionLost`](crate::Error::ConnectionLost).

mod feature;
mod offer;
mod producer;
mod registry;
mod remote;

use std::borrow::Cow;

pub(crate) use feature::{Streams, StreamsFeature};
pub use offer::OfferedStream;
pub use remote::{Enumerable, RemoteStream};

use serde_json::value::RawValue;

/// How the generator side paces a stream (StreamJsonRpc's `JsonRpcEnumerableSettings`, with its
/// defaults): the defaults pull one item per `$/enumerator/next`, only when asked.
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `min_batch_size` | 1 | items per `next` answer, unless the stream ends first |
/// | `max_read_ahead` | 0 | items produced and buffered before the consumer asks for them |
/// | `prefetch` | 0 | items sent with the enumerable object itself (for a stream that is a method's result) |
///
/// A batch holds at least `min_batch_size` items (unless the stream ends first) and at most
/// `max(min_batch_size, max_read_ahead)`. Production and memory are bounded by them: the producer
/// is never more than `max_read_ahead` items plus one batch ahead of what the consumer has taken
/// (with the defaults, one item: the one being delivered).
///
/// ```
/// use jsonrpc_duplex_core::StreamSettings;
/// let settings = StreamSettings::new().min_batch_size(100).max_read_ahead(1000);
/// assert_eq!((settings.min_batch_size, settings.max_read_ahead, settings.prefetch), (100, 1000, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "a builder does nothing until it is used"]
pub struct StreamSettings {
    /// Items in each `next` answer unless the stream ends first (at least 1).
    pub min_batch_size: usize,
    /// Items produced ahead of the consumer's requests and buffered.
    pub max_read_ahead: usize,
    /// Items sent in the enumerable object itself (see [`OfferedStream::prefetch`]).
    pub prefetch: usize,
}

impl Default for StreamSettings {
    fn default() -> Self {
        StreamSettings { min_batch_size: 1, max_read_ahead: 0, prefetch: 0 }
    }
}

impl StreamSettings {
    /// StreamJsonRpc's defaults: one item per `next`, no read-ahead, no prefetch.
    pub fn new() -> Self {
        Self::default()
    }
    /// Set the minimum batch size (a value of 0 is taken as 1).
    pub fn min_batch_size(mut self, n: usize) -> Self {
        self.min_batch_size = n.max(1);
        self
    }
    /// Set the read-ahead.
    pub fn max_read_ahead(mut self, n: usize) -> Self {
        self.max_read_ahead = n;
        self
    }
    /// Set the prefetch.
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = n;
        self
    }
}

/// How the enumerator protocol's two methods are spelled (StreamJsonRpc's names by default).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnumeratorProtocol {
    /// The request that pulls the next batch (`$/enumerator/next`).
    pub next: Cow<'static, str>,
    /// The notification that ends a sequence early (`$/enumerator/abort`).
    pub abort: Cow<'static, str>,
}

impl EnumeratorProtocol {
    /// The enumerator protocol under other names: `next` pulls a batch, `abort` ends a
    /// sequence early.
    pub fn new(next: impl Into<Cow<'static, str>>, abort: impl Into<Cow<'static, str>>) -> Self {
        EnumeratorProtocol { next: next.into(), abort: abort.into() }
    }
    /// StreamJsonRpc's names: `$/enumerator/next` and `$/enumerator/abort`.
    pub fn stream_json_rpc() -> Self {
        EnumeratorProtocol {
            next: jsonrpc_duplex_names::enumerator::NEXT.into(),
            abort: jsonrpc_duplex_names::enumerator::ABORT.into(),
        }
    }
}

impl Default for EnumeratorProtocol {
    fn default() -> Self {
        Self::stream_json_rpc()
    }
}

/// The token in `[token]` or `{"token": token}` params, when it is one this side could have issued.
pub(crate) fn token_param(params: Option<&RawValue>) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Named {
        token: u64,
    }
    let text = params?.get();
    if text.trim_start().starts_with('[') {
        let (token,): (u64,) = serde_json::from_str(text).ok()?;
        return Some(token);
    }
    serde_json::from_str::<Named>(text).ok().map(|n| n.token)
}
