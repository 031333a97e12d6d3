//! The newline-delimited decoder: no panic, no loop, no frame over the limit, the same frames
//! however the bytes arrive, and its own encoding decodes back to the same messages.
#![no_main]

use jsonrpc_duplex_core::framing::Framing;
use jsonrpc_duplex_fuzz::{AllocGuard, check_decoder};

#[global_allocator]
static GUARD: AllocGuard = AllocGuard;

libfuzzer_sys::fuzz_target!(|input: &[u8]| check_decoder(Framing::NewlineDelimited, input));
