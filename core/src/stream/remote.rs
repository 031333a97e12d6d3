//! The consumer side: a stream the peer generates, pulled with `$/enumerator/next`.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::connection::{CallOptions, EncodedCall, Error, Handle};
use crate::message::bind::UNBOUND;
use crate::message::encode_notification;

/// StreamJsonRpc's enumerable object as received: `{"token"?, "values"?}`, both kept as raw JSON.
///
/// `token` (any JSON but `null`) is present when more items may follow the `values`; without it,
/// `values` is the whole sequence (absent: empty). Decode a result or param into it, then hand it
/// to [`Handle::open_stream`] to pull the items.
#[derive(Debug, Deserialize, Serialize)]
pub struct Enumerable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    values: Option<Box<RawValue>>,
}

impl Enumerable {
    /// The token the generator knows the sequence by (echoed verbatim in `next` and `abort`).
    pub fn token(&self) -> Option<&RawValue> {
        self.token.as_deref()
    }
    /// The prefetched items, as a raw JSON array.
    pub fn values(&self) -> Option<&RawValue> {
        self.values.as_deref()
    }
}

/// The answer to `$/enumerator/next`, decoded straight into the item type.
#[derive(Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct NextResult<T> {
    values: VecDeque<T>,
    #[serde(default)]
    finished: bool,
}

type Call = BoxFuture<'static, Result<Box<RawValue>, Error>>;

enum State {
    /// A call whose result is a stream, encoded but not sent yet (streams are lazy).
    Unsent(EncodedCall),
    /// That call, waiting for its result.
    Calling(Call),
    /// More items may exist; none is being fetched.
    Idle(Box<RawValue>),
    /// A `next` is in flight.
    Fetching(Box<RawValue>, Call),
    /// Yield this error, then end.
    Failed(Error),
    Done,
}

/// A stream the peer generates, pulled one batch at a time with `$/enumerator/next` as it is
/// polled (so a slow consumer keeps the generator paused).
///
/// Items are decoded straight into `T`. The stream ends after the generator's last item; an error
/// (the generator's, a cancellation, a lost connection, an item that does not decode) is yielded
/// as one `Err` item, and then the stream ends. Dropping it early sends `$/enumerator/abort`, and
/// cancels a `next` in flight. The [`CallOptions`] it was opened with apply to every `next`: a
/// timeout each, and a cancellation token that ends the sequence ([`Error::Cancelled`]).
///
/// Made by [`Handle::open_stream`] (from an [`Enumerable`] received in a result or params) or
/// [`Handle::request_stream`] (a call whose result is a stream); see
/// [`OfferedStream`](super::OfferedStream) for a full example.
#[must_use = "streams do nothing unless polled"]
pub struct RemoteStream<T> {
    handle: Handle,
    options: CallOptions,
    buffered: VecDeque<T>,
    state: State,
    _items: PhantomData<fn() -> T>,
}

// `T` is never pinned: the items are moved in and out of a queue.
impl<T> Unpin for RemoteStream<T> {}

impl<T> fmt::Debug for RemoteStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Unsent(call) => format!("unsent call {}", call.id),
            State::Calling(_) => "calling".to_owned(),
            State::Idle(t) => format!("idle (token {})", t.get()),
            State::Fetching(t, _) => format!("fetching (token {})", t.get()),
            State::Failed(e) => format!("failed: {e}"),
            State::Done => "done".to_owned(),
        };
        f.debug_struct("RemoteStream").field("buffered", &self.buffered.len()).field("state", &state).finish()
    }
}

impl Handle {
    /// Pull the stream behind an enumerable object the peer sent (see [`RemoteStream`]).
    pub fn open_stream<T: DeserializeOwned>(&self, enumerable: Enumerable) -> RemoteStream<T> {
        self.open_stream_with(enumerable, CallOptions::default())
    }

    /// [`Handle::open_stream`] with a timeout for each `next` and a cancellation token.
    pub fn open_stream_with<T: DeserializeOwned>(
        &self,
        enumerable: Enumerable,
        options: CallOptions,
    ) -> RemoteStream<T> {
        let mut stream = RemoteStream::new(self.clone(), options, State::Done);
        stream.start(enumerable);
        stream
    }

    /// Call `method`, whose result is a stream, and pull its items. Nothing is sent until the
    /// stream is first polled; the call's error, if any, is its one `Err` item. `options` apply to
    /// the call and to every `next`.
    ///
    /// The params are encoded now, so streams offered in them
    /// ([`OfferedStream`](super::OfferedStream)) are bound to this call.
    pub fn request_stream<T: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
        options: CallOptions,
    ) -> RemoteStream<T> {
        let state = match self.encode_call(method, &params) {
            Ok(call) => State::Unsent(call),
            Err(e) => State::Failed(e),
        };
        RemoteStream::new(self.clone(), options, state)
    }
}

