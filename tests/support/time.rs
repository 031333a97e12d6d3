//! Bounded waits: every wait in a test ends in [`WAIT`] at most, so a hang fails the test in
//! seconds and says where it was waiting.

use std::future::Future;
use std::time::{Duration, Instant};

/// The longest any single wait in a test may take (generous, for a loaded CI machine).
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// Await `fut`, failing the test at the caller's line if it takes longer than [`WAIT`].
#[track_caller]
pub(crate) fn within<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    let caller = std::panic::Location::caller();
    async move {
        match tokio::time::timeout(WAIT, fut).await {
            Ok(out) => out,
            Err(_) => panic!("timed out after {WAIT:?} (waiting at {caller})"),
        }
    }
}

/// Poll `cond` until it holds (every 5 ms, at most [`WAIT`]): for state that has no event to
/// wait on (counters of another task).
#[track_caller]
pub(crate) fn eventually<'a>(what: &'a str, mut cond: impl FnMut() -> bool + 'a) -> impl Future<Output = ()> + 'a {
    let caller = std::panic::Location::caller();
    async move {
        let deadline = Instant::now() + WAIT;
        while !cond() {
            assert!(Instant::now() < deadline, "{what}: not within {WAIT:?} (waiting at {caller})");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Wait until no task of this runtime can make progress: every flood, pipe and connection task
/// is parked. Only for a test on paused time (`#[tokio::test(start_paused = true)]`, one
/// thread, in-memory pipes): tokio advances a paused clock only when every task is idle, so this
/// long sleep ends exactly when the runtime has nothing left to do, however slow the machine.
#[track_caller]
pub(crate) fn quiescent() -> impl Future<Output = ()> {
    let caller = std::panic::Location::caller();
    async move {
        const QUIET: Duration = Duration::from_secs(60);
        let start = Instant::now();
        tokio::time::sleep(QUIET).await;
        assert!(start.elapsed() < QUIET, "quiescent() at {caller} needs paused time (start_paused = true)");
    }
}
