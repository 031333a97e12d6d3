//! Code generation: the rewritten trait, the client proxy and the server dispatcher.
//!
//! Generated code reaches the runtime only through `<crate>::__private`, the facade's hidden and
//! stable path, so users depend on the facade alone.

mod client;
mod openrpc;
mod server;
mod trait_;

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemTrait;

use crate::attr::TraitAttrs;
use crate::ctxt::Errors;
use crate::model::RpcTrait;

/// `#[rpc(args)] input`: every mistake as one combined error, or the expansion.
pub(crate) fn rpc(args: TokenStream, input: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let attrs = TraitAttrs::parse(args, &mut errors);
    let item = match syn::parse2::<ItemTrait>(input) {
        Ok(item) => item,
        Err(e) => {
            errors.push(syn::Error::new(e.span(), format!("#[rpc] applies to a trait ({e})")));
            return errors.finish().map(|()| TokenStream::new());
        }
    };
    let model = RpcTrait::from_ast(attrs, item, &mut errors);
    crate::check::check(&model, &mut errors);
    errors.finish()?;

    let rewritten = trait_::expand(&model);
    let client = model.sides.client.then(|| client::expand(&model));
    let server = model.sides.server.then(|| server::expand(&model));
    let describe = openrpc::expand(&model);
    Ok(quote! {
        #rewritten
        #client
        #server
        #describe
    })
}
