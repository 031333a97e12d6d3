//! The `core` area of the integration tests: one test binary (one link step) for the files
//! of `tests/core/`, each a module. Run it alone with `cargo test --all-features --test core`,
//! one file of it with `cargo test --all-features --test core -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod admission;
pub mod answer_race;
pub mod backpressure;
pub mod bad_input;
pub mod batch;
pub mod calls;
pub mod cancel;
pub mod cancel_reasons;
pub mod close_sequence;
pub mod concurrency;
pub mod feature_handle;
pub mod framing;
pub mod idle_tasks;
pub mod ids;
pub mod inbound_bytes;
pub mod layers;
pub mod lifecycle;
pub mod log_cuts;
pub mod ordering;
pub mod profiles;
pub mod settle;
pub mod stdio_exit;
pub mod stdio_tty;
pub mod user_code;
pub mod user_feature;
