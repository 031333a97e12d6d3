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

/// A call's method name: borrowed from the frame while the reader works its message on the spot
/// (no copy), else a string that goes back to this thread's pool when dropped.
pub(crate) enum MethodName<'a> {
    Borrowed(&'a str),
    Owned(String),
}

impl MethodName<'_> {
    /// The name as a string of its own (a borrowed one copied into a kept buffer).
    pub(crate) fn into_owned(mut self) -> MethodName<'static> {
        match &mut self {
            MethodName::Borrowed(name) => MethodName::Owned(take(name)),
            // The string moves out; what is dropped here is empty.
            MethodName::Owned(name) => MethodName::Owned(std::mem::take(name)),
        }
    }
}

impl std::ops::Deref for MethodName<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            MethodName::Borrowed(name) => name,
            MethodName::Owned(name) => name,
        }
    }
}

/// The name as a string, borrowed or not.
impl std::fmt::Debug for MethodName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::fmt::Display for MethodName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl Drop for MethodName<'_> {
    fn drop(&mut self) {
        if let MethodName::Owned(name) = self {
            give(std::mem::take(name));
        }
    }
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
        // A borrowed name made owned takes a kept string; dropped, it goes back.
        let owned = MethodName::Borrowed("initialize").into_owned();
        assert_eq!(&*owned, "initialize");
        let ptr = owned.as_ptr();
        drop(owned);
        let next = take("exit");
        assert_eq!(next.as_ptr(), ptr);
        assert_eq!(take(&"y".repeat(100)).len(), 100);
    }
}
