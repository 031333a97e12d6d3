//! Message parsing, exactly as the connection does it: no panic, and a parse error (`-32700`)
//! exactly when the frame is not UTF-8 JSON; a batch counts its elements.
#![no_main]

use jsonrpc_duplex_core::fuzzing;
use jsonrpc_duplex_fuzz::AllocGuard;
use serde_json::value::RawValue;

#[global_allocator]
static GUARD: AllocGuard = AllocGuard;

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    let parsed = fuzzing::parse(input);
    let json = std::str::from_utf8(input).ok().filter(|s| serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok());
    match (json, parsed) {
        (None, None) => {}
        (None, Some(n)) => panic!("not UTF-8 JSON, yet parsed as {n} message(s)"),
        (Some(_), None) => panic!("valid JSON answered as a parse error"),
        (Some(text), Some(n)) => {
            if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
                assert_eq!(n, items.len().max(1), "a batch of {} parsed as {n}", items.len());
            } else {
                assert_eq!(n, 1);
            }
        }
    }
});
