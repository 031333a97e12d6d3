//! Exit codes of `call` and `replay` (and of `tap` before its server runs; after that, `tap`
//! exits the way its server did). Listed in the README.

/// Success: a result (call), every answer the same (replay).
pub(crate) const OK: u8 = 0;
/// The server answered with an error object (call); some answers differ (replay).
pub(crate) const ANSWERED_ERROR: u8 = 1;
/// The command line (or a file it names) is wrong; clap uses 2 too.
pub(crate) const USAGE: u8 = 2;
/// The server could not be started or reached, or the profile's handshake failed.
pub(crate) const CANNOT_CONNECT: u8 = 3;
/// The connection ended, or the timeout passed, before the answer came.
pub(crate) const NO_ANSWER: u8 = 4;
