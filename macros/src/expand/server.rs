//! The server dispatcher: `EditorServer::new(service)` becomes a core `Router` (one route per
//! wire name, aliases included) through `impl From<EditorServer<T>> for Router`, so it plugs into
//! `Connection::builder().serve(..)` and merges with other services.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::client::private;
use crate::attr::{Kind, ParamStyle};
use crate::model::{Method, ReturnKind, Role, RpcTrait, Special, StreamReturn};

pub(crate) fn expand(t: &RpcTrait) -> TokenStream {
    let p = private(t);
    let vis = &t.item.vis;
    let server = &t.server;
    let trait_ident = &t.item.ident;
    let names: Vec<&str> = t.methods.iter().flat_map(|m| m.names().map(|n| n.value.as_str())).collect();
    let struct_doc =
        format!(" Serves [`{trait_ident}`] on a connection: `Connection::builder().serve({server}::new(service))`.");
    let methods_doc = format!(" Answers: {}.", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "));
    let bounds = quote!(#trait_ident + ::core::marker::Send + ::core::marker::Sync + 'static);
    let routes = t.methods.iter().map(|m| {
        let cfgs = &m.cfgs;
        let route = route(t, m);
        quote!(#(#cfgs)* let __router = #route;)
    });
    quote! {
        #[doc = #struct_doc]
        #[doc = ""]
        #[doc = #methods_doc]
        #vis struct #server<T> {
            service: ::std::sync::Arc<T>,
        }

        #[allow(dead_code)]
        impl<T> #server<T> {
            /// The wire names this dispatcher answers, aliases included.
            #vis const METHODS: &'static [&'static str] = &[#(#names),*];
        }

        #[allow(dead_code)]
        impl<T> #server<T>
        where
            T: #bounds,
        {
            /// Serve `service`.
            #[must_use]
            #vis fn new(service: T) -> Self {
                Self { service: ::std::sync::Arc::new(service) }
            }

            /// Serve a service that is shared with other code.
            #[must_use]
            #vis fn from_arc(service: ::std::sync::Arc<T>) -> Self {
                Self { service }
            }

            /// The routes of every method (what `Connection::builder().serve(..)` takes).
            #vis fn into_router(self) -> #p::Router {
                let __service = self.service;
                let __router = #p::Router::new();
                #(#routes)*
                __router
            }
        }

        impl<T> ::core::convert::From<#server<T>> for #p::Router
        where
            T: #bounds,
        {
            fn from(server: #server<T>) -> Self {
                server.into_router()
            }
        }

        impl<T> ::core::clone::Clone for #server<T> {
            fn clone(&self) -> Self {
                Self { service: ::core::clone::Clone::clone(&self.service) }
            }
        }

        impl<T> ::core::fmt::Debug for #server<T> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#server)).field("methods", &Self::METHODS).finish_non_exhaustive()
            }
        }
    }
}

