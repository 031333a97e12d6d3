//! Which message is being encoded on this thread.
//!
//! A stream offered to the peer ([`OfferedStream`](crate::stream::OfferedStream)) and a progress
//! token of ours ([`ProgressToken`](crate::progress::ProgressToken)) are plain `Serialize` values
//! that can sit anywhere in params or a result. When one is serialized, it asks this module what
//! it is being written into, and binds itself to it: into a request's params, its state lives until
//! that request is answered (StreamJsonRpc's rule for enumerables passed as arguments); into a
//! result, until the consumer finishes or aborts it. Encoding is synchronous, so a thread-local set
//! around the one `serde_json` call that writes the message is exact.

use std::cell::Cell;

use crate::connection::shared::Shared;

/// What is being encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The params of our request `id` on the connection `conn`.
    Request { conn: usize, id: u64 },
    /// A result this side sends on the connection `conn`.
    Response { conn: usize },
}

thread_local! {
    static CURRENT: Cell<Option<Scope>> = const { Cell::new(None) };
}

/// The identity of a connection, to tell whether a value was made for the connection it is sent on.
pub(crate) fn conn_key(shared: &Shared) -> usize {
    shared as *const Shared as usize
}

impl Scope {
    pub(crate) fn request(shared: &Shared, id: u64) -> Self {
        Scope::Request { conn: conn_key(shared), id }
    }

    pub(crate) fn response(shared: &Shared) -> Self {
        Scope::Response { conn: conn_key(shared) }
    }

    /// The connection this scope belongs to.
    pub(crate) fn conn(self) -> usize {
        match self {
            Scope::Request { conn, .. } | Scope::Response { conn } => conn,
        }
    }
}

/// Run `encode` with `scope` as the current scope (restored afterwards, even on a panic).
pub(crate) fn within<R>(scope: Scope, encode: impl FnOnce() -> R) -> R {
    struct Restore(Option<Scope>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(Some(scope))));
    encode()
}

/// The scope of the message being encoded on this thread, if any.
pub(crate) fn current() -> Option<Scope> {
    CURRENT.with(Cell::get)
}
