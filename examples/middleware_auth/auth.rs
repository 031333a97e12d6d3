//! The auth layer of the `middleware_auth` example (its test takes this file too).

use jsonrpc_duplex::middleware::{BoxFuture, Call, Middleware, Next, Outcome, refuse};
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{ErrorObject, PeerInfo};

/// Who the peer is, for the handlers (`ctx.extensions().get::<Identity>()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Identity {
    /// A Unix domain socket peer running as this user.
    User(u32),
    /// A TCP peer on this machine.
    Loopback,
}

/// Refuses every inbound call before its handler runs unless the peer is a Unix socket peer
/// whose user is allowed, or a TCP peer on the loopback interface (when allowed).
#[derive(Clone, Debug, Default)]
pub(crate) struct Allow {
    /// Unix users (uids) that may call.
    pub(crate) uids: Vec<u32>,
    /// Whether TCP peers on 127.0.0.1 / ::1 may call.
    pub(crate) loopback: bool,
}

impl Allow {
    fn identify(&self, peer: &PeerInfo) -> Option<Identity> {
        if let Some(cred) = peer.credentials() {
            return self.uids.contains(&cred.uid).then_some(Identity::User(cred.uid));
        }
        match peer.addr()? {
            PeerAddr::Tcp(addr) if self.loopback && addr.ip().is_loopback() => Some(Identity::Loopback),
            _ => None,
        }
    }
}

impl Middleware for Allow {
    fn call(&self, mut call: Call, next: Next) -> BoxFuture<Outcome> {
        if !call.is_inbound() {
            return next.run(call);
        }
        match self.identify(call.peer()) {
            Some(who) => {
                call.extensions_mut().insert(who);
                next.run(call)
            }
            None => {
                let peer = call.peer().addr().map_or("an unknown peer".to_owned(), |a| a.to_string());
                let error = ErrorObject::new(-32003, format!("{peer} may not call {}", call.method()));
                Box::pin(std::future::ready(refuse(error)))
            }
        }
    }
}
