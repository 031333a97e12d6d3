//! How features plug into the connection, which knows nothing of them.
//!
//! Streams (`$/enumerator/*`) and progress (`$/progress`) are features: each is a [`Feature`]
//! in the [`Builder`](super::Builder) (its settings) and an [`Extension`] in every connection (its
//! state). The connection calls its extensions at five points and nowhere else, the way a tower
//! layer wraps a service:
//!
//! | point | when | what an extension does |
//! |---|---|---|
//! | [`Extension::requests`] / [`Extension::serve`] | a request for one of its methods arrives | answers it itself, before the router (`$/enumerator/next`) |
//! | [`Extension::notifications`] / [`Extension::take`] | one of its notifications arrives | takes it off the wire before the ordered lane, like a cancellation (`$/enumerator/abort`, progress reports for our tokens) |
//! | [`Extension::bind`] | a value of its own is found in a message being encoded (see [`crate::message::bind`]) | binds it to that message: to one of our calls, to a result, or refuses it |
//! | [`Extension::release`] | a call it bound a token to is over ([`Extension::phase`]: before its answer reaches the caller, or after) | ends what the token held (an argument stream, a progress receiver) |
//! | [`Extension::closed`] | the connection ends | ends everything it holds, with the reason |
//!
//! The connection keeps which tokens travel in which of its calls (one map, one atomic check per
//! answer) and whether any value waits to be bound (one atomic check per encoded message), so
//! that a connection whose extensions hold nothing pays nothing for them.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use super::trace::Tracer;
use super::{CloseReason, Limits};
use crate::handler::{BoxFuture as HandlerFuture, Request, Responder};
use crate::message::bind::{Found, Target};
use crate::util::hash::IdBuild;

/// What an extension may do with its connection when the connection calls it: a narrow view of
/// the connection (its limits, how it quotes peer input in a log line, the byte account of the
/// peer's input it holds, and ending it), not its state.
pub(crate) trait Link: Send + Sync {
    /// The connection's limits.
    fn limits(&self) -> &Limits;
    /// How the connection quotes peer input in a log line (cut and redacted like the wire log).
    fn tracer(&self) -> &Tracer;
    /// `bytes` of the peer's input are held (they count against the read-ahead) until
    /// [`Link::release_inbound`].
    fn hold_inbound(&self, bytes: usize);
    /// `bytes` held by [`Link::hold_inbound`] were taken.
    fn release_inbound(&self, bytes: usize);
    /// End the connection (the first reason wins).
    fn close(&self, reason: CloseReason);
}

/// A feature's settings, carried by the builder.
pub(crate) trait Feature: Any + Send + Sync {
    /// A copy (a builder is cloned for each connection it starts).
    fn clone_box(&self) -> Box<dyn Feature>;
    /// This feature's part of a new connection, under the connection's `limits` (a feature's
    /// bounds are set with the others, in [`Limits`]); `unbound` counts the values it makes that
    /// wait to be bound (see [`Unbound`]).
    fn start(&self, limits: &Limits, unbound: &Arc<Unbound>) -> Arc<dyn Extension>;
}

/// What became of a notification an extension was offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// Not its own after all: it goes to the router.
    Pass,
    /// Taken.
    Taken,
    /// Taken and kept until somebody takes it from the extension: it counts against the
    /// read-ahead like a queued message.
    Held,
}

/// What binding a found value did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// It travels in the params of our request and ends with it: [`Extension::release`] when the
    /// call is over.
    ToCall,
    /// Nothing more to do.
    Done,
}

/// When the tokens bound to one of our calls are released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// When its answer is read, before it reaches the caller (a stream passed as an argument
    /// must be over before its callee's answer is seen).
    BeforeAnswer,
    /// Once its answer is in the caller's hands (a progress receiver ends after the answer).
    AfterAnswer,
}

