//! The `#[rpc]` attribute of [`jsonrpc-duplex`](https://docs.rs/jsonrpc-duplex). Use it through
//! the facade, `#[jsonrpc_duplex::rpc]`; the facade's crate documentation shows what it
//! generates.
//!
//! Layout: `attr` parses the attribute grammar, `model` turns the trait into data, `check`
//! reports semantic mistakes, `expand/` writes the trait, the client, the server and the
//! description (`openrpc`). Every
//! mistake is collected (`ctxt`) and reported at the user's tokens in one build.

mod attr;
mod case;
mod check;
mod ctxt;
mod error_derive;
mod expand;
mod model;

use proc_macro::TokenStream;

/// Generate a typed client proxy (`{Trait}Client`) and a server dispatcher (`{Trait}Server`)
/// from a trait of `async fn`s; with the facade's `openrpc` feature, also `{Trait}Api`, the
/// trait described for OpenRPC documents and TypeScript modules.
///
/// ```text
/// #[rpc(namespace = "..", separator = "/", rename_all = "camelCase", rename_all_params = "camelCase",
///       params = "positional" | "named" | "object", crate = "::jsonrpc_duplex")]
/// trait T {
///     #[method(name = "..", aliases = [".."], params = "..")]          // a request (the default)
///     async fn m(&self, #[param(rename = "type")] kind: K, cancel: CancellationToken) -> Result<R, E>;
///     #[notification(name = "..", aliases = [".."], params = "..")]    // a notification
///     async fn n(&self, x: X, #[context] peer: OtherClient);
///     fn s(&self, q: Q) -> impl Stream<Item = T> + Send;                // a stream (also `async fn`,
///                                                                      // `Result<impl Stream, E>`, items `Result<T, E>`)
///     async fn p(&self, xs: RpcStream<X>, progress: Progress<P>) -> R;  // a stream argument, progress
/// }
/// ```
///
/// The grammar in full, with a readable expansion, is in the `jsonrpc-duplex` crate docs.
#[proc_macro_attribute]
pub fn rpc(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::rpc(args.into(), input.into()).into()
}

/// `#[derive(RpcErrorType)]`: an error enum whose variants each say their code and message;
/// the value itself travels as the error object's `data`. It implements `RpcErrorType` (a client
/// gets the variant back from an error object with that variant's code and data) and, with the
/// facade's `openrpc` feature, `DescribeErrors` (the OpenRPC `errors`, each variant's doc comment
/// its description; the TypeScript error classes).
///
/// ```text
/// #[derive(Serialize, Deserialize, JsonSchema, RpcErrorType)]
/// #[rpc_error(crate = "::jsonrpc_duplex")]                                    // optional
/// enum E {
///     /// What it means (the OpenRPC description).
///     #[rpc_error(code = -32010, message = "file not found", name = "FileNotFound")] // name: optional
///     NotFound { path: String },
/// }
/// ```
///
/// The crate docs of `jsonrpc-duplex` (`RpcErrorType`) show it in use.
#[proc_macro_derive(RpcErrorType, attributes(rpc_error))]
pub fn derive_rpc_error_type(input: TokenStream) -> TokenStream {
    error_derive::expand(input.into()).into()
}
