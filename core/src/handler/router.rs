//! Method name → handler, and merging several services into one.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Notification, NotificationContext, NotificationStart, Request, RequestContext, RequestStart, Responder};
use crate::message::ErrorObject;

pub(crate) type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
/// A request handler, given the request as it starts (see [`RequestStart`]): a raw handler
/// makes its [`Request`] of it, a typed one decodes the params where they lie.
pub(crate) type RequestFn = Arc<dyn for<'a> Fn(RequestStart<'a>, Responder) -> BoxFuture + Send + Sync>;
/// A notification handler, given the notification as it starts (see [`NotificationStart`]).
pub(crate) type NotificationFn = Arc<dyn for<'a> Fn(NotificationStart<'a>) -> BoxFuture + Send + Sync>;

#[derive(Clone)]
pub(crate) enum Route {
    Request(RequestFn),
    Notification(NotificationFn),
}

/// Two services registered the same method name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("method {method:?} is registered twice")]
#[non_exhaustive]
pub struct MethodClash {
    /// The name both registered.
    pub method: String,
}

/// Maps method names to handlers. Unknown requests are answered `-32601`; unknown notifications
/// are dropped, the first of each name logged at WARN (a misspelt name shows). A fallback takes
/// either instead ([`Router::fallback`], [`Router::notification_fallback`]).
///
/// A request handler is started in arrival order and then runs concurrently with later messages;
/// a notification handler runs to completion before the next message is dispatched.
///
/// A handler's first poll (its code up to the first `.await` that waits) usually runs on the
/// connection's reader, right when the message is read. Like any async code it must not block
/// the thread: a handler that does (a long computation, a blocking lock or read) delays the
/// reading of everything behind it, answers to this side's own calls included. Move such work to
/// `tokio::task::spawn_blocking` or another task.
///
/// ```
/// use jsonrpc_duplex_core::{ErrorObject, Router};
///
/// #[derive(serde::Deserialize)]
/// struct Add { a: i64, b: i64 }
///
/// let router = Router::new()
///     .method("add", |p: Add, _ctx| async move { Ok::<_, ErrorObject>(p.a + p.b) })
///     .notification("log", |line: String, _ctx| async move { println!("{line}") });
/// assert!(router.contains("add") && router.contains("log"));
/// ```
#[derive(Clone, Default)]
#[must_use = "a router serves nothing until it is given to a connection"]
pub struct Router {
    /// Names are shared with the notification handlers running under them (for their logs).
    /// Shared between clones (a server's connections all serve one table); copied on the first
    /// change to a shared one.
    routes: Arc<HashMap<Arc<str>, Route, crate::util::hash::IdBuild>>,
    fallback: Option<RequestFn>,
    notification_fallback: Option<(Arc<str>, NotificationFn)>,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.routes.keys().collect();
        names.sort();
        f.debug_struct("Router")
            .field("methods", &names)
            .field("fallback", &self.fallback.is_some())
            .field("notification_fallback", &self.notification_fallback.is_some())
            .finish()
    }
}

impl Router {
    /// An empty router.
    pub fn new() -> Self {
        Router::default()
    }

    /// Whether a method is registered.
    pub fn contains(&self, method: &str) -> bool {
        self.routes.contains_key(method)
    }

    /// The registered method names.
    pub fn methods(&self) -> impl Iterator<Item = &str> {
        self.routes.keys().map(|name| &**name)
    }

    /// Whether `other` is a clone of this router (the same table and fallbacks, not only equal).
    pub(crate) fn same_as(&self, other: &Router) -> bool {
        fn same<T: ?Sized>(a: Option<&Arc<T>>, b: Option<&Arc<T>>) -> bool {
            match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
        }
        Arc::ptr_eq(&self.routes, &other.routes)
            && same(self.fallback.as_ref(), other.fallback.as_ref())
            && same(
                self.notification_fallback.as_ref().map(|(_, f)| f),
                other.notification_fallback.as_ref().map(|(_, f)| f),
            )
    }

    pub(crate) fn route(&self, method: &str) -> Option<&Route> {
        self.routes.get(method)
    }

