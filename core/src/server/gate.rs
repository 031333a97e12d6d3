//! The drain gate: counts the request handlers running on every connection of a server, and
//! once the server drains, answers new requests with an error instead of starting them. A
//! feature of the server's connections: it wraps each connection's router through the seam
//! ([`Extension::router`]) for the refusal, and counts the running handlers as the connection's
//! request admission ([`Extension::admission`]: a request holds its admission from the moment it
//! may start until its handler ends; one admitted once the gate drains counts for nothing, the
//! router refuses it), in place of the connection's own request permits (it keeps their bounds
//! itself).
//!
//! Counted there, a handler future is not wrapped in one of the gate's own (a box per request:
//! its allocation and its free were ~150 of the server's instructions a call under callgrind),
//! and the count is the connection's permits themselves ([`Admitted`]): the request a permit
//! admits is the handler the gate waits for, so counting it again elsewhere would be two more
//! atomic operations a request (a count sharded per worker thread did that once, and a
//! `TaskTracker`'s token, one word for all the server's threads, before it). The gate
//! keeps a list of the connections whose admission it is, touched only as one starts and ends.
//! When another feature of the connection admits its requests instead (the first admission
//! decides), the gate counts by wrapping each handler future in a tracker's token, as it did
//! before.

use std::pin::pin;
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Context, Poll};

use tokio_util::task::TaskTracker;

use crate::connection::permits::Permits;
use crate::connection::seam::Admission;
use crate::connection::{Extension, Feature, Start};
use crate::handler::{BoxFuture, RequestFn, Router};
use crate::message::{ErrorObject, codes};
use crate::sync::lazy::Notify;
use crate::sync::{AtomicBool, Mutex, Ordering, lock};

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
    admitted: Admitted,
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

/// The request handlers counted at admission: the sum of the running counts of the
/// connections' permits, each connection's word marked once the gate drains.
///
/// | step | who | what |
/// |---|---|---|
/// | join | a connection taking the gate as its admission | listed, under the list's lock; marked at once if the gate is closed |
/// | admit | the connection's lane | take a permit; if the word was marked, give it back and let the request in uncounted (the router refuses it) |
/// | release | whoever ends a handler | give its permit back; if the word was marked, wake the waiters |
/// | close | the shutdown | set `closed` (the router's refusal), then mark every word listed by then, wake the waiters |
/// | wait | the shutdown, after the close | register for a wake-up, *then* sum the words: done at zero, else wait and sum again |
///
/// Of an admission racing the close on its word, either it comes second and sees the mark
/// (and counts for nothing), or it comes first and the wait's sum, read after the mark, counts
/// it: the wait never ends while a handler it let in still runs. A release after the mark wakes
/// the wait (registered before it sums), one before it is not in the sum. A connection listed
/// while the gate closes is marked by one or the other: the close sets `closed` before it takes
/// the list under the lock, a connection joins under it and looks at `closed`. The same argument
/// as the count it replaces (a word per worker thread, marked at the close); `loom_gate_*`
/// below check it on the connections' own permits.
struct Admitted {
    closed: AtomicBool,
    connections: Mutex<ConnectionList>,
    /// Wakes a waiter when a handler ends after the close (and at the close).
    changed: Notify,
}

/// The connections whose admission the gate is, each at its place (a free place is reused;
/// the list is let go once it is empty, so a burst of connections leaves nothing behind).
#[derive(Default)]
struct ConnectionList {
    places: Vec<Option<Weak<GateAdmission>>>,
    free: Vec<usize>,
}

impl Default for Admitted {
    fn default() -> Self {
        Admitted {
            closed: AtomicBool::new(false),
            connections: Mutex::new(ConnectionList::default()),
            changed: Notify::new(),
        }
    }
}

impl Admitted {
    /// List `admission`'s connection; its place in the list.
    fn join(&self, admission: &Arc<GateAdmission>) -> usize {
        let mut listed = lock(&self.connections);
        if self.closed.load(Ordering::Acquire) {
            admission.permits.mark();
        }
        let entry = Some(Arc::downgrade(admission));
        match listed.free.pop() {
            Some(place) => {
                listed.places[place] = entry;
                place
            }
            None => {
                listed.places.push(entry);
                listed.places.len() - 1
            }
        }
    }

    /// The connection at `place` ended.
    fn leave(&self, place: usize) {
        let mut listed = lock(&self.connections);
        listed.places[place] = None;
        listed.free.push(place);
        if listed.free.len() == listed.places.len() {
            *listed = ConnectionList::default();
        }
    }

