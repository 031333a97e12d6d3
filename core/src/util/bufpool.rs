//! Reused message buffers: a message is encoded into a buffer, queued, copied into the writer's
//! batch and then no longer needed; instead of being freed it is kept (per thread, a few small
//! ones) for the next message encoded on that thread. With a writer that writes from the
//! encoding task (see [`super::outbound`]), the buffer comes back to the thread that takes it
//! next, and a call or an answer costs no allocation for its body.

use std::cell::RefCell;
use std::thread::LocalKey;

use bytes::BytesMut;

/// Buffers kept per thread.
const KEEP: usize = 16;
/// Larger buffers are freed, not kept (an idle thread holds at most `KEEP` × this).
const MAX_KEPT_CAPACITY: usize = 4 * 1024;
/// The capacity a new buffer starts with.
const FRESH_CAPACITY: usize = 256;

/// Byte buffers (a reader's read buffer, a writer's batch) kept per thread.
const KEEP_BYTES: usize = 8;
/// Larger byte buffers are freed, not kept (an idle thread holds at most `KEEP_BYTES` × this).
const MAX_KEPT_BYTES: usize = 32 * 1024;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static BYTES: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// Something kept in a per-thread `pool`, if there is (none while the thread is being torn down).
pub(crate) fn reuse<T: 'static>(pool: &'static LocalKey<RefCell<Vec<T>>>) -> Option<T> {
    pool.try_with(|p| p.borrow_mut().pop()).ok().flatten()
}

/// Keep `item` in a per-thread `pool` unless it holds `keep` already.
pub(crate) fn keep<T: 'static>(pool: &'static LocalKey<RefCell<Vec<T>>>, item: T, keep: usize) {
    let _ = pool.try_with(|p| {
        let mut pool = p.borrow_mut();
        if pool.len() < keep {
            pool.push(item);
        }
    });
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
    keep(&POOL, buf, KEEP);
}

/// An empty byte buffer with room for at least `min` bytes: one this thread kept if there is.
/// A connection takes one only while it has bytes to read or write, and gives it back with
/// [`give_bytes`] once they are consumed or written, so an idle connection holds none.
pub(crate) fn take_bytes(min: usize) -> BytesMut {
    match reuse(&BYTES) {
        Some(mut buf) => {
            buf.reserve(min);
            buf
        }
        None => BytesMut::with_capacity(min),
    }
}

/// Done with `buf` (its bytes are consumed or written): keep it for the next connection on this
/// thread if it is not too large and the pool is not full; otherwise free it.
pub(crate) fn give_bytes(mut buf: BytesMut) {
    if buf.capacity() == 0 || buf.capacity() > MAX_KEPT_BYTES {
        return;
    }
    buf.clear();
    keep(&BYTES, buf, KEEP_BYTES);
}

#[cfg(test)]
mod tests {
    use super::*;

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
        give_bytes(BytesMut::with_capacity(MAX_KEPT_BYTES + 1));
        assert!(take_bytes(1).capacity() <= MAX_KEPT_BYTES);
    }
}
