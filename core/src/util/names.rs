//! Reused method-name strings: a request's or notification's method is copied out of the frame
//! into a `String` that usually dies a moment later, on the same thread, when its handler is
//! done with it. Instead of being freed, short ones are kept per thread for the next message.

use crate::util::bufpool::{Pool, keep, reuse};

/// Strings kept per thread.
const KEEP: usize = 16;
/// Longer ones are freed, not kept.
const MAX_KEPT_CAPACITY: usize = 64;

thread_local! {
    static NAMES: Pool<String> = const { Pool::new() };
}

/// `name` as an owned string, in a kept buffer when there is one.
pub(crate) fn take(name: &str) -> String {
    if name.len() <= MAX_KEPT_CAPACITY
        && let Some(mut kept) = reuse(&NAMES)
    {
        kept.clear();
        kept.push_str(name);
        return kept;
    }
    name.to_owned()
}

/// Done with a method name: keep it for the next message if it is short and the pool has room.
pub(crate) fn give(name: String) {
    if name.capacity() == 0 || name.capacity() > MAX_KEPT_CAPACITY {
        return;
    }
    drop(keep(&NAMES, name, KEEP));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_name_is_reused_and_long_ones_are_not_kept() {
        let name = take("textDocument/hover");
        let ptr = name.as_ptr();
        give(name);
        let again = take("add");
        assert_eq!(again, "add");
        assert_eq!(again.as_ptr(), ptr, "the kept string is reused");
        give("x".repeat(MAX_KEPT_CAPACITY + 1));
        assert_eq!(take(&"y".repeat(100)).len(), 100);
    }
}
