//! The client proxy: `EditorClient::new(handle)`, one typed method per trait method, each a call
//! through the core's public `Handle::request_with` / `Handle::notify`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Index;
use syn::spanned::Spanned;

use crate::attr::{Kind, ParamStyle};
use crate::model::{Arg, Method, ReturnKind, RpcTrait, Special};

pub(crate) fn expand(t: &RpcTrait) -> TokenStream {
    let p = private(t);
    let vis = &t.item.vis;
    let client = &t.client;
    let trait_name = t.item.ident.to_string();
    let struct_doc = format!(
        " A typed client of [`{trait_name}`]: one method per trait method, each a call to the peer over a \
         connection handle."
    );
    let methods = t.methods.iter().map(|m| method(t, m));
    quote! {
        #[doc = #struct_doc]
        #[doc = ""]
        #[doc = " Every call can be given a timeout or a cancellation token with `with_options`."]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        #vis struct #client {
            handle: #p::Handle,
            options: #p::CallOptions,
        }

        #[allow(dead_code)]
        impl #client {
            /// A client that calls the peer of this connection handle.
            #[must_use]
            #vis fn new(handle: #p::Handle) -> Self {
                Self { handle, options: ::core::default::Default::default() }
            }

            /// The same client with options (a timeout, a cancellation token) for every call made
            /// through the copy: `client.with_options(CallOptions::new().timeout(t)).method(..)`.
            #[must_use]
            #vis fn with_options(&self, options: #p::CallOptions) -> Self {
                Self { handle: ::core::clone::Clone::clone(&self.handle), options }
            }

            /// The options every call through this client uses (to extend them:
            /// `client.with_options(client.options().clone().cancel(token))`).
            #vis fn options(&self) -> &#p::CallOptions {
                &self.options
            }

            /// The connection handle this client calls through.
            #vis fn handle(&self) -> &#p::Handle {
                &self.handle
            }

            #(#methods)*
        }

        impl ::core::convert::From<#p::Handle> for #client {
            fn from(handle: #p::Handle) -> Self {
                Self::new(handle)
            }
        }

        impl #p::FromRequestContext for #client {
            fn from_request_context(cx: &#p::RequestContext) -> Self {
                Self::new(cx.peer())
            }
        }

        impl #p::FromNotificationContext for #client {
            fn from_notification_context(cx: &#p::NotificationContext) -> Self {
                Self::new(cx.peer())
            }
        }
    }
}

