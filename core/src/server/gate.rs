//! The drain gate: counts the request handlers running on every connection of a server, and
//! once the server drains, answers new requests with an error instead of starting them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::task::TaskTracker;

use crate::connection::RouterLayer;
use crate::handler::{BoxFuture, RequestFn, Router};
use crate::message::{ErrorObject, codes};

/// What a request that arrives while the server shuts down is answered.
pub(crate) fn shutting_down() -> ErrorObject {
    ErrorObject::new(codes::SERVER_ERROR, "the server is shutting down")
}

#[derive(Default)]
pub(crate) struct Gate {
    draining: AtomicBool,
    /// One token per running request handler.
    in_flight: TaskTracker,
}

impl Gate {
    /// Refuse new requests from now on.
    pub(crate) fn drain(&self) {
        self.draining.store(true, Ordering::Release);
        self.in_flight.close();
    }

    /// Resolves once no request handler runs any more (after [`Gate::drain`]).
    pub(crate) async fn idle(&self) {
        self.in_flight.wait().await;
    }

    /// Request handlers running now.
    pub(crate) fn running(&self) -> usize {
        self.in_flight.len()
    }

    /// The router layer that applies this gate to every request handler of a connection.
    pub(crate) fn layer(self: &Arc<Self>) -> RouterLayer {
        let gate = self.clone();
        Arc::new(move |router: Router| {
            let gate = gate.clone();
            router.map_requests(move |handler: RequestFn| -> RequestFn {
                let gate = gate.clone();
                Arc::new(move |request, responder| -> BoxFuture {
                    if gate.draining.load(Ordering::Acquire) {
                        responder.err(shutting_down());
                        return Box::pin(async {});
                    }
                    let token = gate.in_flight.token();
                    let running = handler(request, responder);
                    Box::pin(async move {
                        running.await;
                        drop(token);
                    })
                })
            })
        })
    }
}
