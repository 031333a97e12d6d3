//! The dispatcher: one ordered lane for inbound requests and notifications.
//!
//! Messages are taken in arrival order. A notification's handler runs to completion before the
//! next message is taken (LSP's `didChange` is applied before the `hover` after it). A request's
//! handler is polled once on the lane — so its synchronous start happens in order — and then runs
//! as its own task, concurrently with later messages, up to the in-flight limit.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Handle;
use super::settle::on_lane;
use super::shared::{InboundCall, Shared};
use crate::handler::{Batch, Notification, ReplySlot, Request, Responder, Route, Router, supervised};
use crate::message::{ErrorObject, Id};

pub(crate) enum Inbound {
    Request { id: Id, method: String, params: Option<Box<RawValue>>, call: Arc<InboundCall>, batch: Option<Arc<Batch>> },
    Notification { method: String, params: Option<Box<RawValue>> },
}

pub(crate) struct Dispatcher {
    pub(crate) shared: Arc<Shared>,
    pub(crate) router: Router,
    pub(crate) handle: Handle,
    pub(crate) tracker: TaskTracker,
}

type HandlerFuture = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

impl Dispatcher {
    pub(crate) async fn run(self, mut rx: mpsc::UnboundedReceiver<Inbound>) {
        let permits = Arc::new(Semaphore::new(self.shared.config.limits.max_concurrent_requests.max(1)));
        // Not `shutdown`: after the peer's EOF the messages already read are still dispatched
        // (the queue then ends when the reader drops its sender).
        let shutdown = self.shared.handlers.clone();
        let read_ahead = self.shared.config.limits.read_ahead.max(1);
        let mut taken = 0u64;
        // One cancellation future for the whole loop (a new one per message costs a registration).
        let stopped = shutdown.cancelled();
        tokio::pin!(stopped);
        loop {
            // Everything taken so far is handled: notifications ran to completion, requests started.
            self.shared.settle.set_handled(taken);
            let item = tokio::select! {
                biased;
                _ = &mut stopped => break,
                item = rx.recv() => match item {
                    Some(item) => item,
                    None => break,
                },
            };
            if self.shared.queued.fetch_sub(1, Ordering::AcqRel) >= read_ahead {
                self.shared.space.notify_one();
            }
            taken += 1;
            match item {
                Inbound::Notification { method, params } => {
                    if !self.notification(method, params).await {
                        break;
                    }
                }
                Inbound::Request { id, method, params, call, batch } => {
                    // A request counts as handled once taken: a call awaiting the lane must not
                    // wait for a concurrency slot that its own caller may be holding.
                    self.shared.settle.set_handled(taken);
                    let slot = ReplySlot::new(self.shared.clone(), id.clone(), Some(call.clone()), batch, false);
                    if call.cancel.is_cancelled() {
                        slot.answer_unanswered(&call.cancel, "cancelled before it started");
                        continue;
                    }
                    // Answers the peer has not read yet hold back new work.
                    tokio::select! {
                        biased;
                        _ = shutdown.cancelled() => {
                            slot.answer_unanswered(&call.cancel, "the connection closed before the request started");
                            break;
                        }
                        _ = self.shared.outbound.wait_room() => {}
                    }
                    let permit = tokio::select! {
                        biased;
                        _ = shutdown.cancelled() => {
                            slot.answer_unanswered(&call.cancel, "the connection closed before the request started");
                            break;
                        }
                        permit = permits.clone().acquire_owned() => match permit {
                            Ok(p) => p,
                            Err(_) => break,
                        },
                    };
                    let responder = Responder::new(slot.clone(), call.cancel.clone());
                    let request =
                        Request { id, method, params, cancel: call.cancel.clone(), peer: self.handle.clone() };
                    // The handler's synchronous part (the closure that builds its future) may
                    // panic too; it must not take the dispatcher down with it.
                    let started = supervised(Some(&slot), || {
                        std::panic::catch_unwind(AssertUnwindSafe(|| self.request_future(request, responder)))
                    });
                    let handler = match started {
                        Ok(Some(handler)) => handler,
                        Ok(None) => continue,
                        Err(payload) => {
                            answer_panic(&slot, &payload);
                            continue;
                        }
                    };
                    let cancel = call.cancel.clone();
                    let mut task = Box::pin(async move {
                        let end =
                            supervise(handler, Some(&slot), false, &cancel, |payload| answer_panic(&slot, &payload))
                                .await;
                        // A handler that finished may have handed its responder to another task:
                        // only a cancelled one is answered here.
                        if end == End::Cancelled {
                            slot.answer_unanswered(&cancel, "cancelled");
                        }
                        drop(permit);
                    });
                    let first = std::future::poll_fn(|cx| Poll::Ready(on_lane(|| task.as_mut().poll(cx)))).await;
                    if first.is_pending() {
                        self.tracker.spawn(task);
                    }
                }
            }
        }
        // The connection is closing: answer what never started.
        rx.close();
        while let Ok(item) = rx.try_recv() {
            if let Inbound::Request { id, call, batch, .. } = item {
                let slot = ReplySlot::new(self.shared.clone(), id, Some(call.clone()), batch, false);
                slot.answer_unanswered(&call.cancel, "the connection closed before the request started");
            }
        }
    }

