//! The drain gate: counts the request handlers running on every connection of a server, and
//! once the server drains, answers new requests with an error instead of starting them. A
//! feature of the server's connections: it wraps each connection's router through the seam
//! ([`Extension::router`]) for the refusal, and counts the running handlers as the connection's
//! request admission ([`Extension::admission`]: a request holds its admission from the moment it
//! may start until its handler ends; one admitted once the gate drains counts for nothing, the
//! router refuses it), in place of the connection's own request permits (it keeps their bounds
//! itself). Counted
//! there, a handler future is not wrapped in one of the gate's own (a box per request: its
//! allocation and its free were ~150 of the server's instructions a call under callgrind), and
//! it is counted in a [`Tally`], sharded per worker thread: no count that every connection's
//! every request writes (a `TaskTracker`'s token, which this replaces there, wrote one atomic
//! word shared by all the server's threads twice a request), and nothing kept per connection.
//! When another feature of the connection admits its requests instead (the first admission
//! decides), the gate counts by wrapping each handler future in a tracker's token, as it did
//! before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio_util::task::TaskTracker;

use crate::connection::permits::Permits;
use crate::connection::seam::Admission;
use crate::connection::{Extension, Feature, Start};
use crate::handler::{BoxFuture, RequestFn, Router};
use crate::message::{ErrorObject, codes};
use crate::sync::tally::{self, Tally};

/// What a request that arrives while the server shuts down is answered.
pub(crate) fn shutting_down() -> ErrorObject {
    ErrorObject::new(codes::SERVER_ERROR, "the server is shutting down")
}

/// The last router wrapped and what it became: a server's connections usually serve one
/// table, wrapped once and shared by all of them instead of copied per connection.
type Wrapped = Mutex<Option<(Router, Router)>>;

#[derive(Default)]
pub(crate) struct Gate {
    /// The request handlers a connection's admission counts (closed: the gate drains).
    admitted: Tally,
    /// One token per running request handler counted by a wrapper instead.
    in_flight: TaskTracker,
    /// Routers that only refuse (their connections count at admission).
    refusing: Wrapped,
    /// Routers that refuse and count (their connections admit through another feature).
    counting: Wrapped,
}

impl Gate {
    /// Refuse new requests from now on.
    pub(crate) fn drain(&self) {
        self.admitted.close();
        self.in_flight.close();
    }

    /// The gate drains: new requests are refused.
    fn draining(&self) -> bool {
        self.admitted.is_closed()
    }

    /// Resolves once no request handler runs any more (after [`Gate::drain`]; none is admitted
    /// from then on).
    pub(crate) async fn idle(&self) {
        self.admitted.wait().await;
        self.in_flight.wait().await;
    }

    /// Request handlers running now.
    pub(crate) fn running(&self) -> usize {
        self.admitted.len() as usize + self.in_flight.len()
    }

    /// Apply this gate to every request handler of `router`: the refusal, and the count too
    /// unless `counted` (the connection's admission counts).
    fn wrap(self: &Arc<Self>, router: Router, counted: bool) -> Router {
        let cache = if counted { &self.refusing } else { &self.counting };
        let mut wrapped = cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((given, made)) = wrapped.as_ref()
            && given.same_as(&router)
        {
            return made.clone();
        }
        let made = self.wrap_each(router.clone(), counted);
        *wrapped = Some((router, made.clone()));
        made
    }

    /// Every request handler refuses while draining. Otherwise its future runs, holding a token
    /// while it runs unless `counted` (the connection's admission holds one for it); a
    /// notification run by a request handler takes no admission, so it is always counted here.
    fn wrap_each(self: &Arc<Self>, router: Router, counted: bool) -> Router {
        let gate = self.clone();
        router.map_requests(move |handler: RequestFn| -> RequestFn {
            let gate = gate.clone();
            Arc::new(move |request, responder| -> BoxFuture {
                if gate.draining() {
                    responder.err(shutting_down());
                    return Box::pin(async {});
                }
                if !counted || request.slot.lane.is_some() {
                    return gate.counting(|| handler(request, responder));
                }
                handler(request, responder)
            })
        })
    }

    /// The handler `start` makes, holding a token from before it starts until it ends.
    fn counting(&self, start: impl FnOnce() -> BoxFuture) -> BoxFuture {
        let token = self.in_flight.token();
        let running = start();
        Box::pin(async move {
            running.await;
            drop(token);
        })
    }
}

/// The gate as a feature of each connection a server starts (one gate for all of them).
#[derive(Clone)]
pub(crate) struct DrainGate(pub(crate) Arc<Gate>);

impl Feature for DrainGate {
    fn start(&self, start: &Start<'_>) -> Arc<dyn Extension> {
        let limits = start.limits();
        Arc::new(GateAdmission {
            gate: self.0.clone(),
            permits: Permits::new(limits.max_concurrent_requests, limits.max_concurrent_request_bytes),
            admits: AtomicBool::new(false),
        })
    }
}

/// The gate on one connection: the connection's request permits (its own bounds, which this
/// admission replaces), counting each request admitted into the gate's tally until it ends.
struct GateAdmission {
    gate: Arc<Gate>,
    permits: Permits,
    /// The connection took this admission (asked before its router is wrapped): it counts.
    admits: AtomicBool,
}

/// The low bit of the weights this admission gives out: the request is counted in the gate's
/// tally, on the shard in the next bits (the permits' weight is above them; theirs stay below
/// 2^41).
const COUNTED: u64 = 1;
// The shard takes `SHARD_BITS` bits only if the shards are a power of two.
const _: () = assert!(tally::SHARDS.is_power_of_two());
const SHARD_BITS: u32 = tally::SHARDS.trailing_zeros();
const SHARD_MASK: u64 = (1 << SHARD_BITS) - 1;
/// Where the permits' weight starts.
const PERMITS_SHIFT: u32 = 1 + SHARD_BITS;

