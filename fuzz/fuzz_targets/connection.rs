//! A whole connection fed arbitrary bytes (first byte: framing and chunking): no panic, no hang
//! (the connection ends once its input does, on a paused clock), no allocation beyond the small
//! configured limits, and nothing but well framed JSON-RPC written back.
#![no_main]

use jsonrpc_duplex_fuzz::{AllocGuard, check_connection};

#[global_allocator]
static GUARD: AllocGuard = AllocGuard;

libfuzzer_sys::fuzz_target!(|input: &[u8]| check_connection(input));