    /// The route for `method`, with the registered name.
    pub(crate) fn route_named(&self, method: &str) -> Option<(&Arc<str>, &Route)> {
        self.routes.get_key_value(method)
    }

    pub(crate) fn fallback_handler(&self) -> Option<&RequestFn> {
        self.fallback.as_ref()
    }

    /// The notification fallback, with the name its logs go under.
    pub(crate) fn notification_fallback_handler(&self) -> Option<(&Arc<str>, &NotificationFn)> {
        self.notification_fallback.as_ref().map(|(name, f)| (name, f))
    }

    fn insert(mut self, method: &str, route: Route) -> Self {
        if let Err(clash) = self.try_insert(method, route) {
            panic!("{clash}: each method may be registered once per router");
        }
        self
    }

    fn try_insert(&mut self, method: &str, route: Route) -> Result<(), MethodClash> {
        match Arc::make_mut(&mut self.routes).entry(Arc::from(method)) {
            Entry::Occupied(_) => Err(MethodClash { method: method.to_owned() }),
            Entry::Vacant(v) => {
                v.insert(route);
                Ok(())
            }
        }
    }

    /// Register a raw request handler: it gets the request and its [`Responder`], and may answer
    /// later from any task.
    ///
    /// # Panics
    /// If `method` is already registered (use [`Router::try_merge`] to combine routers fallibly).
    pub fn request_raw<F, Fut>(self, method: &str, handler: F) -> Self
    where
        F: Fn(Request, Responder) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.request_start(method, move |start, reply| handler(start.into_request(), reply))
    }

    /// Register a request handler that starts from the request as it arrives: whatever it reads
    /// of the [`RequestStart`] (its params, borrowed where the reader read them) is read before
    /// it returns its future. What `#[rpc]` servers and [`Router::method`] register.
    ///
    /// # Panics
    /// If `method` is already registered.
    #[doc(hidden)]
    pub fn request_start<F, Fut>(self, method: &str, handler: F) -> Self
    where
        F: for<'a> Fn(RequestStart<'a>, Responder) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.insert(method, Route::Request(Arc::new(move |start, reply| Box::pin(handler(start, reply)))))
    }

    /// Register a typed request handler. Params that do not decode into `P` are answered
    /// `-32602`; the handler's `Ok` is the result, its `Err` the error object.
    ///
    /// # Panics
    /// If `method` is already registered.
    pub fn method<P, R, F, Fut>(self, method: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + Send + 'static,
        F: Fn(P, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    {
        // The handler's future is made here, by reference: the router's handler is shared by
        // every connection serving it, and a clone of an `Arc` of it per request was an atomic
        // write to one word for every worker thread, twice a request (the cache line moving
        // between the cores each time).
        self.request_start(method, move |start: RequestStart<'_>, reply| {
            let running = match super::decode_params::<P>(start.params()) {
                Ok(params) => Ok((handler(params, start.context()), reply)),
                Err(e) => Err((e, reply)),
            };
            async move {
                match running {
                    Ok((running, reply)) => {
                        reply.respond(running.await);
                    }
                    Err((e, reply)) => {
                        reply.err(e);
                    }
                }
            }
        })
    }

    /// Register a raw notification handler.
    ///
    /// # Panics
    /// If `method` is already registered.
    pub fn notification_raw<F, Fut>(self, method: &str, handler: F) -> Self
    where
        F: Fn(Notification) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification_start(method, move |start| handler(start.into_notification()))
    }

    /// Register a notification handler that starts from the notification as it arrives (see
    /// [`Router::request_start`]). What `#[rpc]` servers and [`Router::notification`] register.
    ///
    /// # Panics
    /// If `method` is already registered.
    #[doc(hidden)]
    pub fn notification_start<F, Fut>(self, method: &str, handler: F) -> Self
    where
        F: for<'a> Fn(NotificationStart<'a>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.insert(method, Route::Notification(Arc::new(move |start| Box::pin(handler(start)))))
    }

    /// Register a typed notification handler. Params that do not decode are logged and dropped.
    ///
    /// # Panics
    /// If `method` is already registered.
    pub fn notification<P, F, Fut>(self, method: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(P, NotificationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification_start(method, move |n: NotificationStart<'_>| {
            let decoded = super::decode_params::<P>(n.params());
            if let Err(e) = &decoded {
                tracing::warn!(
                    target: crate::LOG_TARGET,
                    method = %n.host.quote(&n.method()),
                    error = %n.host.quote(e),
                    "notification dropped: its params do not decode"
                );
            }
            // Made here, by reference (see `Router::method`).
            let running = decoded.ok().map(|params| handler(params, n.context()));
            async move {
                if let Some(running) = running {
                    running.await;
                }
            }
        })
    }

    /// Handle requests for methods no route matches (instead of answering `-32601`).
    ///
    /// ```
    /// use jsonrpc_duplex_core::{ErrorObject, Notification, Request, Responder, Router};
    ///
    /// let router = Router::new()
    ///     .fallback(|request: Request, reply: Responder| async move {
    ///         // Forward, log, or answer with a hint.
    ///         reply.err(ErrorObject::method_not_found(request.method()));
    ///     })
    ///     .notification_fallback(|note: Notification| async move {
    ///         eprintln!("ignored notification {}", note.method());
    ///     });
    /// # drop(router);
    /// ```
    pub fn fallback<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Request, Responder) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.fallback =
            Some(Arc::new(move |start: RequestStart<'_>, reply| Box::pin(handler(start.into_request(), reply))));
        self
    }

    /// Handle notifications for methods no route matches (instead of dropping them). Like any
    /// notification handler, it runs to completion before the next message is dispatched.
    pub fn notification_fallback<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Notification) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification_fallback = Some((
            Arc::from("(notification fallback)"),
            Arc::new(move |n: NotificationStart<'_>| Box::pin(handler(n.into_notification()))),
        ));
        self
    }

    /// Wrap every request handler (and the fallback) with `wrap`.
    pub(crate) fn map_requests(mut self, wrap: impl Fn(RequestFn) -> RequestFn) -> Self {
        for route in Arc::make_mut(&mut self.routes).values_mut() {
            if let Route::Request(handler) = route {
                *handler = wrap(handler.clone());
            }
        }
        self.fallback = self.fallback.take().map(&wrap);
        self
    }

    /// Wrap every notification handler (and the notification fallback) with `wrap`.
    pub(crate) fn map_notifications(mut self, wrap: impl Fn(NotificationFn) -> NotificationFn) -> Self {
        for route in Arc::make_mut(&mut self.routes).values_mut() {
            if let Route::Notification(handler) = route {
                *handler = wrap(handler.clone());
            }
        }
        self.notification_fallback = self.notification_fallback.take().map(|(name, f)| (name, wrap(f)));
        self
    }

    /// Whether a fallback takes requests no route matches.
    pub(crate) fn has_fallback(&self) -> bool {
        self.fallback.is_some()
    }

    /// Combine two routers; a method both register is an error naming it.
    pub fn try_merge(mut self, other: impl Into<Router>) -> Result<Self, MethodClash> {
        let other = other.into();
        if self.routes.is_empty() {
            // Nothing to merge into: take the other's table as it is (shared, not copied).
            self.routes = other.routes;
        } else if !other.routes.is_empty() {
            for (method, route) in Arc::unwrap_or_clone(other.routes) {
                self.try_insert(&method, route)?;
            }
        }
        match (&self.fallback, other.fallback) {
            (Some(_), Some(_)) => return Err(MethodClash { method: "<fallback>".into() }),
            (None, Some(f)) => self.fallback = Some(f),
            _ => {}
        }
        match (&self.notification_fallback, other.notification_fallback) {
            (Some(_), Some(_)) => return Err(MethodClash { method: "<notification fallback>".into() }),
            (None, Some(f)) => self.notification_fallback = Some(f),
            _ => {}
        }
        Ok(self)
    }

    /// Combine two routers.
    ///
    /// # Panics
    /// If both register a method (the message names it). Use [`Router::try_merge`] to handle it.
    pub fn merge(self, other: impl Into<Router>) -> Self {
        match self.try_merge(other) {
            Ok(r) => r,
            Err(clash) => panic!("{clash} (merging routers)"),
        }
    }
}
