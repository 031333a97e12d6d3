//! The trait as data for the `openrpc` feature: `{Trait}Api` and its `Describe` impl, wrapped in
//! the facade's `describe! { .. }`, which drops them when the feature is off. Every type the
//! trait names gets a schema through a probe that falls back to "any value" for types without
//! `JsonSchema`, so turning the feature on never breaks a build.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, Expr, Meta, Type};

use super::client::private;
use crate::attr::{Kind, ParamStyle};
use crate::model::{Method, ReturnKind, RpcTrait, Special};

pub(crate) fn expand(t: &RpcTrait) -> TokenStream {
    let p = private(t);
    let vis = &t.item.vis;
    let trait_ident = &t.item.ident;
    let api = format_ident!("{}Api", trait_ident);
    let name = trait_ident.to_string();
    let docs = doc_exprs(&t.item.attrs);
    let struct_doc = format!(
        " [`{name}`] described (wire names, params, results, typed errors, JSON Schemas) for OpenRPC documents \
         and TypeScript modules: `Document::new(..).service::<{api}>()`."
    );
    let methods = t.methods.iter().map(|m| method(t, m));
    quote! {
        #p::describe! {
            #[doc = #struct_doc]
            #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
            #vis struct #api;

            impl #p::openrpc::Describe for #api {
                fn describe(__generator: &mut #p::openrpc::SchemaGenerator) -> #p::openrpc::Service {
                    #[allow(unused_imports)]
                    use #p::{WithErrors as _, WithSchema as _, WithoutErrors as _, WithoutSchema as _};
                    let mut __service = #p::openrpc::Service::new(#name, &[#(#docs),*]);
                    #(#methods)*
                    __service
                }
            }
        }
    }
}

/// `__service.push(..)` for one method (under the method's `#[cfg]`s).
fn method(t: &RpcTrait, m: &Method) -> TokenStream {
    let p = private(t);
    let o = quote!(#p::openrpc);
    let cfgs = &m.cfgs;
    let wire = &m.name.value;
    let rust = m.ident.to_string();
    let rust = rust.strip_prefix("r#").unwrap_or(&rust);
    let aliases = m.aliases.iter().map(|a| &a.value);
    let docs = doc_exprs(&m.docs);
    let ctor = match m.kind {
        Kind::Request => quote!(request),
        Kind::Notification => quote!(notification),
    };
    let structure = match m.params {
        ParamStyle::Positional => quote!(ByPosition),
        // An object method without params is a named one without params.
        ParamStyle::Object if m.wire_args().next().is_none() => quote!(ByName),
        ParamStyle::Named => quote!(ByName),
        ParamStyle::Object => quote!(Object),
    };
    let params = m.wire_args().map(|(a, key, optional)| {
        let arg = a.ident.to_string();
        let arg = arg.strip_prefix("r#").unwrap_or(&arg);
        match &a.special {
            Special::None => {
                let schema = schema(t, &a.ty);
                let required = !optional;
                quote!(.param(#o::Param::value(#key, #arg, #schema).required(#required)))
            }
            Special::Stream(item) => {
                let schema = schema(t, item);
                quote!(.param(#o::Param::stream(#key, #arg, #schema)))
            }
            Special::Progress(value) => {
                let schema = schema(t, value);
                quote!(.param(#o::Param::progress(#key, #arg, #schema)))
            }
        }
    });
    let (returns, error) = match (&m.kind, &m.ret) {
        (Kind::Notification, _) => (quote!(#o::Returns::Nothing), None),
        (Kind::Request, ReturnKind::Unit) => (quote!(#o::Returns::Unit), None),
        (Kind::Request, ReturnKind::Value(ty)) => {
            let schema = schema(t, ty);
            (quote!(#o::Returns::Value(#schema)), None)
        }
        // `Result<(), E>` answers `null` like a method returning nothing.
        (Kind::Request, ReturnKind::Result { ok, err }) if is_unit(ok) => (quote!(#o::Returns::Unit), Some(&**err)),
        (Kind::Request, ReturnKind::Result { ok, err }) => {
            let schema = schema(t, ok);
            (quote!(#o::Returns::Value(#schema)), Some(&**err))
        }
        (Kind::Request, ReturnKind::Stream(s)) => {
            let schema = schema(t, s.ok_item());
            (quote!(#o::Returns::Stream(#schema)), s.client_err())
        }
    };
    let errors = error.map(|err| quote!(.errors((&#p::Probe::<#err>::NEW).errors(__generator))));
    quote! {
        #(#cfgs)*
        {
            let __method = #o::Method::#ctor(#wire, #rust)
                .aliases(&[#(#aliases),*])
                .docs(&[#(#docs),*])
                .params(#o::ParamStructure::#structure)
                #(#params)*
                .returns(#returns)
                #errors;
            __service.push(__method);
        }
    }
}

fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(t) if t.elems.is_empty())
}

/// The schema of `ty`, or "any value" when it has none.
fn schema(t: &RpcTrait, ty: &Type) -> TokenStream {
    let p = private(t);
    let name = type_name(ty);
    quote!((&#p::Probe::<#ty>::NEW).schema(__generator, &mut __service, #name))
}

/// A type as a person writes it: `Vec<String>`, not `Vec < String >`.
fn type_name(ty: &Type) -> String {
    let spaced = quote!(#ty).to_string();
    let mut out = String::with_capacity(spaced.len());
    let mut chars = spaced.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.peek().copied();
            let tight = |c: Option<char>| matches!(c, Some('<' | '>' | ':' | '&' | '(' | ')' | '[' | ']' | ','));
            if tight(next) || (tight(prev) && prev != Some(',')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The values of `#[doc = ..]` attributes, as expressions (a literal, or `include_str!(..)`).
fn doc_exprs(attrs: &[Attribute]) -> Vec<&Expr> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => Some(&nv.value),
            _ => None,
        })
        .collect()
}