    /// The listed connections' admissions (taken out of the lock: the last reference to one
    /// may be dropped here, and its drop takes the lock).
    fn each(&self) -> Vec<Arc<GateAdmission>> {
        lock(&self.connections).places.iter().filter_map(|p| p.as_ref()?.upgrade()).collect()
    }

    /// Admit nothing counted from now on.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for admission in self.each() {
            admission.permits.mark();
        }
        self.changed.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The handlers counted now.
    fn len(&self) -> u64 {
        self.each().iter().map(|a| a.permits.running()).sum()
    }

    /// Resolves once no handler is counted after [`Admitted::close`].
    async fn wait(&self) {
        loop {
            let mut changed = pin!(self.changed.notified());
            changed.as_mut().enable();
            if self.is_closed() && self.len() == 0 {
                return;
            }
            changed.await;
        }
    }
}

/// The gate as a feature of each connection a server starts (one gate for all of them).
#[derive(Clone)]
pub(crate) struct DrainGate(pub(crate) Arc<Gate>);

impl Feature for DrainGate {
    fn start(&self, start: &Start<'_>) -> Arc<dyn Extension> {
        let limits = start.limits();
        Arc::new(GateAdmission::new(
            self.0.clone(),
            Permits::new(limits.max_concurrent_requests, limits.max_concurrent_request_bytes),
        ))
    }
}

/// The gate on one connection: the connection's request permits (its own bounds, which this
/// admission replaces), which are the gate's count of its running handlers.
struct GateAdmission {
    gate: Arc<Gate>,
    permits: Permits,
    /// The connection took this admission (asked before its router is wrapped): it counts.
    admits: AtomicBool,
    /// Its place in the gate's list, once the connection took it.
    place: OnceLock<usize>,
}

/// The weight of a request admitted once the gate drains: it holds no permit (the router
/// refuses it; it must not count as one still running in the shutdown's report). A permit's
/// weight is never 0.
const UNCOUNTED: u64 = 0;

impl GateAdmission {
    fn new(gate: Arc<Gate>, permits: Permits) -> Self {
        GateAdmission { gate, permits, admits: AtomicBool::new(false), place: OnceLock::new() }
    }

    /// The weight of a request the permits admitted with `weight`, its word `marked` or not.
    fn counted(&self, (weight, marked): (u64, bool)) -> u64 {
        if marked {
            Admission::release(self, weight);
            return UNCOUNTED;
        }
        weight
    }
}

impl Admission for GateAdmission {
    fn try_admit(&self, bytes: usize) -> Option<u64> {
        self.permits.try_weigh_marked(bytes).map(|taken| self.counted(taken))
    }

    fn poll_admit(&self, bytes: usize, cx: &mut Context<'_>) -> Poll<u64> {
        self.permits.poll_weigh_marked(bytes, cx).map(|taken| self.counted(taken))
    }

    fn release(&self, weight: u64) {
        if weight != UNCOUNTED && self.permits.give(weight) {
            self.gate.admitted.changed.notify_waiters();
        }
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
        self.place.get_or_init(|| self.gate.admitted.join(&self));
        Some(self)
    }
}

