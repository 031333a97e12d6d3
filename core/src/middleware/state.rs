//! What the shipped hooks keep per call, and a hook's state erased: the one file of the
//! middleware the connection and the inbound seam name (it imports nothing of the crate, so
//! naming it makes no circle).

use std::any::Any;
#[cfg(feature = "metrics")]
use std::sync::Arc;

#[cfg(feature = "metrics")]
use metrics::{Counter, Gauge, Histogram, Label};

/// What [`TraceLayer`](super::trace::TraceLayer) keeps for one call: its span (entered while
/// an inbound call is polled; disabled when nothing records it).
#[derive(Debug)]
pub struct InCall {
    pub(crate) span: tracing::Span,
    /// Entered while the call is polled (an inbound call: its handler runs inside it).
    pub(crate) enter: bool,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
pub(crate) struct Handles {
    pub(crate) labels: Vec<Label>,
    /// The layer's [`MetricsLayer::error_codes`](super::metrics::MetricsLayer::error_codes) (kept here: one reference per call).
    pub(crate) codes: Arc<Vec<i64>>,
    pub(crate) calls: Counter,
    pub(crate) duration: Histogram,
    pub(crate) in_flight: Gauge,
}

#[cfg(feature = "metrics")]
/// What [`MetricsLayer`](super::metrics::MetricsLayer) keeps for one call: its handles and when
/// it started (the layer's clock, raw). Dropped, it takes the call out of the in-flight gauge however it ended
/// (answered, dropped, cancelled).
#[derive(Debug)]
pub struct InFlight(pub(crate) Arc<Handles>, pub(crate) u64);

#[cfg(feature = "metrics")]
impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.decrement(1.0);
    }
}

/// A hook's state for one call, erased (what the connection keeps of it: see
/// [`Watcher`](crate::connection::Watcher)). The shipped hooks' states are kept as they are; any other is boxed (which
/// allocates nothing for a zero-sized state).
///
/// Public only to be named by a hidden method of [`Hook`](super::Hook) (this module is private).
#[doc(hidden)]
pub enum HookState {
    Trace(InCall),
    #[cfg(feature = "metrics")]
    Metrics(InFlight),
    Other(Box<dyn Any + Send>),
}

impl std::fmt::Debug for HookState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HookState")
    }
}

impl HookState {
    #[inline]
    pub(crate) fn new<S: Send + 'static>(state: S) -> Self {
        let mut state = Some(state);
        let any: &mut dyn Any = &mut state;
        if let Some(trace) = any.downcast_mut::<Option<InCall>>().and_then(Option::take) {
            return HookState::Trace(trace);
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = any.downcast_mut::<Option<InFlight>>().and_then(Option::take) {
            return HookState::Metrics(metrics);
        }
        // The state itself, not the `Option` around it: a zero-sized state allocates nothing.
        match state {
            Some(state) => HookState::Other(Box::new(state)),
            None => HookState::Other(Box::new(())),
        }
    }

    #[inline]
    pub(crate) fn get<S: 'static>(&self) -> Option<&S> {
        match self {
            HookState::Trace(trace) => (trace as &dyn Any).downcast_ref(),
            #[cfg(feature = "metrics")]
            HookState::Metrics(metrics) => (metrics as &dyn Any).downcast_ref(),
            HookState::Other(other) => other.downcast_ref::<S>(),
        }
    }

    #[inline]
    pub(crate) fn take<S: 'static>(self) -> Option<S> {
        let mut out: Option<S> = None;
        let into: &mut dyn Any = &mut out;
        match self {
            HookState::Trace(trace) => {
                if let Some(into) = into.downcast_mut::<Option<InCall>>() {
                    *into = Some(trace);
                }
            }
            #[cfg(feature = "metrics")]
            HookState::Metrics(metrics) => {
                if let Some(into) = into.downcast_mut::<Option<InFlight>>() {
                    *into = Some(metrics);
                }
            }
            HookState::Other(other) => return other.downcast::<S>().ok().map(|state| *state),
        }
        out
    }
}