/// The facade's hidden runtime path.
pub(super) fn private(t: &RpcTrait) -> TokenStream {
    let krate = &t.krate;
    quote!(#krate::__private)
}

fn method(t: &RpcTrait, m: &Method) -> TokenStream {
    let p = private(t);
    let vis = &t.item.vis;
    let ident = &m.ident;
    let docs = &m.docs;
    let cfgs = &m.cfgs;
    let name = &m.name.value;
    let wire_doc = wire_doc(m);
    let sep = (!docs.is_empty()).then(|| quote!(#[doc = ""]));
    let args = m.wire_args().map(|(a, _, _)| {
        let ident = &a.ident;
        let ty = caller_type(t, a);
        quote!(#ident: #ty)
    });
    let (prelude, params) = params(t, m);
    let specials = specials(t, m);
    let prelude = quote!(#(#specials)* #prelude);
    let options = quote!(::core::clone::Clone::clone(&self.options));
    if let (Kind::Request, ReturnKind::Stream(s)) = (m.kind, &m.ret) {
        let item = s.ok_item();
        let err = s.client_err().map_or_else(|| quote!(#p::RpcError), |e| quote!(#e));
        let request = quote_spanned!(item.span()=> #p::request_stream::<#item, #err, _>);
        return quote! {
            #(#cfgs)*
            #(#docs)*
            #sep
            #[doc = #wire_doc]
            #vis fn #ident(&self, #(#args),*) -> #p::RpcStream<#item, #err> {
                #prelude
                #request(&self.handle, #name, #params, #options)
            }
        };
    }
    match m.kind {
        Kind::Notification => quote! {
            #(#cfgs)*
            #(#docs)*
            #sep
            #[doc = #wire_doc]
            #vis async fn #ident(&self, #(#args),*) -> ::core::result::Result<(), #p::ClientError> {
                #prelude
                self.handle.notify(#name, #params).await.map_err(#p::ClientError::from)
            }
        },
        Kind::Request => {
            let (ok, err) = match &m.ret {
                ReturnKind::Unit => (quote!(()), quote!(#p::RpcError)),
                ReturnKind::Value(ty) => (quote!(#ty), quote!(#p::RpcError)),
                ReturnKind::Result { ok, err } => (quote!(#ok), quote!(#err)),
                ReturnKind::Stream(_) => unreachable!("streaming requests are expanded above"),
            };
            // Bounds on the result and error types are checked at the user's tokens.
            let (ok_span, err_span) = match &m.ret {
                ReturnKind::Unit => (ident.span(), ident.span()),
                ReturnKind::Value(ty) => (ty.span(), ident.span()),
                ReturnKind::Result { ok, err } => (ok.span(), err.span()),
                ReturnKind::Stream(_) => unreachable!("streaming requests are expanded above"),
            };
            // The client's options borrowed, not cloned into the call's future.
            let call = quote!(self.handle.call_raw(#name, #params, &self.options));
            // Reports reach the callback in order, all before the call returns.
            let call = if m.args.iter().any(|a| matches!(a.special, Special::Progress(_))) {
                quote!(__progress.drive(#call, __on_progress).await)
            } else {
                quote!(#call.await)
            };
            let errors = quote_spanned!(err_span=> #p::client_result::<#err>);
            let decode = quote_spanned!(ok_span=> #p::decode_result::<#ok, #err>);
            quote! {
                #(#cfgs)*
                #(#docs)*
                #sep
                #[doc = #wire_doc]
                #vis async fn #ident(&self, #(#args),*) -> ::core::result::Result<#ok, #p::ClientError<#err>> {
                    #prelude
                    let __raw = #errors(#call)?;
                    #decode(&__raw)
                }
            }
        }
    }
}

/// `self.N` for the params struct, spanned at the argument's type so that a missing `Serialize`
/// is reported there.
fn field_index(i: usize, ty: &syn::Type) -> Index {
    Index { index: i as u32, span: ty.span() }
}

/// One line saying what goes on the wire, so the generated docs answer "what does this send?".
fn wire_doc(m: &Method) -> String {
    let what = match m.kind {
        Kind::Request => "Sends the request",
        Kind::Notification => "Sends the notification",
    };
    let params = if m.wire_args().next().is_none() {
        "without params".to_owned()
    } else {
        format!("with params {}", m.params.describe())
    };
    let mut line = format!(" {what} `{}` {params}", m.name.value);
    if m.kind == Kind::Notification {
        line.push_str("; returns once it is queued");
    }
    if matches!(m.ret, ReturnKind::Stream(_)) {
        line.push_str(
            " when the returned stream is first polled; its result is a stream, pulled with `$/enumerator/next` as \
             the returned stream is polled (dropped early: `$/enumerator/abort`)",
        );
    }
    for arg in &m.args {
        match arg.special {
            Special::Stream(_) => line.push_str(&format!(
                "; `{}` is offered as a stream the peer pulls until the request is answered",
                arg.ident
            )),
            Special::Progress(_) if m.params == ParamStyle::Object => line.push_str(&format!(
                "; `{}` is called with each progress report, all before the call returns (the token travels inside \
                 the params object, where the connection's profile puts it: MCP's `_meta.progressToken`, LSP's \
                 `workDoneToken`)",
                arg.ident
            )),
            Special::Progress(_) => line.push_str(&format!(
                "; `{}` is called with each `$/progress` report, all before the call returns",
                arg.ident
            )),
            Special::None => {}
        }
    }
    line.push('.');
    line
}

/// Statements that prepare the params, and the expression passed as them.
fn params(t: &RpcTrait, m: &Method) -> (TokenStream, TokenStream) {
    let p = private(t);
    let wire: Vec<_> = m.wire_args().collect();
    if wire.is_empty() {
        // `()` serializes to `null`: the request then has no `params` member at all.
        return (TokenStream::new(), quote!(&()));
    }
    if m.params == ParamStyle::Object {
        let object = wire.iter().find(|(a, _, _)| !matches!(a.special, Special::Progress(_)));
        if let Some((arg, _, _)) = object {
            let ident = &arg.ident;
            return match m.progress_in_object() {
                // The token (the progress argument, shadowed) goes inside the object.
                Some(progress) => {
                    let token = &progress.ident;
                    (TokenStream::new(), quote!(&#token.in_params(&#ident)))
                }
                None => (TokenStream::new(), quote!(&#ident)),
            };
        }
    }
    let n = wire.len();
    let tys = wire.iter().map(|(a, _, _)| wire_type(t, a));
    let idents = wire.iter().map(|(a, _, _)| &a.ident);
    let ser = quote!(#p::serde::ser);
    let body = match m.params {
        ParamStyle::Named => {
            let optional = wire.iter().enumerate().filter(|(_, (_, _, opt))| *opt).map(|(i, _)| Index::from(i));
            let fields = wire.iter().enumerate().map(|(i, (a, key, opt))| {
                let i = field_index(i, &a.ty);
                let field = quote_spanned!(a.ty.span()=> __map.serialize_field(#key, self.#i)?;);
                if *opt {
                    quote! {
                        if ::core::option::Option::is_some(self.#i) {
                            #field
                        } else {
                            __map.skip_field(#key)?;
                        }
                    }
                } else {
                    field
                }
            });
            quote! {
                use #ser::SerializeStruct as _;
                let __len = #n #(- usize::from(::core::option::Option::is_none(self.#optional)))*;
                let mut __map = #p::serde::Serializer::serialize_struct(__serializer, "params", __len)?;
                #(#fields)*
                __map.end()
            }
        }
        _ => {
            let elements = wire.iter().enumerate().map(|(i, (a, _, _))| {
                let i = field_index(i, &a.ty);
                quote_spanned!(a.ty.span()=> __seq.serialize_element(self.#i)?;)
            });
            quote! {
                use #ser::SerializeTuple as _;
                let mut __seq = #p::serde::Serializer::serialize_tuple(__serializer, #n)?;
                #(#elements)*
                __seq.end()
            }
        }
    };
    let prelude = quote! {
        struct __RpcParams<'__rpc>(#(&'__rpc #tys,)*);
        impl #p::serde::Serialize for __RpcParams<'_> {
            fn serialize<__S>(&self, __serializer: __S) -> ::core::result::Result<__S::Ok, __S::Error>
            where
                __S: #p::serde::Serializer,
            {
                #body
            }
        }
        let __params = __RpcParams(#(&#idents,)*);
    };
    (prelude, quote!(&__params))
}

/// The type the caller passes for an argument: a local stream for an `RpcStream<T>`, a callback
/// for a `Progress<T>`, else the type as written.
fn caller_type(t: &RpcTrait, a: &Arg) -> TokenStream {
    let p = private(t);
    match &a.special {
        Special::Stream(item) => {
            quote_spanned!(a.ty.span()=> impl #p::Stream<Item = #item> + ::core::marker::Send + 'static)
        }
        Special::Progress(value) => {
            quote_spanned!(a.ty.span()=> impl ::core::ops::FnMut(#value) + ::core::marker::Send)
        }
        Special::None => {
            let ty = &a.ty;
            quote!(#ty)
        }
    }
}

/// The type that travels for an argument (what the params struct holds).
fn wire_type(t: &RpcTrait, a: &Arg) -> TokenStream {
    let p = private(t);
    match &a.special {
        Special::Stream(_) => quote!(#p::OfferedStream),
        Special::Progress(_) => quote!(#p::ProgressToken),
        Special::None => {
            let ty = &a.ty;
            quote!(#ty)
        }
    }
}

/// Statements that turn streams into offers and callbacks into progress tokens (shadowing the
/// argument with what travels).
fn specials<'a>(t: &'a RpcTrait, m: &'a Method) -> impl Iterator<Item = TokenStream> + 'a {
    let p = private(t);
    m.wire_args().filter_map(move |(a, _, _)| {
        let ident = &a.ident;
        match &a.special {
            Special::Stream(item) => Some(quote_spanned! {item.span()=>
                let #ident = #p::offer_stream(&self.handle, #ident);
            }),
            Special::Progress(value) => Some(quote_spanned! {value.span()=>
                let __on_progress = #ident;
                let (#ident, __progress) = self.handle.progress::<#value>();
            }),
            Special::None => None,
        }
    })
}
