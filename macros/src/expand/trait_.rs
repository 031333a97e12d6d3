//! The trait itself: each `async fn m(&self, ..) -> T` becomes
//! `fn m(&self, ..) -> impl Future<Output = T> + Send`, so that a server runs on a multi-thread
//! runtime while implementations still write `async fn`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{FnArg, Pat, ReturnType, TraitItem, TraitItemFn};

use crate::model::RpcTrait;

pub(crate) fn expand(t: &RpcTrait) -> TokenStream {
    let mut item = t.item.clone();
    for trait_item in &mut item.items {
        if let TraitItem::Fn(f) = trait_item {
            rewrite(f);
        }
    }
    quote!(#item)
}

fn rewrite(f: &mut TraitItemFn) {
    let Some(async_token) = f.sig.asyncness.take() else { return };
    let span = async_token.span;
    let output = match &f.sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => quote!(#ty),
    };
    f.sig.output = syn::parse_quote_spanned! {span=>
        -> impl ::core::future::Future<Output = #output> + ::core::marker::Send
    };
    match f.default.take() {
        Some(block) => {
            // The default body's future borrows `self`; it is `Send` only if `Self: Sync`.
            f.sig
                .generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote_spanned!(span=> Self: ::core::marker::Sync));
            let body = quote_spanned!(span=> { async move #block });
            f.default = Some(syn::parse_quote!(#body));
        }
        None => {
            // `mut x` is a pattern, which a method without a body may not have; any other pattern
            // was reported already, and becomes `_` so that the trait still compiles.
            for input in &mut f.sig.inputs {
                if let FnArg::Typed(pt) = input {
                    match &mut *pt.pat {
                        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.mutability = None,
                        other => *other = syn::parse_quote!(_),
                    }
                }
            }
        }
    }
}
