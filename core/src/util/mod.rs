//! Helpers every layer may use; they import nothing from the rest of the crate: per-thread
//! buffer and name pools (performance caches, never correctness) and the hashers of the maps.

pub(crate) mod bufpool;
pub(crate) mod hash;
pub(crate) mod names;

/// `value` as a `U` if that is its type, else `value` back (a type test on a generic value,
/// moved out without a box).
#[cfg_attr(not(any(feature = "tcp", all(unix, feature = "unix"))), allow(dead_code))]
pub(crate) fn downcast<U: 'static, T: 'static>(value: T) -> Result<U, T> {
    let mut slot = Some(value);
    let any: &mut dyn std::any::Any = &mut slot;
    if let Some(as_u) = any.downcast_mut::<Option<U>>()
        && let Some(value) = as_u.take()
    {
        return Ok(value);
    }
    match slot {
        Some(value) => Err(value),
        None => unreachable!("only a slot of type `U` is emptied, and then returned"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn downcast_moves_a_value_of_the_type_and_gives_back_any_other() {
        assert_eq!(super::downcast::<String, String>("a".to_owned()), Ok("a".to_owned()));
        assert_eq!(super::downcast::<String, u32>(7), Err(7));
    }
}