/// `__router` with this method's routes added.
fn route(t: &RpcTrait, m: &Method) -> TokenStream {
    let p = private(t);
    let trait_ident = &t.item.ident;
    let method = &m.ident;
    let decode = decode_fn(t, m);
    let wire_vars: Vec<_> = (0..m.wire_args().count()).map(|i| format_ident!("__arg{i}")).collect();
    let (context_trait, context_fn, source) = match m.kind {
        Kind::Request => (quote!(FromRequestContext), quote!(from_request_context), quote!(__request)),
        Kind::Notification => (quote!(FromNotificationContext), quote!(from_notification_context), quote!(__note)),
    };
    let mut call_args = Vec::new();
    let mut context_vars = Vec::new();
    let mut contexts = Vec::new();
    let mut next_wire = wire_vars.iter();
    for (i, arg) in m.args.iter().enumerate() {
        match arg.role {
            Role::Wire { .. } => call_args.extend(next_wire.next().cloned()),
            Role::Context { .. } => {
                let var = format_ident!("__context{i}");
                let ty = &arg.ty;
                contexts.push(quote_spanned!(ty.span()=> <#ty as #p::#context_trait>::#context_fn(&__cx)));
                context_vars.push(var.clone());
                call_args.push(var);
            }
        }
    }
    // The context is taken apart at once, so that it is not held by the handler's future.
    let contexts = (!contexts.is_empty()).then(|| {
        quote! {
            let (#(#context_vars,)*) = {
                let __cx = #source.context();
                (#(#contexts,)*)
            };
        }
    });
    let invoke = quote!(<T as #trait_ident>::#method(&*__service, #(#call_args),*));
    let call = quote!(#invoke.await);
    let primary = &m.name.value;
    // Streams and progress tokens become their local forms once the params are decoded.
    let needs_peer =
        matches!(m.ret, ReturnKind::Stream(_)) || m.args.iter().any(|a| matches!(a.special, Special::Stream(_)));
    let needs_cx = m.args.iter().any(|a| matches!(a.special, Special::Progress(_)));
    let captures = match m.kind {
        Kind::Request => {
            let peer = needs_peer.then(|| quote!(let __stream_peer = __request.peer();));
            let cx = needs_cx.then(|| quote!(let __stream_cx = __request.context();));
            let token =
                m.progress_in_object().is_some().then(|| quote!(let __request_token = __request.progress_token();));
            quote!(#peer #cx #token)
        }
        Kind::Notification => TokenStream::new(),
    };
    let conversions = m.wire_args().zip(&wire_vars).filter_map(|((a, _, _), var)| match &a.special {
        Special::Stream(_) => Some(quote_spanned!(a.ty.span()=> let #var = #p::open_stream(&__stream_peer, #var);)),
        // In an object method the token is not a param of its own: it is where the profile says.
        Special::Progress(_) if m.params == ParamStyle::Object => {
            Some(quote_spanned!(a.ty.span()=> let #var = #p::Progress::for_request(&__stream_cx, __request_token);))
        }
        Special::Progress(_) => {
            Some(quote_spanned!(a.ty.span()=> let #var = #p::Progress::for_request(&__stream_cx, #var);))
        }
        Special::None => None,
    });
    let conversions = quote!(#(#conversions)*);
    let aliases = m.aliases.iter().map(|a| &a.value);

    match m.kind {
        Kind::Request => {
            // The method's result is bound before the responder answers: the service it ran on
            // is borrowed from the responder (see `kept` below).
            let respond = match &m.ret {
                ReturnKind::Unit => quote! {
                    #call;
                    __reply.ok(());
                },
                ReturnKind::Value(ty) => {
                    let reply_ok = quote_spanned!(ty.span()=> #p::reply_ok);
                    quote! {
                        let __value = #call;
                        #reply_ok(__reply, __value);
                    }
                }
                ReturnKind::Result { ok, err } => {
                    let into = quote_spanned!(err.span()=> <#err as #p::RpcErrorType>::into_error_object);
                    let reply_ok = quote_spanned!(ok.span()=> #p::reply_ok(__reply, __value));
                    quote! {
                        let __result = #call;
                        match __result {
                            ::core::result::Result::Ok(__value) => #reply_ok,
                            ::core::result::Result::Err(__error) => __reply.err(#into(__error)),
                        };
                    }
                }
                ReturnKind::Stream(s) => stream_respond(t, s, &invoke),
            };
            // The handler's future reaches the service through its responder, which keeps the
            // connection that keeps a clone of the service's `Arc` (taken at its first request):
            // no clone per request of an `Arc` that every connection of a server shares, a
            // write of one word by every worker thread. A streaming method's body runs in a
            // generator of its own, which owns a clone.
            let (take, reach) = if matches!(m.ret, ReturnKind::Stream(_)) {
                (quote!(let __service = ::core::clone::Clone::clone(&__service);), TokenStream::new())
            } else {
                (
                    quote!(let __kept = __request.keep_service(&__service);),
                    quote!(let __service: &T = __reply.kept_service::<T>(__kept);),
                )
            };
            quote! {{
                #decode
                let __service = ::core::clone::Clone::clone(&__service);
                let __handler = move |__request: #p::RequestStart<'_>, __reply: #p::Responder| {
                    #take
                    let __decoded = __decode(__request.params());
                    #captures
                    #contexts
                    async move {
                        match __decoded {
                            ::core::result::Result::Ok((#(#wire_vars,)*)) => {
                                #conversions
                                #reach
                                #respond
                            }
                            ::core::result::Result::Err(__error) => {
                                __reply.err(__error);
                            }
                        }
                    }
                };
                __router
                    #(.request_start(#aliases, ::core::clone::Clone::clone(&__handler)))*
                    .request_start(#primary, __handler)
            }}
        }
        Kind::Notification => quote! {{
            #decode
            let __service = ::core::clone::Clone::clone(&__service);
            let __handler = move |__note: #p::NotificationStart<'_>| {
                let __service = ::core::clone::Clone::clone(&__service);
                let __decoded = __decode(__note.params());
                if let ::core::result::Result::Err(__error) = &__decoded {
                    #p::notification_dropped(__note.method(), __error);
                }
                #contexts
                async move {
                    if let ::core::result::Result::Ok((#(#wire_vars,)*)) = __decoded {
                        #call;
                    }
                }
            };
            __router
                #(.notification_start(#aliases, ::core::clone::Clone::clone(&__handler)))*
                .notification_start(#primary, __handler)
        }},
    }
}

/// `fn __decode(params) -> Result<(A, B, ..), ErrorObject>`: the wire args, from an array or an
/// object (positional and named methods accept both), or the one object (object methods).
fn decode_fn(t: &RpcTrait, m: &Method) -> TokenStream {
    let p = private(t);
    let wire: Vec<_> = m.wire_args().collect();
    // What travels for a stream is its enumerable object; for progress, a token or `null`.
    let tys: Vec<_> = wire
        .iter()
        .map(|(a, _, _)| match &a.special {
            Special::Stream(_) => quote!(#p::Enumerable),
            Special::Progress(_) => quote!(::core::option::Option<#p::ProgressToken>),
            Special::None => {
                let ty = &a.ty;
                quote!(#ty)
            }
        })
        .collect();
    let object = (m.params == ParamStyle::Object)
        .then(|| wire.iter().find(|(a, _, _)| !matches!(a.special, Special::Progress(_))))
        .flatten();
    let body = if let Some((arg, _, _)) = object {
        let ty = &arg.ty;
        // The object, and `None` for a progress argument (its token is read from the request).
        let parts = wire.iter().map(|(a, _, _)| match a.special {
            Special::Progress(_) => quote!(::core::option::Option::None),
            _ => quote!(__object),
        });
        quote_spanned! {ty.span()=>
            #p::decode_params::<#ty>(__params).map(|__object| (#(#parts,)*))
        }
    } else {
        let keys = wire.iter().map(|(_, key, _)| key);
        let args = wire
            .iter()
            .zip(&tys)
            .enumerate()
            .map(|(i, ((a, _, _), wire_ty))| quote_spanned!(a.ty.span()=> __reader.arg::<#wire_ty>(#i)?));
        // The usual call first, in one read as a tuple (see `ArrayProbe`: none where the
        // tuple does not decode, so only the reader below reports a missing `Deserialize`).
        let one_read = (!tys.is_empty()).then(|| {
            quote! {
                {
                    use #p::{ReadArray as _, ReadArrayNot as _};
                    if let ::core::option::Option::Some(__args) =
                        (&#p::ArrayProbe::<(#(#tys,)*)>::NEW).read_array(__params)
                    {
                        return ::core::result::Result::Ok(__args);
                    }
                }
            }
        });
        quote! {
            #one_read
            let __reader = #p::ParamsReader::new(__params, &[#(#keys),*])?;
            ::core::result::Result::Ok((#(#args,)*))
        }
    };
    quote! {
        #[allow(clippy::type_complexity)]
        fn __decode(
            __params: ::core::option::Option<&#p::RawValue>,
        ) -> ::core::result::Result<(#(#tys,)*), #p::ErrorObject> {
            #body
        }
    }
}

/// Run a streaming method until it has its stream (inside a generator that owns the service, so
/// the stream may borrow it), then answer with the stream's enumerable object.
fn stream_respond(t: &RpcTrait, s: &StreamReturn, invoke: &TokenStream) -> TokenStream {
    let p = private(t);
    let item = &s.item;
    let outer_err = s.outer_err.as_ref().map_or_else(|| quote!(#p::RpcError), |e| quote!(#e));
    let call = if s.is_async { quote!(#invoke.await) } else { quote!(#invoke) };
    let produce = if s.outer_err.is_some() {
        quote! {
            match #call {
                ::core::result::Result::Ok(__stream) => __y.start(__stream).await,
                ::core::result::Result::Err(__error) => __y.fail(__error).await,
            }
        }
    } else {
        quote!(__y.start(#call).await;)
    };
    // Spanned at the item type: a missing `Serialize` is reported there.
    let reply = match &s.fallible {
        Some((ok, item_err)) => quote_spanned! {ok.span()=>
            #p::reply_try_stream::<#ok, #item_err, #outer_err>(__reply, __stream_peer, __body).await;
        },
        None => quote_spanned! {item.span()=>
            #p::reply_stream::<#item, #outer_err>(__reply, __stream_peer, __body).await;
        },
    };
    quote! {
        let __body = #p::generate::<#p::Begin<#item, #outer_err>, _, _>(move |__y| async move {
            #produce
        });
        #reply
    }
}
