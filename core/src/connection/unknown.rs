//! Notifications nobody handles: each name is logged at WARN the first time it arrives (a
//! misspelt `textDocument/didchange` shows up once, where people look), then at DEBUG. An
//! extension of the connection: it is told of them through the seam
//! ([`Extension::unrouted`]), like a feature would be.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::value::RawValue;

use super::seam::{Extension, Link};
use super::trace::Tracer;

/// Distinct names remembered per connection; a peer that sends endless new names is logged at
/// DEBUG from then on instead of growing the set.
const MAX_NAMES: usize = 256;
/// Longer names are not remembered (nor a typo): at most 64 KiB of names per connection.
const MAX_NAME_LEN: usize = 256;

pub(crate) struct UnknownNotifications {
    /// Made when the first unknown name arrives: a connection that never sees one (nearly all)
    /// pays only for the lock.
    seen: Mutex<Option<Box<Seen>>>,
    /// How the connection quotes peer input.
    tracer: Tracer,
}

#[derive(Default)]
struct Seen {
    names: HashSet<String>,
    /// `MAX_NAMES` were remembered and that was said.
    full: bool,
}

impl Extension for UnknownNotifications {
    fn unrouted(&self, _link: &dyn Link, method: &str, _params: Option<&RawValue>) {
        self.dropped(method, &self.tracer);
    }

    /// It takes no method of its own.
    fn shadows(&self) -> Option<&'static str> {
        None
    }
}

impl UnknownNotifications {
    pub(crate) fn new(tracer: Tracer) -> Self {
        UnknownNotifications { seen: Mutex::default(), tracer }
    }

    /// Log a notification no route and no fallback took.
    fn dropped(&self, name: &str, tracer: &Tracer) {
        let method = tracer.quote(name);
        // `$/` notifications are optional by LSP's rules: a peer may send them to anyone.
        if name.starts_with(jsonrpc_duplex_names::OPTIONAL_PREFIX) {
            tracing::trace!(target: crate::LOG_TARGET, %method, "unhandled $/ notification ignored");
            return;
        }
        let first = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            let seen = seen.get_or_insert_with(Default::default);
            if name.len() > MAX_NAME_LEN || seen.names.contains(name) || seen.full {
                None
            } else if seen.names.len() < MAX_NAMES {
                seen.names.insert(name.to_owned());
                Some(false)
            } else {
                // Said once, when the set is full.
                seen.full = true;
                Some(true)
            }
        };
        match first {
            Some(false) => tracing::warn!(
                target: crate::LOG_TARGET,
                %method,
                "notification dropped: no route for this method (a misspelt name? further ones are logged at DEBUG)"
            ),
            Some(true) => tracing::warn!(
                target: crate::LOG_TARGET,
                %method,
                limit = MAX_NAMES,
                "notification dropped: no route for this method; too many unknown names, all further ones are logged at DEBUG"
            ),
            None => tracing::debug!(target: crate::LOG_TARGET, %method, "unhandled notification dropped"),
        }
    }
}
