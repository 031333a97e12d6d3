//! `#[derive(RpcErrorType)]`: an error enum written once. Each variant names its code and
//! message (`#[rpc_error(code = -32010, message = "file not found")]`); the value itself is the
//! error object's `data`. From that: `RpcErrorType` (both ways: a client recovers the variant
//! from an error object whose code is that variant's and whose data decodes), and, under the
//! facade's `openrpc` feature, `DescribeErrors` (the OpenRPC `errors`, the TypeScript error
//! classes) with each variant's doc comment as its description.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Data, DeriveInput, Expr, Fields, Lit, LitStr, Path};

use crate::ctxt::Errors;

struct Variant {
    pattern: TokenStream,
    code: Expr,
    message: LitStr,
    name: String,
    docs: String,
}

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let mut krate: Path = syn::parse_quote!(::jsonrpc_duplex);
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("rpc_error")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let path: LitStr = meta.value()?.parse()?;
                krate = path.parse()?;
                Ok(())
            } else {
                Err(meta.error(
                    "unknown key on the enum: `#[rpc_error(crate = \"..\")]` is the only one here; codes and \
                     messages go on each variant: `#[rpc_error(code = -32010, message = \"..\")]`",
                ))
            }
        });
        if let Err(e) = parsed {
            errors.push(e);
        }
    }
    let ident = &input.ident;
    let Data::Enum(data) = &input.data else {
        return syn::Error::new(
            ident.span(),
            "`#[derive(RpcErrorType)]` is for an enum with one variant per error, each with \
             `#[rpc_error(code = .., message = \"..\")]`; for a single error write an enum of one variant",
        )
        .to_compile_error();
    };
    if !input.generics.params.is_empty() {
        errors.spanned(&input.generics, "`#[derive(RpcErrorType)]` does not take generic parameters");
    }
    let mut variants = Vec::new();
    for v in &data.variants {
        let (mut code, mut message, mut name) = (None, None, None);
        let mut found = false;
        for attr in v.attrs.iter().filter(|a| a.path().is_ident("rpc_error")) {
            found = true;
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("code") {
                    code = Some(meta.value()?.parse::<Expr>()?);
                } else if meta.path.is_ident("message") {
                    message = Some(meta.value()?.parse::<LitStr>()?);
                } else if meta.path.is_ident("name") {
                    name = Some(meta.value()?.parse::<LitStr>()?.value());
                } else {
                    return Err(meta.error(
                        "unknown key: a variant takes `code = <i64>`, `message = \"..\"` and optionally \
                         `name = \"..\"` (its name in OpenRPC and TypeScript)",
                    ));
                }
                Ok(())
            });
            if let Err(e) = parsed {
                errors.push(e);
            }
        }
        let (Some(code), Some(message)) = (code, message) else {
            let missing = if found { "needs both `code` and `message`" } else { "needs its code and message" };
            errors.spanned(
                &v.ident,
                format_args!(
                    "the variant `{}` {missing}: add `#[rpc_error(code = -32000, message = \"what went wrong\")]` \
                     (application codes are -32000 to -32099, or any code outside -32768 to -32000)",
                    v.ident
                ),
            );
            continue;
        };
        let vident = &v.ident;
        let pattern = match &v.fields {
            Fields::Unit => quote!(#ident::#vident),
            Fields::Unnamed(_) => quote!(#ident::#vident(..)),
            Fields::Named(_) => quote!(#ident::#vident { .. }),
        };
        variants.push(Variant {
            pattern,
            code,
            message,
            name: name.unwrap_or_else(|| vident.to_string()),
            docs: doc_text(&v.attrs),
        });
    }
    if data.variants.is_empty() {
        errors.spanned(ident, "an error enum needs at least one variant");
    }
    if let Err(e) = errors.finish() {
        return e.to_compile_error();
    }
    let arms = variants.iter().map(|v| {
        let Variant { pattern, code, message, .. } = v;
        quote!(#pattern => (#code, #message))
    });
    let codes = variants.iter().map(|v| {
        let Variant { pattern, code, .. } = v;
        quote!(#pattern => #code)
    });
    let docs = variants.iter().map(|v| {
        let Variant { code, message, name, docs, .. } = v;
        let docs = LitStr::new(docs, Span::call_site());
        quote! {
            #krate::openrpc::ErrorDoc::new(#name, #code, #message)
                .docs(#docs)
                .data::<#ident>(__generator)
        }
    });
    let describe = quote! {
        impl #krate::openrpc::DescribeErrors for #ident {
            fn describe_errors(
                __generator: &mut #krate::openrpc::SchemaGenerator,
            ) -> ::std::vec::Vec<#krate::openrpc::ErrorDoc> {
                ::std::vec![#(#docs),*]
            }
        }
    };
    let span = ident.span();
    quote::quote_spanned! {span=>
        impl #krate::RpcErrorType for #ident {
            fn into_error_object(self) -> #krate::ErrorObject {
                let (__code, __message): (i64, &str) = match &self { #(#arms,)* };
                #krate::ErrorObject::new(__code, __message).with_data(&self)
            }

            fn from_error_object(
                __error: #krate::ErrorObject,
            ) -> ::core::result::Result<Self, #krate::ErrorObject> {
                fn __code_of(__value: &#ident) -> i64 {
                    match __value { #(#codes,)* }
                }
                match __error.data_as::<#ident>() {
                    ::core::option::Option::Some(::core::result::Result::Ok(__value))
                        if __code_of(&__value) == __error.code =>
                    {
                        ::core::result::Result::Ok(__value)
                    }
                    _ => ::core::result::Result::Err(__error),
                }
            }
        }

        #krate::__private::describe! { #describe }
    }
}

/// A variant's doc comment, one leading space off each line.
fn doc_text(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect();
    lines.join("\n").trim().to_owned()
}
