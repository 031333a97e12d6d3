//! A proptest strategy for arbitrary JSON values, shared by the property tests.

use proptest::prelude::*;
use serde_json::Value;

/// Any JSON value up to `depth` levels deep (about `size` nodes, at most `branch` children per
/// array or object), with strings that need escaping (quotes, backslashes, control characters,
/// U+2028, non-ASCII) and floats with a short exact decimal form.
pub(crate) fn json(depth: u32, size: u32, branch: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // serde_json parses these exactly, so a round trip compares equal.
        any::<i32>().prop_map(|n| Value::from(f64::from(n) / 8.0)),
        any::<String>().prop_map(Value::String),
        "[\"\\\\\n\r\t\u{0}\u{1f}\u{2028}é😀 ]{0,12}".prop_map(Value::String),
    ];
    let width = branch as usize;
    leaf.prop_recursive(depth, size, branch, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..width).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..width)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
