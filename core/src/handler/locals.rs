//! What a connection keeps for the handlers it runs: one value per key, made on its first use
//! and kept for the connection's life, read after that with plain loads.
//!
//! What `#[rpc]` servers keep here is their service's `Arc`. A server's connections share one
//! router, and the router's handlers one service: a handler future that owned a clone of that
//! `Arc` wrote its count twice a request, a word every worker thread writes (its line moving
//! between the cores each time). Kept here, each connection holds one clone, taken at its first
//! request, and a handler future reaches the service through its [`Responder`](super::Responder),
//! which keeps the connection alive already.
//!
//! An append-only list of [`OnceBox`] links: a value is never moved nor removed while the
//! connection lives, so a reference to it lives as long as a reference to the connection. Two
//! first uses racing for one link: one wins, the other goes on to the next link (`loom_locals_*`
//! below, which fails if the loser stops at a link of another key).

use std::any::Any;
use std::sync::Arc;

use crate::sync::lazy::OnceBox;

/// Shared, so that an `Arc` kept here is a clone of it, with no box of its own.
type Value = Arc<dyn Any + Send + Sync>;

/// The values a connection keeps for its handlers (see the module).
#[derive(Default)]
pub(crate) struct Locals {
    first: OnceBox<Link>,
}

struct Link {
    key: usize,
    value: Value,
    next: OnceBox<Link>,
}

impl Locals {
    /// The value kept under `key`, if any.
    #[inline]
    pub(crate) fn get(&self, key: usize) -> Option<&(dyn Any + Send + Sync)> {
        let mut link = self.first.get();
        while let Some(here) = link {
            if here.key == key {
                return Some(&*here.value);
            }
            link = here.next.get();
        }
        None
    }

    /// The value kept under `key`, made by `make` if there is none yet.
    #[inline]
    pub(crate) fn get_or_insert_with(&self, key: usize, make: impl FnOnce() -> Value) -> &(dyn Any + Send + Sync) {
        match self.get(key) {
            Some(kept) => kept,
            None => self.insert(key, make),
        }
    }

    /// The first use of `key`: its value made and linked (or found, made by a racing first use).
    #[cold]
    #[inline(never)]
    fn insert(&self, key: usize, make: impl FnOnce() -> Value) -> &(dyn Any + Send + Sync) {
        let mut make = Some(make);
        let mut at = &self.first;
        loop {
            let link = at.get_or_init(|| {
                let make = make.take().expect("a link is made at most once here");
                Box::new(Link { key, value: make(), next: OnceBox::new() })
            });
            if link.key == key {
                return &*link.value;
            }
            // Another key here (or a racing first use of another key won this link).
            at = &link.next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_keeps_the_value_made_at_its_first_use() {
        let locals = Locals::default();
        assert!(locals.get(1).is_none());
        let first = locals.get_or_insert_with(1, || Arc::new("one"));
        assert_eq!(first.downcast_ref::<&str>(), Some(&"one"));
        // A second use makes nothing.
        let again = locals.get_or_insert_with(1, || panic!("made twice"));
        assert!(std::ptr::eq(first, again));
        locals.get_or_insert_with(2, || Arc::new(2u32));
        locals.get_or_insert_with(3, || Arc::new(3u64));
        assert_eq!(locals.get(1).and_then(|v| v.downcast_ref::<&str>()), Some(&"one"));
        assert_eq!(locals.get(2).and_then(|v| v.downcast_ref::<u32>()), Some(&2));
        assert_eq!(locals.get(3).and_then(|v| v.downcast_ref::<u64>()), Some(&3));
        assert!(locals.get(4).is_none());
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use super::*;

    /// Two first uses race (of one key, or of two): each finds a value under its key, one key
    /// never has two, and every value made is either kept or dropped unused.
    #[test]
    fn loom_locals_first_uses_racing_each_find_their_value() {
        for keys in [(1, 1), (1, 2)] {
            loom::model(move || {
                let locals = loom::sync::Arc::new(Locals::default());
                let other = {
                    let locals = locals.clone();
                    loom::thread::spawn(move || {
                        let kept = locals.get_or_insert_with(keys.1, || Arc::new(keys.1 * 10 + 1));
                        *kept.downcast_ref::<usize>().unwrap()
                    })
                };
                let mine =
                    *locals.get_or_insert_with(keys.0, || Arc::new(keys.0 * 10)).downcast_ref::<usize>().unwrap();
                let theirs = other.join().unwrap();
                let found = |key| *locals.get(key).unwrap().downcast_ref::<usize>().unwrap();
                assert_eq!(found(keys.0), mine);
                assert_eq!(found(keys.1), theirs);
                if keys.0 == keys.1 {
                    assert_eq!(mine, theirs, "one key, one value");
                }
            });
        }
    }
}
