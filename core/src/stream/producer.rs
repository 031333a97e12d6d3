//! The generator side of one stream: its source, pulled only as fast as `$/enumerator/next`
//! asks (plus the configured read-ahead), and the built-in handler of `next`.
//!
//! Items are serialized the moment they are produced, straight into the JSON text of the
//! `values` array that will carry them; nothing is kept as a `serde_json::Value`.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use serde::Serialize;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use super::{StreamSettings, Streams};
use crate::connection::trace::Tracer;
use crate::handler::{Request, Responder};
use crate::message::ErrorObject;

/// A stream whose items are appended to a JSON buffer as they come.
pub(crate) trait ItemSource: Send + 'static {
    /// `Ready(Some(Ok(())))`: one item was appended to `out` (and nothing else);
    /// `Ready(Some(Err(e)))`: the stream failed (nothing appended); `Ready(None)`: it ended.
    fn poll_append(&mut self, cx: &mut Context<'_>, out: &mut Vec<u8>) -> Poll<Option<Result<(), ErrorObject>>>;
}

/// Any `Stream` of `Result<T, E>`: `T` is serialized, `E` becomes the error object.
pub(crate) struct Items<S>(pub(crate) Pin<Box<S>>);

impl<S, T, E> ItemSource for Items<S>
where
    S: Stream<Item = Result<T, E>> + Send + 'static,
    T: Serialize,
    E: Into<ErrorObject>,
{
    fn poll_append(&mut self, cx: &mut Context<'_>, out: &mut Vec<u8>) -> Poll<Option<Result<(), ErrorObject>>> {
        match self.0.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(Some(Ok(item))) => {
                let mark = out.len();
                match serde_json::to_writer(&mut *out, &item) {
                    Ok(()) => Poll::Ready(Some(Ok(()))),
                    Err(e) => {
                        out.truncate(mark);
                        let e = ErrorObject::internal_error(format!("a stream item could not be serialized: {e}"));
                        Poll::Ready(Some(Err(e)))
                    }
                }
            }
        }
    }
}

/// How a stream ended.
#[derive(Debug)]
pub(crate) enum End {
    /// Every item has been handed out (including those of the batch that says so).
    Finished,
    /// The source failed; the items before the failure have been handed out.
    Failed(ErrorObject),
}

/// What one pull produced: `count` items appended, and the end if it was reached.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) count: usize,
    pub(crate) end: Option<End>,
}

/// The stream was disposed (aborted, ended with its call, or the connection closed).
#[derive(Debug)]
pub(crate) struct Gone;

pub(crate) struct Producer {
    pub(crate) token: u64,
    min_batch: usize,
    disposed: CancellationToken,
    /// Held by the one pull in progress: the protocol allows one `next` at a time per token.
    source: tokio::sync::Mutex<Source>,
}

enum Source {
    /// Pulled by the `next` handler itself (no read-ahead): nothing is produced unasked.
    Direct {
        items: Option<Box<dyn ItemSource>>,
        /// A failure after some items of a batch: the items go first, the error with the next pull.
        failed: Option<ErrorObject>,
    },
    /// Filled by a task up to the read-ahead; the task starts when a runtime is at hand.
    Ahead { ahead: Arc<Ahead>, idle: Option<Box<dyn ItemSource>> },
    /// Disposed: the source has been dropped.
    Gone,
}

/// The read-ahead buffer between the feeding task and the `next` handler.
struct Ahead {
    state: std::sync::Mutex<AheadState>,
    /// An item or the end was added.
    filled: Notify,
    /// One permit per item that may be produced before it is asked for.
    room: Semaphore,
}

#[derive(Default)]
struct AheadState {
    /// Each item's JSON text.
    items: VecDeque<Vec<u8>>,
    end: Option<End>,
}

impl Ahead {
    fn lock(&self) -> std::sync::MutexGuard<'_, AheadState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Producer {
    pub(crate) fn new(token: u64, items: Box<dyn ItemSource>, settings: StreamSettings) -> Arc<Self> {
        let source = if settings.max_read_ahead == 0 {
            Source::Direct { items: Some(items), failed: None }
        } else {
            let ahead = Arc::new(Ahead {
                state: std::sync::Mutex::default(),
                filled: Notify::new(),
                room: Semaphore::new(settings.max_read_ahead.min(Semaphore::MAX_PERMITS)),
            });
            Source::Ahead { ahead, idle: Some(items) }
        };
        let producer = Arc::new(Producer {
            token,
            min_batch: settings.min_batch_size.max(1),
            disposed: CancellationToken::new(),
            source: tokio::sync::Mutex::new(source),
        });
        if tokio::runtime::Handle::try_current().is_ok()
            && let Ok(mut source) = producer.source.try_lock()
        {
            producer.start_feeding(&mut source);
        }
        producer
    }