impl GateAdmission {
    /// The weight of a request the permits admitted with `weight`, counted in the gate's tally
    /// (on this thread's shard) unless the gate drains: a request admitted then is refused by
    /// the gate's router (the tally only ever closes, so the router sees it closed too) and its
    /// handler never runs, so it must not count as one still running in the shutdown's report.
    fn enter(&self, weight: u64) -> u64 {
        let shard = tally::this_thread_shard();
        if !self.gate.admitted.enter(shard) {
            return weight << PERMITS_SHIFT;
        }
        (weight << PERMITS_SHIFT) | ((shard as u64) << 1) | COUNTED
    }
}

impl Admission for GateAdmission {
    fn try_admit(&self, bytes: usize) -> Option<u64> {
        let weight = self.permits.try_admit(bytes)?;
        Some(self.enter(weight))
    }

    fn poll_admit(&self, bytes: usize, cx: &mut Context<'_>) -> Poll<u64> {
        let weight = ready!(self.permits.poll_admit(bytes, cx));
        Poll::Ready(self.enter(weight))
    }

    fn release(&self, weight: u64) {
        if weight & COUNTED != 0 {
            self.gate.admitted.leave(((weight >> 1) & SHARD_MASK) as usize);
        }
        Admission::release(&self.permits, weight >> PERMITS_SHIFT);
    }
}

impl Extension for GateAdmission {
    fn router(&self, router: Router) -> Router {
        self.gate.wrap(router, self.admits.load(Ordering::Acquire))
    }

    /// It takes no method of its own.
    fn shadows(&self) -> Option<&'static str> {
        None
    }

    fn admission(self: Arc<Self>) -> Option<Arc<dyn Admission>> {
        self.admits.store(true, Ordering::Release);
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ErrorObject;

    /// A connection's admission through `gate`, with room for 8 requests.
    fn admission_of(gate: &Arc<Gate>) -> GateAdmission {
        GateAdmission { gate: gate.clone(), permits: Permits::new(8, 1 << 20), admits: AtomicBool::new(true) }
    }

    fn router() -> Router {
        Router::new().method("add", |p: (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(p.0 + p.1) })
    }

    #[test]
    fn each_admitted_request_counts_until_released_and_none_admitted_while_draining() {
        use futures::FutureExt;
        let gate = Arc::new(Gate::default());
        let admission = admission_of(&gate);
        // Three at once.
        let weights: Vec<u64> = (0..3).map(|_| admission.try_admit(10).expect("room for three")).collect();
        assert_eq!(gate.running(), 3);
        gate.drain();
        for (left, weight) in [2, 1].into_iter().zip(&weights) {
            Admission::release(&admission, *weight);
            assert_eq!(gate.running(), left);
            assert!(gate.idle().now_or_never().is_none(), "the drain ended with {left} requests running");
        }
        Admission::release(&admission, weights[2]);
        assert_eq!(gate.running(), 0);
        assert!(gate.idle().now_or_never().is_some(), "the drain waits though no request runs");
        // Admitted while draining, a request is refused by the router, never run: not counted
        // (the shutdown would report it unfinished), and its permit is still given back.
        let refused: Vec<u64> = (0..8).map(|_| admission.try_admit(10).expect("room for eight")).collect();
        assert_eq!(gate.running(), 0, "a request admitted after the drain counts as running");
        assert!(admission.try_admit(10).is_none(), "the permits' own limit (8) no longer holds");
        for weight in refused {
            Admission::release(&admission, weight);
        }
        assert!(admission.try_admit(10).is_some(), "a refused request's permit was not given back");
    }

    #[test]
    fn a_connection_s_next_request_after_its_others_ended_is_counted_again() {
        let gate = Arc::new(Gate::default());
        let admission = admission_of(&gate);
        for _ in 0..3 {
            let weight = admission.try_admit(10).expect("room");
            assert_eq!(gate.running(), 1);
            Admission::release(&admission, weight);
            assert_eq!(gate.running(), 0);
        }
    }

    /// A request admitted on one thread may end on another: it is counted out where it was
    /// counted in (the weight carries the shard), so the count comes back to zero.
    #[test]
    fn a_request_admitted_on_one_thread_and_released_on_another_is_counted_out() {
        let gate = Arc::new(Gate::default());
        let admission = Arc::new(admission_of(&gate));
        let weights: Vec<u64> = (0..4)
            .map(|_| {
                let admission = admission.clone();
                std::thread::spawn(move || admission.try_admit(10).expect("room")).join().unwrap()
            })
            .collect();
        assert_eq!(gate.running(), 4);
        for weight in weights {
            Admission::release(&*admission, weight);
        }
        assert_eq!(gate.running(), 0);
        gate.drain();
        use futures::FutureExt;
        assert!(gate.idle().now_or_never().is_some());
    }

    #[test]
    fn connections_serving_one_table_share_its_wrapped_copy() {
        let gate = Arc::new(Gate::default());
        let template = router();
        let first = gate.wrap(template.clone(), true);
        let second = gate.wrap(template.clone(), true);
        assert!(first.same_as(&second), "the second connection got a copy of its own");
        assert!(!first.same_as(&template), "the table was not wrapped");
        // A router made for one connection (a `serve_with` factory) is wrapped on its own.
        let other = gate.wrap(router(), true);
        assert!(!other.same_as(&first));
        assert!(other.contains("add"));
    }
}
