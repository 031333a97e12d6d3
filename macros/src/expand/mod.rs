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

/// `#[rpc(args)] input`: the expansion, and every mistake as a compile error.
///
/// A mistake does not take the trait away: the trait is still emitted (without this crate's
/// attributes), and so are the client and the server for the methods that are sound, so that one
/// mistake gives one error instead of a cascade of "cannot find trait" and "cannot find type
/// `{Trait}Server`" wherever the trait and its generated types are used.
pub(crate) fn rpc(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let attrs = TraitAttrs::parse(args, &mut errors);
    let item = match syn::parse2::<ItemTrait>(input.clone()) {
        Ok(item) => item,
        Err(e) => {
            // Not a trait: the item stays as it was written, beside the error.
            errors.push(syn::Error::new(e.span(), format!("#[rpc] applies to a trait ({e})")));
            let errors = compile_errors(errors);
            return quote!(#errors #input);
        }
    };
    let mut model = RpcTrait::from_ast(attrs, item, &mut errors);
    let faulty = crate::check::check(&model, &mut errors);
    let mut faulty = faulty.into_iter();
    model.methods.retain(|_| !faulty.next().unwrap_or(false));

    let rewritten = trait_::expand(&model);
    // The generated types name the trait with no generics: for a generic trait (reported above)
    // they would only add errors of their own.
    let generated = (model.item.generics.params.is_empty() && model.item.generics.where_clause.is_none()).then(|| {
        let client = model.sides.client.then(|| client::expand(&model));
        let server = model.sides.server.then(|| server::expand(&model));
        let describe = openrpc::expand(&model);
        quote! {
            #client
            #server
            #describe
        }
    });
    let errors = compile_errors(errors);
    quote! {
        #errors
        #rewritten
        #generated
    }
}

/// Every recorded error as `compile_error!`s at their spans (nothing when there is none).
fn compile_errors(errors: Errors) -> TokenStream {
    errors.finish().err().map(|e| e.to_compile_error()).unwrap_or_default()
}
