//! Compile errors of `#[rpc]`: one file per rule in `tests/ui/`, each with the exact messages
//! and the spans they point at (`.stderr`). Regenerate with `TRYBUILD=overwrite` and read them.

#[test]
fn misuse_is_reported_at_the_users_tokens() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
