//! Collects the answers to an inbound batch into one array, within the message size limit.

use std::sync::{Arc, Mutex};

use super::host::Host;
use crate::message::bind::UNBOUND;
use crate::message::{ErrorObject, Id, encode_response};

pub(crate) struct Batch {
    host: Arc<dyn Host>,
    state: Mutex<State>,
}

struct State {
    remaining: usize,
    /// The array so far; `None` once it could not be kept within the limit (the batch is then
    /// answered by one error).
    buf: Option<Vec<u8>>,
}

impl Batch {
    /// A batch that will receive `expected` answers (at least one).
    pub(crate) fn new(host: Arc<dyn Host>, expected: usize) -> Arc<Self> {
        Arc::new(Batch { host, state: Mutex::new(State { remaining: expected, buf: Some(vec![b'[']) }) })
    }

    /// Add the encoded answer to request `id`; the last one sends the array.
    ///
    /// The array as a whole stays within the message size limit: an answer that would take it
    /// over is replaced by a `-32603` naming its size, and if even that does not fit, the batch
    /// is answered by one `-32603` with `"id": null` (its answers so far are dropped at once).
    /// `later`: the answer was given from `Drop` (the array, if this completes it, is left to
    /// the writer task).
    pub(crate) fn add(&self, id: &Id, response: &[u8], later: bool) {
        self.complete(Some((id, response)), later);
    }

    /// Count a request that gets no answer at all (cancelled under MCP rules): the array goes
    /// without it, and if nothing is left to send, nothing is sent.
    pub(crate) fn skip(&self) {
        self.complete(None, false);
    }

    fn complete(&self, response: Option<(&Id, &[u8])>, later: bool) {
        let limit = self.host.max_message_size();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.remaining == 0 {
            return;
        }
        state.remaining -= 1;
        if let (Some((id, response)), Some(buf)) = (response, state.buf.as_mut()) {
            // The separator and the closing bracket count too.
            if buf.len() + response.len() + 2 <= limit {
                push(buf, response);
            } else {
                let mut replaced = Vec::with_capacity(160);
                let error = ErrorObject::internal_error(format!(
                    "an answer of {} bytes would take the batch's answer over the limit of {limit} bytes",
                    response.len()
                ));
                encode_response::<()>(&mut replaced, id, Err(&error), UNBOUND);
                if buf.len() + replaced.len() + 2 <= limit {
                    push(buf, &replaced);
                } else {
                    state.buf = None;
                }
            }
        }
        if state.remaining > 0 {
            return;
        }
        let out = match state.buf.take() {
            Some(buf) if buf.len() == 1 => return,
            Some(mut buf) => {
                buf.push(b']');
                buf
            }
            None => {
                tracing::warn!(target: crate::LOG_TARGET, limit, "a batch's answer over the size limit replaced by one error");
                let error = ErrorObject::internal_error(format!(
                    "the answers to this batch do not fit in the limit of {limit} bytes"
                ));
                let mut out = Vec::with_capacity(128);
                encode_response::<()>(&mut out, &Id::Null, Err(&error), UNBOUND);
                out
            }
        };
        drop(state);
        self.host.send_answer(out, later);
    }
}

fn push(buf: &mut Vec<u8>, response: &[u8]) {
    if buf.len() > 1 {
        buf.push(b',');
    }
    buf.extend_from_slice(response);
}