    /// The handler future for a request, or `None` when it was answered on the spot.
    fn request_future(&self, request: Request, responder: Responder) -> Option<HandlerFuture> {
        // The enumerator protocol is the connection's own, whatever the router serves.
        if request.method == self.shared.config.enumerator.next {
            return Some(crate::stream::serve_next(self.shared.clone(), request, responder));
        }
        match self.router.route(&request.method) {
            Some(Route::Request(f)) => Some(f(request, responder)),
            // A request for a notification handler: run it and answer `null` (StreamJsonRpc does the same).
            Some(Route::Notification(f)) => {
                let fut = f(Notification { method: request.method, params: request.params, peer: request.peer });
                Some(Box::pin(async move {
                    fut.await;
                    responder.ok(());
                }))
            }
            None => match self.router.fallback_handler() {
                Some(f) => Some(f(request, responder)),
                None => {
                    tracing::debug!(target: crate::LOG_TARGET, method = %request.method, id = %request.id, "unknown method answered -32601");
                    responder.err(ErrorObject::method_not_found(&request.method));
                    None
                }
            },
        }
    }

    /// Run a notification handler to completion; `false` if the connection closed meanwhile.
    async fn notification(&self, method: String, params: Option<Box<RawValue>>) -> bool {
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| self.notification_future(&method, params)));
        let fut = match started {
            Ok(Some(fut)) => fut,
            Ok(None) => return true,
            Err(payload) => {
                tracing::error!(target: crate::LOG_TARGET, %method, panic = panic_message(&payload), "notification handler panicked");
                return true;
            }
        };
        let shutdown = self.shared.handlers.clone();
        let end = supervise(fut, None, true, &shutdown, |payload| {
            tracing::error!(target: crate::LOG_TARGET, %method, panic = panic_message(&payload), "notification handler panicked");
        })
        .await;
        end != End::Cancelled
    }

    /// The handler future for a notification, or `None` when nobody handles it.
    fn notification_future(&self, method: &str, params: Option<Box<RawValue>>) -> Option<HandlerFuture> {
        let fut: HandlerFuture = match self.router.route(method) {
            Some(Route::Notification(f)) => {
                f(Notification { method: method.to_owned(), params, peer: self.handle.clone() })
            }
            // A notification for a request handler: run it and discard the answer.
            Some(Route::Request(f)) => {
                let slot = ReplySlot::new(self.shared.clone(), Id::Null, None, None, true);
                let cancel = self.shared.handlers.child_token();
                let request = Request {
                    id: Id::Null,
                    method: method.to_owned(),
                    params,
                    cancel: cancel.clone(),
                    peer: self.handle.clone(),
                };
                f(request, Responder::new(slot, cancel))
            }
            None => {
                if method.starts_with("$/") {
                    tracing::trace!(target: crate::LOG_TARGET, %method, "unhandled $/ notification ignored");
                } else {
                    tracing::debug!(target: crate::LOG_TARGET, %method, "unhandled notification dropped");
                }
                return None;
            }
        };
        Some(fut)
    }
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    Finished,
    Panicked,
    Cancelled,
}

/// Drive a handler until it finishes, panics (reported through `on_panic`; the reply handle of
/// `slot`, dropped while the panic unwinds, leaves the answer to it) or `cancel` fires (then the
/// handler is dropped).
async fn supervise(
    fut: HandlerFuture,
    slot: Option<&Arc<ReplySlot>>,
    lane: bool,
    cancel: &CancellationToken,
    on_panic: impl FnOnce(Box<dyn Any + Send>),
) -> End {
    let mut fut = Some(fut);
    let mut on_panic = Some(on_panic);
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let end = std::future::poll_fn(|cx| {
        if let Some(f) = fut.as_mut() {
            let mut poll = || supervised(slot, || std::panic::catch_unwind(AssertUnwindSafe(|| f.as_mut().poll(cx))));
            let polled = if lane { on_lane(poll) } else { poll() };
            match polled {
                Ok(Poll::Ready(())) => return Poll::Ready(End::Finished),
                Ok(Poll::Pending) => {}
                Err(payload) => {
                    if let Some(report) = on_panic.take() {
                        report(payload);
                    }
                    return Poll::Ready(End::Panicked);
                }
            }
        }
        cancelled.as_mut().poll(cx).map(|()| End::Cancelled)
    })
    .await;
    drop(fut);
    end
}

/// Answer a request whose handler panicked with `-32603` and the panic message.
fn answer_panic(slot: &ReplySlot, payload: &Box<dyn Any + Send>) {
    let error = ErrorObject::internal_error(format!("the handler panicked: {}", panic_message(payload)));
    tracing::error!(target: crate::LOG_TARGET, %error, "request handler panicked");
    slot.answer::<()>(Err(&error));
}

fn panic_message(payload: &Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}
