//! A `'static` stream made from an `async` block that yields.
//!
//! A streaming trait method may return a stream that borrows the service
//! (`fn search(&self, q: String) -> impl Stream<Item = T> + Send`, which in edition 2024 captures
//! `&self`), but the connection keeps a stream until the consumer is done with it, long after the
//! call. The generated server therefore runs the method inside an `async` block that owns the
//! service's `Arc` (an `async` block may borrow from itself) and forwards the stream's items out of
//! it one at a time, as they are pulled: nothing is produced ahead of demand, and no task or
//! channel is involved (the way the `async-stream` crate works, in safe code).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};

/// The stream side: polling it runs the block until it yields an item or ends.
pub struct Generator<T> {
    slot: Arc<Mutex<Option<T>>>,
    body: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

/// The block's side: hands items out.
pub struct Yielder<T> {
    slot: Arc<Mutex<Option<T>>>,
}

/// A stream of what `body` yields through its [`Yielder`].
pub fn generate<T, F, Fut>(body: F) -> Generator<T>
where
    T: Send + 'static,
    F: FnOnce(Yielder<T>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let slot = Arc::new(Mutex::new(None));
    let body = body(Yielder { slot: slot.clone() });
    Generator { slot, body: Some(Box::pin(body)) }
}

impl<T> Yielder<T> {
    /// Hand `item` to the stream's consumer; resumes when the next item is asked for.
    pub fn put(&self, item: T) -> impl Future<Output = ()> + Send + '_ {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(item);
        YieldOnce(false)
    }

    /// Hand out every item of `stream`, one per pull.
    pub async fn forward<S: Stream<Item = T>>(&self, stream: S) {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            self.put(item).await;
        }
    }
}

/// Pending once (the generator returns the item instead of waiting), then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) { Poll::Ready(()) } else { Poll::Pending }
    }
}

impl<T> Unpin for Generator<T> {}

impl<T> Stream for Generator<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        let Some(body) = this.body.as_mut() else { return Poll::Ready(None) };
        let finished = body.as_mut().poll(cx).is_ready();
        if finished {
            this.body = None;
        }
        match this.slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(item) => Poll::Ready(Some(item)),
            None if finished => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}

/// What the block of a streaming method yields: first whether the method started its stream (or
/// failed before), then the items.
pub enum Begin<I, E> {
    /// The method returned its stream.
    Started,
    /// The method failed instead (a `Result<impl Stream, E>` that is an `Err`).
    Failed(E),
    /// An item of the stream.
    Item(I),
}

impl<I, E> Yielder<Begin<I, E>> {
    /// The method returned `stream`: say so, then hand out its items.
    pub async fn start<S: Stream<Item = I>>(&self, stream: S) {
        self.put(Begin::Started).await;
        self.forward(stream.map(Begin::Item)).await;
    }

    /// The method failed before it had a stream.
    pub async fn fail(&self, error: E) {
        self.put(Begin::Failed(error)).await;
    }
}

impl<I, E> Generator<Begin<I, E>> {
    /// The items, once the method has started its stream (anything else the block yields is
    /// skipped: after `Started` it yields only items).
    pub fn into_items(self) -> Items<I, E> {
        Items(self)
    }
}

/// [`Generator::into_items`]: the items of a started streaming method.
pub struct Items<I, E>(Generator<Begin<I, E>>);

impl<I, E> Stream for Items<I, E> {
    type Item = I;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<I>> {
        let body = &mut self.get_mut().0;
        loop {
            match Pin::new(&mut *body).poll_next(cx) {
                Poll::Ready(Some(Begin::Item(item))) => return Poll::Ready(Some(item)),
                Poll::Ready(Some(Begin::Started | Begin::Failed(_))) => {}
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Service {
        words: Vec<String>,
    }

    impl Service {
        fn words(&self) -> impl Stream<Item = &str> + Send {
            futures::stream::iter(self.words.iter().map(String::as_str))
        }
    }

    #[tokio::test]
    async fn a_stream_that_borrows_its_owner_becomes_static_and_lazy() {
        let service = Arc::new(Service { words: vec!["a".into(), "b".into()] });
        let pulled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = pulled.clone();
        let mut stream = generate(move |y| async move {
            let words = service.words().map(|w| {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                w.to_owned()
            });
            y.forward(words).await;
        });
        assert_eq!(pulled.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing runs before the first pull");
        assert_eq!(stream.next().await.as_deref(), Some("a"));
        assert_eq!(pulled.load(std::sync::atomic::Ordering::SeqCst), 1, "one item per pull");
        assert_eq!(stream.next().await.as_deref(), Some("b"));
        assert_eq!(stream.next().await, None);
        assert_eq!(stream.next().await, None);
    }
}