impl<T: DeserializeOwned> RemoteStream<T> {
    fn new(handle: Handle, options: CallOptions, state: State) -> Self {
        RemoteStream { handle, options, buffered: VecDeque::new(), state, _items: PhantomData }
    }

    /// Take the items and the token of an enumerable object.
    fn start(&mut self, enumerable: Enumerable) {
        if let Some(values) = &enumerable.values {
            match serde_json::from_str::<Option<VecDeque<T>>>(values.get()) {
                Ok(items) => self.buffered = items.unwrap_or_default(),
                Err(e) => {
                    if let Some(token) = &enumerable.token {
                        self.send_abort(token);
                    }
                    self.state = State::Failed(Error::Deserialize(e));
                    return;
                }
            }
        }
        self.state = match enumerable.token {
            Some(token) => State::Idle(token),
            None => State::Done,
        };
    }

    fn next_call(&self, token: &RawValue) -> Call {
        let handle = self.handle.clone();
        let options = self.options.clone();
        let token = token.to_owned();
        Box::pin(async move {
            let method = handle.builtin::<super::Streams>().protocol.next.clone();
            handle.request_raw(&method, &(&*token,), options).await
        })
    }

    fn send_abort(&self, token: &RawValue) {
        abort(&self.handle, token);
    }

    /// Whether the stream has ended (its last item, or its error, has been yielded).
    pub fn is_terminated(&self) -> bool {
        self.buffered.is_empty() && matches!(self.state, State::Done)
    }
}

impl<T: DeserializeOwned> Stream for RemoteStream<T> {
    type Item = Result<T, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.buffered.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
            match std::mem::replace(&mut this.state, State::Done) {
                State::Done => return Poll::Ready(None),
                State::Failed(e) => return Poll::Ready(Some(Err(e))),
                State::Unsent(call) => {
                    let handle = this.handle.clone();
                    let options = this.options.clone();
                    this.state = State::Calling(Box::pin(async move { handle.send_call(call, &options).await }));
                }
                State::Calling(mut call) => match call.as_mut().poll(cx) {
                    Poll::Pending => {
                        this.state = State::Calling(call);
                        return Poll::Pending;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                    Poll::Ready(Ok(raw)) => match serde_json::from_str::<Enumerable>(raw.get()) {
                        Ok(enumerable) => this.start(enumerable),
                        Err(e) => return Poll::Ready(Some(Err(Error::Deserialize(e)))),
                    },
                },
                State::Idle(token) => {
                    if this.options.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                        this.send_abort(&token);
                        return Poll::Ready(Some(Err(Error::Cancelled)));
                    }
                    let call = this.next_call(&token);
                    this.state = State::Fetching(token, call);
                }
                State::Fetching(token, mut call) => match call.as_mut().poll(cx) {
                    Poll::Pending => {
                        this.state = State::Fetching(token, call);
                        return Poll::Pending;
                    }
                    // The generator has disposed the sequence (its error, a cancelled `next`), or
                    // the connection is gone: nothing to abort.
                    Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                    Poll::Ready(Ok(raw)) => match serde_json::from_str::<NextResult<T>>(raw.get()) {
                        Ok(NextResult { values, finished }) => {
                            if values.is_empty() && !finished {
                                this.send_abort(&token);
                                return Poll::Ready(Some(Err(Error::Protocol(
                                    "the generator answered `next` with no values without finishing".into(),
                                ))));
                            }
                            this.buffered = values;
                            if !finished {
                                this.state = State::Idle(token);
                            }
                        }
                        Err(e) => {
                            this.send_abort(&token);
                            return Poll::Ready(Some(Err(Error::Deserialize(e))));
                        }
                    },
                },
            }
        }
    }
}

impl<T> Drop for RemoteStream<T> {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, State::Done) {
            // Never sent: the streams in its params end now.
            State::Unsent(call) => self.handle.release_call(call.id),
            State::Idle(token) => abort(&self.handle, &token),
            State::Fetching(token, call) => {
                // Dropping the `next` sends its cancellation first.
                drop(call);
                abort(&self.handle, &token);
            }
            State::Calling(_) | State::Failed(_) | State::Done => {}
        }
    }
}

fn abort(handle: &Handle, token: &RawValue) {
    let mut buf = crate::util::bufpool::take(64);
    let method = &handle.builtin::<super::Streams>().protocol.abort;
    if encode_notification(&mut buf, method, &(token,), UNBOUND).is_ok() {
        tracing::debug!(target: crate::LOG_TARGET, token = token.get(), "stream abandoned early: abort sent");
        // Sent from `Drop`: left to the writer task.
        handle.send_later(buf);
    }
}
