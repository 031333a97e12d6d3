//! The drain gate: counts the request handlers running on every connection of a server, and
//! once the server drains, answers new requests with an error instead of starting them. A
//! feature of the server's connections: it wraps each connection's router through the seam
//! ([`Extension::router`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::task::TaskTracker;

use crate::connection::{Extension, Feature, Start};
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
    /// The last router wrapped and what it became: a server's connections usually serve one
    /// table, wrapped once and shared by all of them instead of copied per connection.
    wrapped: std::sync::Mutex<Option<(Router, Router)>>,
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

    /// Apply this gate to every request handler of `router`.
    fn wrap(self: &Arc<Self>, router: Router) -> Router {
        let mut wrapped = self.wrapped.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((given, made)) = wrapped.as_ref()
            && given.same_as(&router)
        {
            return made.clone();
        }
        let made = self.wrap_each(router.clone());
        *wrapped = Some((router, made.clone()));
        made
    }

    fn wrap_each(self: &Arc<Self>, router: Router) -> Router {
        let gate = self.clone();
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
    }
}

/// The gate as a feature of each connection a server starts (one gate for all of them).
#[derive(Clone)]
pub(crate) struct DrainGate(pub(crate) Arc<Gate>);

impl Feature for DrainGate {
    fn start(&self, _: &Start<'_>) -> Arc<dyn Extension> {
        Arc::new(self.clone())
    }
}

impl Extension for DrainGate {
    fn router(&self, router: Router) -> Router {
        self.0.wrap(router)
    }

    /// It takes no method of its own.
    fn shadows(&self) -> Option<&'static str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ErrorObject;

    fn router() -> Router {
        Router::new().method("add", |p: (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(p.0 + p.1) })
    }

    #[test]
    fn connections_serving_one_table_share_its_wrapped_copy() {
        let gate = Arc::new(Gate::default());
        let template = router();
        let first = gate.wrap(template.clone());
        let second = gate.wrap(template.clone());
        assert!(first.same_as(&second), "the second connection got a copy of its own");
        assert!(!first.same_as(&template), "the table was not wrapped");
        // A router made for one connection (a `serve_with` factory) is wrapped on its own.
        let other = gate.wrap(router());
        assert!(!other.same_as(&first));
        assert!(other.contains("add"));
    }
}