/// A feature's part of one connection.
pub(crate) trait Extension: Any + Send + Sync {
    /// Requests it answers itself, before the router.
    fn requests(&self) -> Vec<Cow<'static, str>> {
        Vec::new()
    }
    /// Answer one of [`Extension::requests`].
    fn serve(self: Arc<Self>, link: &dyn Link, request: Request, responder: Responder) -> HandlerFuture {
        let _ = link;
        responder.err(crate::message::ErrorObject::method_not_found(request.method()));
        Box::pin(async {})
    }
    /// Notifications it takes before the ordered lane.
    fn notifications(&self) -> Vec<Cow<'static, str>> {
        Vec::new()
    }
    /// One of [`Extension::notifications`] arrived.
    fn take(&self, link: &dyn Link, method: &str, params: Option<&RawValue>) -> Take {
        let _ = (link, method, params);
        Take::Pass
    }
    /// A value of its own (`token`) is in a message going to `target`.
    fn bind(&self, token: u64, target: Target) -> Result<Bound, String>;
    /// When its tokens bound to a call are released.
    fn phase(&self) -> Phase;
    /// A call `token` was bound to is over.
    fn release(&self, token: u64);
    /// The connection ended.
    fn closed(&self, reason: &CloseReason);
    /// Why a route named like one of its methods would never be called, for the error that
    /// refuses it; `None` when such a route is still called (the extension lets some through).
    fn shadows(&self) -> Option<&'static str>;
}

/// The features of a builder, one of each kind.
#[derive(Default)]
pub(crate) struct Features(Vec<Box<dyn Feature>>);

impl Clone for Features {
    fn clone(&self) -> Self {
        Features(self.0.iter().map(|f| f.clone_box()).collect())
    }
}

impl Features {
    /// The feature of kind `F`, added with its defaults if it is not there yet.
    pub(crate) fn get_mut<F: Feature + Default>(&mut self) -> &mut F {
        let at = match self.0.iter().position(|f| (&**f as &dyn Any).is::<F>()) {
            Some(at) => at,
            None => {
                self.0.push(Box::new(F::default()));
                self.0.len() - 1
            }
        };
        let feature: &mut dyn Any = &mut *self.0[at];
        feature.downcast_mut::<F>().unwrap_or_else(|| unreachable!("found by its type"))
    }

    /// Add `F` with its defaults unless it is there.
    pub(crate) fn with<F: Feature + Default>(mut self) -> Self {
        self.get_mut::<F>();
        self
    }

    fn start(&self, limits: &Limits, unbound: &Arc<Unbound>) -> Vec<Arc<dyn Extension>> {
        self.0.iter().map(|f| f.start(limits, unbound)).collect()
    }
}

/// How many values the extensions of one connection made that wait to be bound to a message (an
/// offered stream not sent yet, a progress token not sent yet): while none does, messages are
/// encoded by serde_json directly.
#[derive(Default)]
pub(crate) struct Unbound(AtomicUsize);