    /// Start the read-ahead task, if this stream has one that is not running yet.
    fn start_feeding(&self, source: &mut Source) {
        if let Source::Ahead { ahead, idle } = source
            && let Some(items) = idle.take()
        {
            tokio::spawn(feed(ahead.clone(), items, self.disposed.clone()));
        }
    }

    pub(crate) fn dispose(&self) {
        self.disposed.cancel();
        // Drop the source now unless a pull holds it (that pull drops it when it sees the disposal).
        if let Ok(mut source) = self.source.try_lock() {
            *source = Source::Gone;
        }
    }

    /// Pull at least `min` items (fewer only when the stream ends or fails first) into `out`,
    /// comma-separated. With read-ahead, everything buffered when the pull starts is taken too
    /// (StreamJsonRpc: "at most what was cached at entry"), so a batch holds at most
    /// `max(min, max_read_ahead)` items.
    pub(crate) async fn pull(&self, min: usize, out: &mut Vec<u8>) -> Result<Batch, Gone> {
        let mut source = tokio::select! {
            biased;
            _ = self.disposed.cancelled() => return Err(Gone),
            source = self.source.lock() => source,
        };
        let pulled = tokio::select! {
            biased;
            _ = self.disposed.cancelled() => Err(Gone),
            pulled = pull_from(&mut source, min, out, self) => pulled,
        };
        if pulled.is_err() {
            *source = Source::Gone;
        }
        pulled
    }
}

async fn pull_from(source: &mut Source, min: usize, out: &mut Vec<u8>, producer: &Producer) -> Result<Batch, Gone> {
    producer.start_feeding(source);
    match source {
        Source::Gone => Err(Gone),
        Source::Direct { items, failed } => {
            let mut count = 0;
            loop {
                if count >= min {
                    return Ok(Batch { count, end: None });
                }
                if let Some(e) = failed {
                    let end = (count == 0).then(|| End::Failed(e.clone()));
                    return Ok(Batch { count, end });
                }
                let Some(src) = items.as_mut() else {
                    return Ok(Batch { count, end: Some(End::Finished) });
                };
                let mark = out.len();
                if count > 0 {
                    out.push(b',');
                }
                match poll_fn(|cx| src.poll_append(cx, out)).await {
                    Some(Ok(())) => count += 1,
                    Some(Err(e)) => {
                        out.truncate(mark);
                        *items = None;
                        *failed = Some(e);
                    }
                    None => {
                        out.truncate(mark);
                        *items = None;
                    }
                }
            }
        }
        Source::Ahead { ahead, .. } => {
            let mut count = 0;
            let mut first = true;
            loop {
                // Created before the state is read: a `notify_one` in between leaves a permit.
                let filled = ahead.filled.notified();
                {
                    let mut state = ahead.lock();
                    let take = if first { state.items.len() } else { state.items.len().min(min - count) };
                    first = false;
                    for item in state.items.drain(..take) {
                        if count > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(&item);
                        count += 1;
                    }
                    ahead.room.add_permits(take);
                    let drained = state.items.is_empty();
                    match &state.end {
                        _ if !drained && count >= min => return Ok(Batch { count, end: None }),
                        Some(End::Finished) => return Ok(Batch { count, end: Some(End::Finished) }),
                        Some(End::Failed(e)) => {
                            let end = (count == 0).then(|| End::Failed(e.clone()));
                            return Ok(Batch { count, end });
                        }
                        None if count >= min => return Ok(Batch { count, end: None }),
                        None => {}
                    }
                }
                filled.await;
            }
        }
    }
}

/// The read-ahead task: produce while there is room, stop when disposed (dropping the source).
async fn feed(ahead: Arc<Ahead>, mut items: Box<dyn ItemSource>, disposed: CancellationToken) {
    let mut scratch = Vec::new();
    loop {
        let permit = tokio::select! {
            biased;
            _ = disposed.cancelled() => return,
            permit = ahead.room.acquire() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        // Given back by the `next` that takes the item.
        permit.forget();
        scratch.clear();
        let next = tokio::select! {
            biased;
            _ = disposed.cancelled() => return,
            next = poll_fn(|cx| items.poll_append(cx, &mut scratch)) => next,
        };
        let ended = {
            let mut state = ahead.lock();
            match next {
                Some(Ok(())) => {
                    state.items.push_back(std::mem::take(&mut scratch));
                    false
                }
                Some(Err(e)) => {
                    state.end = Some(End::Failed(e));
                    true
                }
                None => {
                    state.end = Some(End::Finished);
                    true
                }
            }
        };
        ahead.filled.notify_one();
        if ended {
            return;
        }
    }
}

/// Disposes the stream if the `next` handler is dropped before it answered: the peer cancelled
/// that `next` (StreamJsonRpc links a `next`'s cancellation to the whole sequence; the dispatcher
/// answers `-32800`), the handler panicked, or the connection closed.
struct DisposeOnDrop<'a> {
    streams: &'a Streams,
    token: u64,
    armed: bool,
}

