//! The peer's requests not answered yet, by their ids: how a cancellation (or a reused id)
//! finds the request it names, and how a progress report knows its request is still open.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::handler::ReplySlot;
use crate::message::Id;
use crate::sync::lazy::OnceBox;
use crate::util::hash::PeerBuild;

type Map = HashMap<Id, Arc<ReplySlot>, PeerBuild>;

#[derive(Default)]
pub(crate) struct InFlight {
    /// Made by the first request entered (most requests are answered before the reader reads
    /// on, and never enter): a connection that never had one pending holds none of it (56
    /// bytes inline were every connection's).
    map: OnceBox<Mutex<Map>>,
    /// The map's size (stored under its lock): the reader's duplicate check skips the lock
    /// while nothing is in flight.
    len: AtomicUsize,
}

impl InFlight {
    /// The map, made now if it was not.
    fn lock_made(&self) -> MutexGuard<'_, Map> {
        let map = self.map.get_or_init(|| Box::new(Mutex::new(Map::default())));
        // Every critical section is one map operation: a poisoned lock is still consistent.
        map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The map, if any request ever entered it (`None`: none did, so nothing is in flight).
    fn lock(&self) -> Option<MutexGuard<'_, Map>> {
        Some(self.map.get()?.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// `slot`'s request is in flight (once: see [`ReplySlot::mark_registered`]).
    pub(crate) fn enter(&self, slot: &Arc<ReplySlot>) {
        let mut map = self.lock_made();
        if slot.mark_registered() {
            map.insert(slot.id.clone(), slot.clone());
            self.len.store(map.len(), Ordering::Release);
        }
    }

    /// `slot`'s request is answered (unless its id was taken over by a later request).
    pub(crate) fn leave(&self, slot: &ReplySlot) {
        let Some(mut map) = self.lock() else { return };
        if map.get(&slot.id).is_some_and(|c| std::ptr::eq(Arc::as_ptr(c), slot)) {
            map.remove(&slot.id);
            self.len.store(map.len(), Ordering::Release);
        }
    }

    /// `slot`'s request is still in flight.
    pub(crate) fn holds(&self, slot: &Arc<ReplySlot>) -> bool {
        self.lock().is_some_and(|map| map.get(&slot.id).is_some_and(|c| Arc::ptr_eq(c, slot)))
    }

    /// Run `f` while `slot`'s request is held in flight (its answer cannot be sent meanwhile);
    /// `None` when it is not in flight any more.
    pub(crate) fn while_holding<T>(&self, slot: &Arc<ReplySlot>, f: impl FnOnce() -> T) -> Option<T> {
        let map = self.lock()?;
        let held = map.get(&slot.id).is_some_and(|c| Arc::ptr_eq(c, slot));
        held.then(f)
    }

    /// The request in flight under `id`.
    pub(crate) fn get(&self, id: &Id) -> Option<Arc<ReplySlot>> {
        self.lock()?.get(id).cloned()
    }

    /// A request is in flight under `id` (without the lock while none is).
    pub(crate) fn contains(&self, id: &Id) -> bool {
        self.any() && self.lock().is_some_and(|map| map.contains_key(id))
    }

    /// Any request is in flight.
    pub(crate) fn any(&self) -> bool {
        self.len.load(Ordering::Acquire) > 0
    }
}
