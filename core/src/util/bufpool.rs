//! Reused message buffers: a message is encoded into a buffer, queued, copied into the writer's
//! batch and then no longer needed; instead of being freed it is kept (per thread, a few small
//! ones) for the next message encoded on that thread. With a writer that writes from the
//! encoding task (see [`super::outbound`]), the buffer comes back to the thread that takes it
//! next, and a call or an answer costs no allocation for its body.

use std::cell::{Cell, RefCell};
use std::thread::LocalKey;

use bytes::BytesMut;

/// Buffers kept per thread.
const KEEP: usize = 16;
/// Larger buffers are freed, not kept (an idle thread holds at most `KEEP` × this).
const MAX_KEPT_CAPACITY: usize = 4 * 1024;
/// The capacity a new buffer starts with.
const FRESH_CAPACITY: usize = 256;

/// Byte buffers (a reader's read buffer, a writer's batch) kept per thread (and one more in the
/// read slot, see [`take_read`]).
const KEEP_BYTES: usize = 8;
/// Larger byte buffers are freed, not kept.
const MAX_KEPT_BYTES: usize = 32 * 1024;
/// The byte buffers a thread keeps hold at most this many bytes in all (the read slot's aside):
/// a burst on many connections at once leaves many grown buffers to give back at the end, and
/// a thread keeps a few of them, not `KEEP_BYTES` × `MAX_KEPT_BYTES`.
const MAX_HELD_BYTES: usize = 64 * 1024;

thread_local! {
    static POOL: Pool<Vec<u8>> = const { Pool::new() };
    static BYTES: Pool<Box<BytesMut>> = const { Pool::new() };
    /// The capacity of the buffers `BYTES` holds, in all.
    static BYTES_HELD: Cell<usize> = const { Cell::new(0) };
    /// The read buffer a reader on this thread gave back last (see [`take_read`]).
    static READ: Cell<Option<Box<BytesMut>>> = const { Cell::new(None) };
}

/// A per-thread pool: what was given back last in a slot of its own, the rest in a list. A
/// message's buffer is most often taken and given back again before the next is taken, so the
/// common take and give touch the slot alone (a move each; no borrow of the list, no push or
/// pop: 10 to 25 instructions fewer per take and give under callgrind).
pub(crate) struct Pool<T> {
    last: Cell<Option<T>>,
    rest: RefCell<Vec<T>>,
}

impl<T> Pool<T> {
    pub(crate) const fn new() -> Self {
        Pool { last: Cell::new(None), rest: RefCell::new(Vec::new()) }
    }
}

/// Something kept in a per-thread `pool`, if there is (none while the thread is being torn down):
/// the one given back last.
pub(crate) fn reuse<T: 'static>(pool: &'static LocalKey<Pool<T>>) -> Option<T> {
    pool.try_with(|p| p.last.take().or_else(|| p.rest.borrow_mut().pop())).ok().flatten()
}

/// Keep `item` in a per-thread `pool`, which holds at most `keep`; when it is full, the one
/// given back before `item` is let go, and returned.
pub(crate) fn keep<T: 'static>(pool: &'static LocalKey<Pool<T>>, item: T, keep: usize) -> Option<T> {
    pool.try_with(|p| {
        let before = p.last.replace(Some(item))?;
        let mut rest = p.rest.borrow_mut();
        if rest.len() + 1 < keep {
            rest.push(before);
            return None;
        }
        Some(before)
    })
    .ok()
    .flatten()
}

/// An empty buffer with room for at least `min` bytes.
pub(crate) fn take(min: usize) -> Vec<u8> {
    match reuse(&POOL) {
        Some(mut buf) => {
            buf.reserve(min);
            buf
        }
        None => Vec::with_capacity(min.max(FRESH_CAPACITY)),
    }
}

/// Done with `buf`: keep it for the next message if it is small and the pool is not full.
pub(crate) fn give(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > MAX_KEPT_CAPACITY {
        return;
    }
    buf.clear();
    drop(keep(&POOL, buf, KEEP));
}

/// An empty byte buffer with room for at least `min` bytes: one this thread kept if there is.
/// A connection takes one only while it has bytes to read or write, and gives it back with
/// [`give_bytes`] once they are consumed or written, so an idle connection holds none.
///
/// Boxed, for the reason [`take_read`] gives: a buffer handed between the queue, the writer
/// and this pool moves as a pointer.
pub(crate) fn take_bytes(min: usize) -> Box<BytesMut> {
    match reuse(&BYTES) {
        Some(mut buf) => {
            let _ = BYTES_HELD.try_with(|held| held.set(held.get() - buf.capacity()));
            buf.reserve(min);
            buf
        }
        None => Box::new(BytesMut::with_capacity(min)),
    }
}

/// Done with `buf` (its bytes are consumed or written): keep it for the next connection on this
/// thread if it is not too large and the pool is not full; otherwise free it.
#[inline]
pub(crate) fn give_bytes(buf: Box<BytesMut>) {
    if buf.capacity() != 0 {
        give_held(buf);
    }
}

fn give_held(mut buf: Box<BytesMut>) {
    let capacity = buf.capacity();
    let held = BYTES_HELD.try_with(Cell::get).unwrap_or(usize::MAX);
    if capacity > MAX_KEPT_BYTES || held.saturating_add(capacity) > MAX_HELD_BYTES {
        return;
    }
    buf.clear();
    let let_go = keep(&BYTES, buf, KEEP_BYTES).map_or(0, |before| before.capacity());
    let _ = BYTES_HELD.try_with(|held| held.set(held.get() + capacity - let_go));
}