impl Drop for DisposeOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            tracing::debug!(target: crate::LOG_TARGET, token = self.token, "a `next` was cancelled: the stream ends");
            self.streams.producers.dispose(self.token);
        }
    }
}

/// The built-in handler of `$/enumerator/next`: answer `{"values":[..],"finished":bool}`, or the
/// stream's error (then the stream is over), or `-32001` for a token that is not live.
pub(crate) fn serve_next(
    tracer: Tracer,
    streams: Arc<Streams>,
    request: Request,
    responder: Responder,
) -> BoxFuture<'static, ()> {
    let token = super::token_param(request.params());
    let producer = token.and_then(|t| streams.producers.get(t));
    Box::pin(async move {
        let (Some(token), Some(producer)) = (token, producer) else {
            tracing::debug!(
                target: crate::LOG_TARGET,
                params = %tracer.quote(crate::connection::trace::Json(request.params())),
                "`next` for a stream that is not live: -32001"
            );
            responder.err(ErrorObject::no_marshaled_object());
            return;
        };
        let mut guard = DisposeOnDrop { streams: &streams, token, armed: true };
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"{\"values\":[");
        let pulled = producer.pull(producer.min_batch, &mut out).await;
        guard.armed = false;
        match pulled {
            Err(Gone) => {
                responder.err(ErrorObject::no_marshaled_object());
            }
            Ok(Batch { end: Some(End::Failed(error)), .. }) => {
                // Errors are fatal to a sequence: later `next`s get -32001.
                streams.producers.dispose(token);
                responder.err(error);
            }
            Ok(Batch { end: Some(End::Finished), .. }) => {
                streams.producers.dispose(token);
                out.extend_from_slice(b"],\"finished\":true}");
                responder.ok_json(&out);
            }
            Ok(Batch { count, end: None }) => {
                // Never an empty batch that is not the last one (StreamJsonRpc consumers refuse it).
                debug_assert!(count > 0);
                out.extend_from_slice(b"],\"finished\":false}");
                responder.ok_json(&out);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn source<I: IntoIterator<Item = Result<i32, ErrorObject>>>(items: I) -> Box<dyn ItemSource>
    where
        I::IntoIter: Send + 'static,
    {
        Box::new(Items(Box::pin(futures::stream::iter(items))))
    }

    async fn pull_text(p: &Producer, min: usize) -> (String, Option<End>) {
        let mut out = Vec::new();
        let batch = p.pull(min, &mut out).await.expect("live");
        (String::from_utf8(out).unwrap(), batch.end)
    }

    #[tokio::test]
    async fn direct_pulls_exactly_the_batch_and_reports_the_end_separately() {
        let p = Producer::new(1, source((1..=3).map(Ok)), StreamSettings::new().min_batch_size(2));
        assert!(matches!(pull_text(&p, 2).await, (s, None) if s == "1,2"));
        assert!(matches!(pull_text(&p, 2).await, (s, Some(End::Finished)) if s == "3"));
    }

    #[tokio::test]
    async fn an_error_after_items_comes_with_the_next_pull() {
        let items = vec![Ok(1), Err(ErrorObject::new(-1, "boom")), Ok(3)];
        let p = Producer::new(1, source(items), StreamSettings::new().min_batch_size(5));
        assert!(matches!(pull_text(&p, 5).await, (s, None) if s == "1"));
        assert!(matches!(pull_text(&p, 5).await, (s, Some(End::Failed(e))) if s.is_empty() && e.code == -1));
    }

    #[tokio::test]
    async fn read_ahead_fills_up_to_the_limit_and_no_further() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let counted = futures::stream::iter(0..1000).map(move |i| {
            let _ = tx.send(i);
            Ok::<_, ErrorObject>(i)
        });
        let p = Producer::new(1, Box::new(Items(Box::pin(counted))), StreamSettings::new().max_read_ahead(10));
        let mut rx = rx;
        for _ in 0..10 {
            rx.recv().await.unwrap();
        }
        tokio::task::yield_now().await;
        assert!(rx.try_recv().is_err(), "produced past the read-ahead");
        let (text, end) = pull_text(&p, 1).await;
        assert!(end.is_none());
        assert_eq!(text, "0,1,2,3,4,5,6,7,8,9");
        p.dispose();
    }
}
