//! A handle that does not keep its connection alive: what a feature keeps to call the peer
//! later (a feature's state lives as long as its connection, so a strong [`Handle`] in it would
//! keep a closed connection from ever being freed).

use std::fmt;
use std::sync::{Arc, Weak};

use super::Handle;
use super::shared::Shared;

/// A [`Handle`] that does not keep its connection alive ([`Handle::downgrade`],
/// [`Start::handle`](crate::seam::Start::handle)): [`WeakHandle::upgrade`] gives the handle while
/// the connection is still held by somebody (its [`Connection`](super::Connection), a task of
/// its own, a [`Handle`]), and `None` once it has been freed.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, transport::memory};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (client, server) = memory::pair(Connection::builder(), Connection::builder());
/// let weak = client.handle().downgrade();
/// // While the connection is open, the weak handle gives its handle.
/// weak.upgrade().expect("open").notify("hello", ()).await?;
/// # drop((client, server));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct WeakHandle(Weak<Shared>);

impl WeakHandle {
    pub(crate) fn new(shared: Weak<Shared>) -> Self {
        WeakHandle(shared)
    }

    /// The connection's handle, unless the connection has been freed.
    pub fn upgrade(&self) -> Option<Handle> {
        self.0.upgrade().map(Handle::new)
    }

    /// What a feature counts its values waiting to be bound with (see
    /// [`Unbound`](super::seam::Unbound)).
    pub(crate) fn unbound(&self) -> UnboundCount {
        UnboundCount(self.0.clone())
    }
}

/// A feature's hold on its connection's count of values waiting to be bound
/// ([`Unbound`](super::seam::Unbound), kept in the connection's shared state): weak, like the
/// feature's handle. Once the connection is freed nothing reads the count, so a value armed or
/// disarmed then counts nowhere. Values are armed and disarmed rarely (an offered stream, a
/// progress token), so the upgrade each costs is paid off the per-message path, which reads the
/// count in place.
#[derive(Clone)]
pub(crate) struct UnboundCount(Weak<Shared>);

impl UnboundCount {
    /// A value waits to be bound.
    pub(crate) fn arm(&self) {
        if let Some(shared) = self.0.upgrade() {
            shared.unbound.arm();
        }
    }

    /// A value that waited is bound, or gone (once per [`UnboundCount::arm`] that counted).
    pub(crate) fn disarm(&self) {
        if let Some(shared) = self.0.upgrade() {
            shared.unbound.disarm();
        }
    }
}

impl fmt::Debug for WeakHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakHandle").field("alive", &(self.0.strong_count() > 0)).finish()
    }
}

impl Handle {
    /// A handle that does not keep the connection alive (for state that lives as long as the
    /// connection, such as a feature's [`Extension`](crate::seam::Extension)).
    pub fn downgrade(&self) -> WeakHandle {
        WeakHandle(Arc::downgrade(&self.shared))
    }
}