/// A read buffer with room for at least `min` bytes: the one a reader on this thread gave back
/// last with [`give_read`], else one from the pool with room for `fresh` (at least `min`).
///
/// A reader gives its buffer back every time it finds nothing to read (an idle connection holds
/// none), and takes one again as soon as it is woken: on a busy thread that is once per message.
/// This one-buffer slot makes the round trip a swap (no borrow flag, no list, and no reclaiming
/// of the consumed front while it has room), where the pool costs several times that.
///
/// The buffer is boxed, and the box goes back and forth with it: a take and a give move a
/// pointer. Moved by value, the buffer's 32 bytes were copied in 16-byte loads from the 8-byte
/// stores that had just written them, which the CPU cannot forward (a stall at each, the
/// hottest instructions of the reader's frame loop under `perf record`).
#[inline]
pub(crate) fn take_read(min: usize, fresh: usize) -> Box<BytesMut> {
    match READ.try_with(Cell::take) {
        Ok(Some(mut buf)) => {
            if buf.capacity() < min {
                // Short of room: reclaims the consumed front (no allocation) when that makes
                // enough, else grows.
                buf.reserve(fresh.max(min));
            }
            buf
        }
        _ => take_bytes(fresh.max(min)),
    }
}

/// Done with a reader's emptied buffer (see [`take_read`]): it waits in this thread's slot for
/// the next reader woken here; the one it displaces goes to the pool.
#[inline]
pub(crate) fn give_read(buf: Box<BytesMut>) {
    debug_assert!(buf.is_empty());
    if buf.capacity() == 0 || buf.capacity() > MAX_KEPT_BYTES {
        return;
    }
    if let Ok(Some(displaced)) = READ.try_with(|slot| slot.replace(Some(buf))) {
        give_held(displaced);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;

    #[test]
    fn a_given_buffer_comes_back_empty_and_large_ones_are_not_kept() {
        let mut buf = take(10);
        buf.extend_from_slice(b"hello");
        let ptr = buf.as_ptr();
        give(buf);
        let again = take(10);
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), ptr, "the kept buffer is reused");
        give(Vec::with_capacity(MAX_KEPT_CAPACITY + 1));
        let fresh = take(1);
        assert!(fresh.capacity() <= MAX_KEPT_CAPACITY);
    }

    #[test]
    fn byte_buffers_come_back_empty_and_large_ones_are_freed() {
        let mut buf = take_bytes(100);
        buf.extend_from_slice(b"hello");
        let ptr = buf.as_ptr();
        give_bytes(buf);
        let again = take_bytes(100);
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), ptr, "the kept buffer is reused");
        give_bytes(Box::new(BytesMut::with_capacity(MAX_KEPT_BYTES + 1)));
        assert!(take_bytes(1).capacity() <= MAX_KEPT_BYTES);
    }

    #[test]
    fn a_thread_keeps_a_bounded_number_of_bytes() {
        // A burst on many connections gives back many grown buffers at its end.
        let given: Vec<_> = (0..KEEP_BYTES).map(|_| Box::new(BytesMut::with_capacity(20 * 1024))).collect();
        for buf in given {
            give_bytes(buf);
        }
        let held = BYTES_HELD.with(Cell::get);
        assert!(held <= MAX_HELD_BYTES, "{held} bytes kept");
        assert!(held >= 2 * 20 * 1024, "some are kept: {held}");
        // Taken back, they are counted out.
        let mut taken = Vec::new();
        while BYTES_HELD.with(Cell::get) > 0 {
            taken.push(take_bytes(1));
            assert!(taken.len() <= KEEP_BYTES, "the count went wrong");
        }
        assert!(BYTES.with(|p| p.rest.borrow().is_empty()));
    }

    #[test]
    fn a_read_buffer_comes_back_through_the_slot_and_a_displaced_one_goes_to_the_pool() {
        let mut first = take_read(1024, 4096);
        assert!(first.capacity() >= 1024);
        first.extend_from_slice(b"{}\n");
        first.clear();
        let first_ptr = first.as_ptr();
        give_read(first);
        let second = Box::new(BytesMut::with_capacity(2048));
        let second_ptr = second.as_ptr();
        give_read(second);
        // The slot holds the last one given; the one before it went to the pool.
        let again = take_read(1024, 4096);
        assert_eq!(again.as_ptr(), second_ptr);
        assert!(again.is_empty());
        assert_eq!(take_bytes(1024).as_ptr(), first_ptr);
        // Its consumed front is reclaimed once it is short of room for what is asked.
        let mut used = take_read(1024, 4096);
        let ptr = used.as_ptr();
        let total = used.capacity();
        used.extend_from_slice(&vec![b' '; total - 100]);
        used.advance(total - 100);
        assert!(used.capacity() < 1024);
        give_read(used);
        let reclaimed = take_read(1024, 4096);
        assert_eq!(reclaimed.capacity(), total, "the whole buffer is at hand again");
        assert_eq!(reclaimed.as_ptr(), ptr, "without a new allocation");
        assert!(READ.with(Cell::take).is_none());
        // Too large to keep: freed.
        give_read(Box::new(BytesMut::with_capacity(MAX_KEPT_BYTES + 1)));
        assert!(READ.with(Cell::take).is_none());
    }
}
