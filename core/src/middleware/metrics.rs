//! Metrics per method and direction on the [`metrics`] facade (feature `metrics`): calls,
//! errors by code, a duration histogram, calls in flight.
//!
//! Why `metrics` and not OpenTelemetry's metrics API: it is a small, stable facade in the
//! manner of `log` and `tracing` (one crate, no SDK), and its exporters cover Prometheus and
//! OpenTelemetry alike (`metrics-exporter-prometheus`, `metrics-exporter-opentelemetry`);
//! OpenTelemetry's API crate changes its interface every few releases and would tie every user
//! of this feature to one of them.

use std::sync::{Arc, OnceLock};

use metrics::Label;

pub use super::state::InFlight;
use super::state::{Handles, HookState};

use super::names::{MethodNames, OTHER};
use super::{CallInfo, Hook, Kind, Outcome, error_code};
use crate::connection::Direction;

/// Every call and notification counted, by `rpc.method` (a listed name or `_OTHER`),
/// `direction` (`inbound`, `outbound`) and `kind` (`request`, `notification`).
pub const CALLS: &str = "jsonrpc.calls";
/// Every request that ended with an error, by the same labels and `rpc.response.status_code`
/// (the code; `_OTHER` for a code outside JSON-RPC's reserved range that is not listed with
/// [`MetricsLayer::error_codes`], so a peer cannot make up labels).
pub const ERRORS: &str = "jsonrpc.errors";
/// Seconds from the call entering the layer until its answer (notifications: until handled or
/// queued), by `rpc.method`, `direction`, `kind`. OpenTelemetry names the same histogram
/// `rpc.server.call.duration` / `rpc.client.call.duration`.
pub const DURATION: &str = "jsonrpc.call.duration";
/// Calls in the layer now, by `rpc.method`, `direction`, `kind`.
pub const IN_FLIGHT: &str = "jsonrpc.calls.in_flight";

/// Records [`CALLS`], [`ERRORS`], [`DURATION`] and [`IN_FLIGHT`] for every call and
/// notification, both directions, to the recorder installed for the `metrics` facade.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, middleware::{metrics::MetricsLayer, names::MethodNames}};
/// // With a recorder installed (`metrics_exporter_prometheus::PrometheusBuilder::new().install()`):
/// let layer = MetricsLayer::new(MethodNames::new(["add", "sub"]));
/// let builder = Connection::builder().layer(layer);
/// # drop(builder);
/// ```
///
/// The handles of each (method, direction, kind) are registered with the recorder the first
/// time the layer sees it, and kept (clones of the layer share them).
#[derive(Clone, Debug)]
pub struct MetricsLayer {
    names: MethodNames,
    codes: Arc<Vec<i64>>,
    /// Per reported name (its place in `names`, then `_OTHER`), the handles of each
    /// (direction, kind), registered the first time they are needed.
    handles: Arc<[[OnceLock<Arc<Handles>>; 4]]>,
    /// Where a call's duration is read: the CPU's time-stamp counter where it is invariant
    /// (calibrated once per process, against the monotonic clock), else the monotonic clock.
    clock: quanta::Clock,
}

impl Default for MetricsLayer {
    /// Every method reported as `_OTHER`.
    fn default() -> Self {
        Self::new(MethodNames::default())
    }
}

impl MetricsLayer {
    /// Metrics labelled with these method names; any other is `_OTHER`.
    ///
    /// Durations are read on the CPU's time-stamp counter where it is invariant (x86-64 with
    /// an invariant TSC, AArch64), else on the monotonic clock (`quanta`). The first layer
    /// made in a process calibrates the counter against the monotonic clock, spinning on this
    /// thread for at least half a millisecond and at most 200 ms (0.6 ms on our test machine);
    /// later ones reuse the calibration.
    pub fn new(names: MethodNames) -> Self {
        let handles = (0..=names.len()).map(|_| Default::default()).collect();
        MetricsLayer { names, codes: Arc::default(), handles, clock: quanta::Clock::new() }
    }

    /// Error codes outside JSON-RPC's reserved range (-32768 to -32000) to label as they are.
    pub fn error_codes(mut self, codes: impl IntoIterator<Item = i64>) -> Self {
        self.codes = Arc::new(codes.into_iter().collect());
        // Handles registered before keep the codes they were made with: start afresh.
        self.handles = (0..=self.names.len()).map(|_| Default::default()).collect();
        self
    }

    fn handles(&self, method: &str, direction: Direction, kind: Kind) -> Arc<Handles> {
        let (method, at) = self.names.report_at(method);
        let slot = usize::from(direction == Direction::Outgoing) * 2 + usize::from(kind == Kind::Notification);
        // A slot per name and one for `_OTHER`, made with the layer.
        match self.handles[at][slot].get() {
            Some(handles) => handles.clone(),
            None => self.register(at, slot, method, direction, kind),
        }
    }

    /// The handles of a (method, direction, kind) the layer sees for the first time (out of
    /// line: the lookup above stays small).
    #[cold]
    #[inline(never)]
    fn register(&self, at: usize, slot: usize, method: &str, direction: Direction, kind: Kind) -> Arc<Handles> {
        self.handles[at][slot].get_or_init(|| Arc::new(Handles::register(method, direction, kind, &self.codes))).clone()
    }
}

impl Handles {
    pub(super) fn register(method: &str, direction: Direction, kind: Kind, codes: &Arc<Vec<i64>>) -> Handles {
        let labels = vec![
            Label::new("rpc.method", method.to_owned()),
            Label::new("direction", if direction == Direction::Incoming { "inbound" } else { "outbound" }),
            Label::new("kind", if kind == Kind::Request { "request" } else { "notification" }),
        ];
        Handles {
            calls: metrics::counter!(CALLS, labels.iter()),
            duration: metrics::histogram!(DURATION, labels.iter()),
            in_flight: metrics::gauge!(IN_FLIGHT, labels.iter()),
            labels,
            codes: codes.clone(),
        }
    }
}

/// A code as a label: itself inside JSON-RPC's reserved range or when listed, else `_OTHER`.
fn code_label(listed: &[i64], code: i64) -> String {
    if (-32768..=-32000).contains(&code) || listed.contains(&code) { code.to_string() } else { OTHER.to_owned() }
}

impl Hook for MetricsLayer {
    type State = InFlight;

    fn on_request(&self, call: &CallInfo<'_>) -> InFlight {
        let handles = self.handles(call.method(), call.direction(), call.kind());
        handles.calls.increment(1);
        handles.in_flight.increment(1.0);
        InFlight(handles, self.clock.raw())
    }

    #[inline(always)]
    fn on_request_held(&self, call: &CallInfo<'_>) -> HookState {
        HookState::Metrics(self.on_request(call))
    }

    fn on_response(&self, state: InFlight, outcome: &Outcome) {
        self.on_response_ref(&state, outcome);
    }

    // Told by reference: the state's drop, just after, takes the call out of the in-flight gauge.
    const TOLD_BY_REF: bool = true;
    fn on_response_ref(&self, state: &InFlight, outcome: &Outcome) {
        let handles = &state.0;
        let nanos = self.clock.delta_as_nanos(state.1, self.clock.raw());
        handles.duration.record(nanos as f64 * 1e-9);
        if let Err(error) = outcome {
            let mut labels = handles.labels.clone();
            labels.push(Label::new("rpc.response.status_code", code_label(&handles.codes, error_code(error))));
            metrics::counter!(ERRORS, labels).increment(1);
        }
    }

    // No scope: the connection polls its calls without asking it.
    const SCOPED: bool = false;
}
