//! Collects the answers to an inbound batch into one array.

use std::sync::{Arc, Mutex};

use crate::connection::shared::Shared;

pub(crate) struct Batch {
    shared: Arc<Shared>,
    state: Mutex<State>,
}

struct State {
    remaining: usize,
    buf: Vec<u8>,
}

impl Batch {
    /// A batch that will receive `expected` answers (at least one).
    pub(crate) fn new(shared: Arc<Shared>, expected: usize) -> Arc<Self> {
        Arc::new(Batch { shared, state: Mutex::new(State { remaining: expected, buf: vec![b'['] }) })
    }

    /// Add one encoded answer; the last one sends the array.
    pub(crate) fn add(&self, response: &[u8]) {
        self.complete(Some(response));
    }

    /// Count a request that gets no answer at all (cancelled under MCP rules): the array goes
    /// without it, and if nothing is left to send, nothing is sent.
    pub(crate) fn skip(&self) {
        self.complete(None);
    }

    fn complete(&self, response: Option<&[u8]>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.remaining == 0 {
            return;
        }
        if let Some(response) = response {
            if state.buf.len() > 1 {
                state.buf.push(b',');
            }
            state.buf.extend_from_slice(response);
        }
        state.remaining -= 1;
        if state.remaining == 0 && state.buf.len() > 1 {
            let mut buf = std::mem::take(&mut state.buf);
            buf.push(b']');
            let _ = self.shared.outbound.send_now(buf);
        }
    }
}