impl Unbound {
    /// A value waits to be bound.
    pub(crate) fn arm(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// A value that waited is bound, or gone (once per [`Unbound::arm`]).
    pub(crate) fn disarm(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    fn any(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }
}

/// A connection's extensions and what it keeps for them.
pub(crate) struct Seam {
    extensions: Vec<Arc<dyn Extension>>,
    /// Request and notification names, with the extension that takes each.
    requests: Vec<(Cow<'static, str>, usize)>,
    notifications: Vec<(Cow<'static, str>, usize)>,
    /// Which extension tokens travel in which of our calls, per release phase.
    before: CallBindings,
    after: CallBindings,
    /// Values made by extensions and not bound yet.
    unbound: Arc<Unbound>,
}

impl Seam {
    pub(crate) fn new(features: &Features, limits: &Limits) -> Self {
        let unbound = Arc::new(Unbound::default());
        let extensions = features.start(limits, &unbound);
        let mut requests = Vec::new();
        let mut notifications = Vec::new();
        for (at, e) in extensions.iter().enumerate() {
            requests.extend(e.requests().into_iter().map(|name| (name, at)));
            notifications.extend(e.notifications().into_iter().map(|name| (name, at)));
        }
        Seam {
            extensions,
            requests,
            notifications,
            before: CallBindings::default(),
            after: CallBindings::default(),
            unbound,
        }
    }

    /// The extension of kind `E`.
    pub(crate) fn get<E: Extension>(&self) -> Option<Arc<E>> {
        self.extensions.iter().find_map(|e| {
            let any: Arc<dyn Any + Send + Sync> = e.clone();
            any.downcast::<E>().ok()
        })
    }

    /// The extension that answers requests for `method`, if one does.
    pub(crate) fn serving(&self, method: &str) -> Option<&Arc<dyn Extension>> {
        self.requests.iter().find(|(name, _)| name == method).map(|(_, at)| &self.extensions[*at])
    }

    /// Offer a notification to the extension that takes `method`, if one does.
    pub(crate) fn take(&self, link: &dyn Link, method: &str, params: Option<&RawValue>) -> Take {
        match self.notifications.iter().find(|(name, _)| name == method) {
            Some((_, at)) => self.extensions[*at].take(link, method, params),
            None => Take::Pass,
        }
    }

    /// A route the connection would never call: its name and why.
    pub(crate) fn shadowing(&self, mut is_routed: impl FnMut(&str) -> bool) -> Option<(&str, &'static str)> {
        self.requests
            .iter()
            .chain(&self.notifications)
            .filter(|(name, _)| is_routed(name))
            .find_map(|(name, at)| Some((&**name, self.extensions[*at].shadows()?)))
    }

    /// Whether a value waits to be bound (see [`Unbound`]).
    pub(crate) fn armed(&self) -> bool {
        self.unbound.any()
    }

    /// A bound value was found in a message going to `target`.
    pub(crate) fn bind(&self, found: Found, target: Target) -> Result<(), String> {
        let Some(at) = self.extensions.iter().position(|e| registry(e) == found.registry) else {
            return if found.strict {
                Err("it belongs to another connection: it can be sent only on the connection that made it".to_owned())
            } else {
                Ok(())
            };
        };
        let extension = &self.extensions[at];
        if let (Bound::ToCall, Target::Request(id)) = (extension.bind(found.token, target)?, target) {
            let bindings = match extension.phase() {
                Phase::BeforeAnswer => &self.before,
                Phase::AfterAnswer => &self.after,
            };
            bindings.bind(id, at, found.token);
        }
        Ok(())
    }

    /// Our call `id` is over (answered, given up, never sent): release what was bound to it in
    /// `phase`.
    pub(crate) fn release_call(&self, id: u64, phase: Phase) {
        let bindings = match phase {
            Phase::BeforeAnswer => &self.before,
            Phase::AfterAnswer => &self.after,
        };
        for (at, token) in bindings.take(id) {
            self.extensions[at].release(token);
        }
    }

    /// The connection ended.
    pub(crate) fn close(&self, reason: &CloseReason) {
        self.before.clear();
        self.after.clear();
        for e in &self.extensions {
            e.closed(reason);
        }
    }
}

/// The address that marks an extension's values.
pub(crate) fn registry(extension: &Arc<dyn Extension>) -> usize {
    Arc::as_ptr(extension) as *const () as usize
}

/// Our request id → (extension, token) pairs in its params.
type Owned = HashMap<u64, Vec<(usize, u64)>, IdBuild>;

/// Which extension tokens travel in which of our requests: they end when that request is
/// answered, given up, or never sent.
#[derive(Default)]
struct CallBindings {
    /// Our request id → (extension, token) in its params.
    owned: Mutex<Owned>,
    /// Entries of `owned`, so that answers to calls that carry no token skip the lock.
    count: AtomicUsize,
}

impl CallBindings {
    fn lock(&self) -> std::sync::MutexGuard<'_, Owned> {
        // Every critical section is one map operation: a poisoned lock is still consistent.
        self.owned.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bind(&self, id: u64, extension: usize, token: u64) {
        self.lock().entry(id).or_default().push((extension, token));
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    /// The tokens call `id` carried (none, without taking the lock, in the common case).
    fn take(&self, id: u64) -> Vec<(usize, u64)> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let tokens = self.lock().remove(&id).unwrap_or_default();
        self.count.fetch_sub(tokens.len(), Ordering::AcqRel);
        tokens
    }

    fn clear(&self) {
        let mut owned = self.lock();
        owned.clear();
        self.count.store(0, Ordering::Release);
    }
}
