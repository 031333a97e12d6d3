//! How far the reader has read ahead of dispatch: the messages read and not yet taken by the
//! lane, and the bytes of the peer's input held meanwhile (those messages, and progress reports
//! not yet taken by their receivers). The reader pauses on it; whoever takes wakes it.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::Limits;

#[derive(Default)]
pub(crate) struct ReadAhead {
    /// Messages read but not yet taken by the dispatcher.
    queued: AtomicUsize,
    /// Bytes of the peer's input held and not yet taken.
    bytes: AtomicUsize,
    /// Signalled when a message or held bytes are taken (room for a paused reader), and when
    /// the connection ends.
    space: Notify,
}

impl ReadAhead {
    /// A message was queued for the lane.
    pub(crate) fn queued_one(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// The lane took a message: a reader paused on `read_ahead` messages may go on.
    pub(crate) fn took_one(&self, read_ahead: usize) {
        if self.queued.fetch_sub(1, Ordering::AcqRel) >= read_ahead {
            self.space.notify_one();
        }
    }

    /// `bytes` of the peer's input are held until dispatch or a progress receiver takes them.
    pub(crate) fn hold(&self, bytes: usize) {
        self.bytes.fetch_add(bytes, Ordering::AcqRel);
    }

    /// `bytes` held by [`ReadAhead::hold`] were taken: a reader paused on `limit` bytes may go on.
    pub(crate) fn release(&self, bytes: usize, limit: usize) {
        let before = self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        if before >= limit && before - bytes < limit {
            self.space.notify_one();
        }
    }

    /// The messages queued and the bytes held.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.queued.load(Ordering::Acquire), self.bytes.load(Ordering::Acquire))
    }

    /// A message waits for the lane.
    pub(crate) fn any_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire) > 0
    }

    /// As far ahead as the reader may read without a reason to read on.
    pub(crate) fn full(&self, limits: &Limits) -> bool {
        self.queued.load(Ordering::Acquire) >= limits.read_ahead.max(1)
            || self.bytes.load(Ordering::Acquire) >= limits.read_ahead_bytes.max(1)
    }

    /// Room was made, or the connection ended.
    pub(crate) fn space(&self) -> &Notify {
        &self.space
    }
}