impl Drop for GateAdmission {
    fn drop(&mut self) {
        if let Some(&place) = self.place.get() {
            self.gate.admitted.leave(place);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ErrorObject;

    /// A connection's admission through `gate`, with room for 8 requests, taken by its
    /// connection (so listed in the gate).
    fn admission_of(gate: &Arc<Gate>) -> Arc<GateAdmission> {
        let admission = Arc::new(GateAdmission::new(gate.clone(), Permits::new(8, 1 << 20)));
        let _ = admission.clone().admission().expect("the gate admits");
        admission
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
            Admission::release(&*admission, *weight);
            assert_eq!(gate.running(), left);
            assert!(gate.idle().now_or_never().is_none(), "the drain ended with {left} requests running");
        }
        Admission::release(&*admission, weights[2]);
        assert_eq!(gate.running(), 0);
        assert!(gate.idle().now_or_never().is_some(), "the drain waits though no request runs");
        // Admitted while draining, a request is refused by the router, never run: not counted
        // (the shutdown would report it unfinished), and it holds no permit.
        let refused: Vec<u64> = (0..9).map(|_| admission.try_admit(10).expect("room")).collect();
        assert_eq!(gate.running(), 0, "a request admitted after the drain counts as running");
        for weight in refused {
            Admission::release(&*admission, weight);
        }
        assert_eq!(gate.running(), 0);
        assert!(gate.idle().now_or_never().is_some());
    }

    #[test]
    fn the_count_is_every_listed_connection_s_and_a_connection_listed_after_the_drain_counts_nothing() {
        use futures::FutureExt;
        let gate = Arc::new(Gate::default());
        let (first, second) = (admission_of(&gate), admission_of(&gate));
        let a = first.try_admit(10).expect("room");
        let b = second.try_admit(10).expect("room");
        let c = second.try_admit(10).expect("room");
        assert_eq!(gate.running(), 3);
        gate.drain();
        let late = admission_of(&gate);
        assert_eq!(late.try_admit(10), Some(UNCOUNTED), "a connection listed after the drain counted a request");
        Admission::release(&*first, a);
        Admission::release(&*second, b);
        assert_eq!(gate.running(), 1);
        assert!(gate.idle().now_or_never().is_none());
        Admission::release(&*second, c);
        assert!(gate.idle().now_or_never().is_some());
    }

    #[test]
    fn a_connection_that_ends_leaves_the_list_and_an_empty_list_is_let_go() {
        let gate = Arc::new(Gate::default());
        let admissions: Vec<_> = (0..3).map(|_| admission_of(&gate)).collect();
        assert_eq!(lock(&gate.admitted.connections).places.len(), 3);
        let mut admissions = admissions.into_iter();
        drop(admissions.next());
        // Its place is reused.
        let again = admission_of(&gate);
        assert_eq!(lock(&gate.admitted.connections).places.len(), 3);
        drop((admissions, again));
        let listed = lock(&gate.admitted.connections);
        assert_eq!((listed.places.capacity(), listed.free.capacity()), (0, 0), "the list kept its memory");
    }

    #[test]
    fn a_connection_s_next_request_after_its_others_ended_is_counted_again() {
        let gate = Arc::new(Gate::default());
        let admission = admission_of(&gate);
        for _ in 0..3 {
            let weight = admission.try_admit(10).expect("room");
            assert_eq!(gate.running(), 1);
            Admission::release(&*admission, weight);
            assert_eq!(gate.running(), 0);
        }
    }

    /// A request admitted on one thread may end on another: the count is the connection's, so
    /// it comes back to zero.
    #[test]
    fn a_request_admitted_on_one_thread_and_released_on_another_is_counted_out() {
        let gate = Arc::new(Gate::default());
        let admission = admission_of(&gate);
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

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicUsize;

    /// `connections` connections take the gate as their admission; a request on each of the
    /// connections `on` is admitted and, if the router lets it in, runs and ends, while the
    /// shutdown closes the gate and waits: when the wait ends, no handler it let in is running.
    /// A request the gate counted for nothing is one the router refuses.
    fn model(connections: usize, on: &'static [usize]) {
        loom::model(move || {
            let gate = Arc::new(Gate::default());
            let admissions: Vec<Arc<GateAdmission>> = (0..connections)
                .map(|_| {
                    let admission = Arc::new(GateAdmission::new(gate.clone(), Permits::new(8, 1 << 20)));
                    let _ = admission.clone().admission();
                    admission
                })
                .collect();
            let running = Arc::new(AtomicUsize::new(0));
            let handlers: Vec<_> = on
                .iter()
                .map(|&c| {
                    let (gate, admission, running) = (gate.clone(), admissions[c].clone(), running.clone());
                    loom::thread::spawn(move || {
                        let weight = admission.try_admit(10).expect("room");
                        let refused = gate.draining();
                        assert!(weight != UNCOUNTED || refused, "a request counted for nothing was let in");
                        if !refused {
                            running.fetch_add(1, Ordering::SeqCst);
                            running.fetch_sub(1, Ordering::SeqCst);
                        }
                        Admission::release(&*admission, weight);
                    })
                })
                .collect();
            gate.admitted.close();
            loom::future::block_on(gate.admitted.wait());
            assert_eq!(running.load(Ordering::SeqCst), 0, "the wait ended with a handler running");
            for handler in handlers {
                handler.join().unwrap();
            }
            assert_eq!(gate.admitted.len(), 0);
        });
    }

    #[test]
    fn loom_gate_a_request_racing_the_drain() {
        model(1, &[0]);
    }

    #[test]
    fn loom_gate_two_requests_on_two_connections() {
        model(2, &[0, 1]);
    }

    #[test]
    fn loom_gate_two_requests_on_one_connection() {
        model(1, &[0, 0]);
    }
}
