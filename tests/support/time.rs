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
