//! The switch between `#[rpc]` and the `openrpc` feature. The macro cannot see this crate's
//! features, so it wraps what it writes for OpenRPC (`{Trait}Api` and its `Describe` impl) in
//! `__private::describe! { .. }`, which keeps it when the feature is on and drops it otherwise:
//! without the feature, traits cost nothing and their types need no JSON Schema.

/// Keeps its input: the `openrpc` feature is on.
#[cfg(feature = "openrpc")]
#[doc(hidden)]
#[macro_export]
macro_rules! __jsonrpc_duplex_describe {
    ($($item:tt)*) => { $($item)* };
}

/// Drops its input: the `openrpc` feature is off.
#[cfg(not(feature = "openrpc"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __jsonrpc_duplex_describe {
    ($($item:tt)*) => {};
}
