//! The trait as data: its methods, their wire names, how their params travel, what they return
//! and which arguments are context rather than params. Shapes the macro cannot express are
//! reported here (each at the user's tokens) and left out of the model.

use proc_macro2::Span;
use quote::quote;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, ItemTrait, LitStr, Pat, PatType, Path, PathArguments, ReturnType,
    Signature, TraitItem, TraitItemFn, Type, TypeParamBound,
};

use crate::attr::{Kind, MethodAttrs, ParamAttrs, ParamStyle, TraitAttrs};
use crate::case::{RenameRule, unraw};
use crate::ctxt::Errors;

/// The separator between a namespace and a method name when none is configured (LSP, ACP, MCP).
const DEFAULT_SEPARATOR: &str = "/";

/// An `#[rpc]` trait.
pub(crate) struct RpcTrait {
    /// The trait as written, without this crate's attributes.
    pub(crate) item: ItemTrait,
    /// The path generated code uses to reach the facade crate.
    pub(crate) krate: Path,
    pub(crate) client: Ident,
    pub(crate) server: Ident,
    /// Which sides to generate.
    pub(crate) sides: Sides,
    pub(crate) methods: Vec<Method>,
}

/// `#[rpc]` generates both sides; `#[rpc(client)]` or `#[rpc(server)]` one (jsonrpsee's
/// spelling), so that a type that only travels one way needs only that way's serde trait.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sides {
    pub(crate) client: bool,
    pub(crate) server: bool,
}

/// One trait method.
pub(crate) struct Method {
    pub(crate) ident: Ident,
    pub(crate) kind: Kind,
    /// The method's doc comments, carried over to generated items.
    pub(crate) docs: Vec<Attribute>,
    /// Its `#[cfg(..)]`s, carried over to its client method and its routes.
    pub(crate) cfgs: Vec<Attribute>,
    pub(crate) name: WireName,
    pub(crate) aliases: Vec<WireName>,
    pub(crate) params: ParamStyle,
    pub(crate) args: Vec<Arg>,
    pub(crate) ret: ReturnKind,
    /// The return type as written, for errors about it.
    pub(crate) output: ReturnType,
}

/// A method name on the wire and where it came from.
pub(crate) struct WireName {
    pub(crate) value: String,
    /// The literal it was written as, or the Rust name it was derived from.
    pub(crate) span: Span,
    pub(crate) origin: NameOrigin,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameOrigin {
    /// `name = ".."`.
    Explicit,
    /// An entry of `aliases = [..]`.
    Alias,
    /// The Rust name (renamed, with the namespace).
    Derived,
}

/// What a call produces.
pub(crate) enum ReturnKind {
    /// `()`: a request answered `null`, or a notification.
    Unit,
    /// A plain value: the method cannot fail (except for params that do not decode).
    Value(Box<Type>),
    /// `Result<T, E>`: `E` maps to and from an error object.
    Result { ok: Box<Type>, err: Box<Type> },
    /// A stream (StreamJsonRpc's `IAsyncEnumerable<T>`): `impl Stream<Item = I> + Send`, or a
    /// `Result` of one.
    Stream(StreamReturn),
}

/// The shape of a streaming method's return.
pub(crate) struct StreamReturn {
    /// `I` of `impl Stream<Item = I>`.
    pub(crate) item: Box<Type>,
    /// `(T, E)` when the items are `Result<T, E>`.
    pub(crate) fallible: Option<(Box<Type>, Box<Type>)>,
    /// `E` of `Result<impl Stream<..>, E>`: the method may fail before it has a stream.
    pub(crate) outer_err: Option<Box<Type>>,
    /// The method is an `async fn` (else a plain `fn` returning the stream).
    pub(crate) is_async: bool,
}

impl StreamReturn {
    /// The type of each item the client receives.
    pub(crate) fn ok_item(&self) -> &Type {
        self.fallible.as_ref().map_or(&*self.item, |(ok, _)| ok)
    }

    /// The error type of the client's stream: the items' error, else the method's, else none.
    pub(crate) fn client_err(&self) -> Option<&Type> {
        self.fallible.as_ref().map(|(_, e)| &**e).or(self.outer_err.as_deref())
    }
}

/// One argument after `&self`.
pub(crate) struct Arg {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) role: Role,
    /// A param that is not a plain value.
    pub(crate) special: Special,
}

/// Params that travel as a token rather than as their value.
pub(crate) enum Special {
    None,
    /// `RpcStream<T>`: the caller passes a stream of `T`; the enumerable object travels.
    Stream(Box<Type>),
    /// `Progress<T>`: the caller passes a callback for `T`s; a progress token travels.
    Progress(Box<Type>),
}

pub(crate) enum Role {
    /// Travels in `params` under `key` (or at its position).
    Wire { key: String, optional: bool },
    /// Supplied by the connection on the server side; not part of the client's signature.
    Context { cancellation: bool },
}

impl Method {
    pub(crate) fn wire_args(&self) -> impl Iterator<Item = (&Arg, &str, bool)> {
        self.args.iter().filter_map(|a| match &a.role {
            Role::Wire { key, optional } => Some((a, key.as_str(), *optional)),
            Role::Context { .. } => None,
        })
    }

    /// An `"object"` method's progress argument, which travels inside the params object.
    pub(crate) fn progress_in_object(&self) -> Option<&Arg> {
        (self.params == ParamStyle::Object)
            .then(|| self.args.iter().find(|a| matches!(a.special, Special::Progress(_))))
            .flatten()
    }

    /// The primary name followed by the aliases.
    pub(crate) fn names(&self) -> impl Iterator<Item = &WireName> {
        std::iter::once(&self.name).chain(&self.aliases)
    }
}

impl RpcTrait {
    pub(crate) fn from_ast(attrs: TraitAttrs, mut item: ItemTrait, errors: &mut Errors) -> RpcTrait {
        check_trait_shape(&item, errors);
        let naming = Naming {
            namespace: attrs.namespace.as_ref().map(LitStr::value),
            separator: attrs.separator.as_ref().map_or_else(|| DEFAULT_SEPARATOR.to_owned(), LitStr::value),
            rename_all: attrs.rename_all,
            rename_all_params: attrs.rename_all_params,
        };
        let default_style = attrs.params.unwrap_or(ParamStyle::Positional);
        let mut methods = Vec::new();
        for trait_item in &mut item.items {
            match trait_item {
                TraitItem::Fn(f) => {
                    if let Some(m) = Method::from_ast(f, &naming, default_style, errors) {
                        methods.push(m);
                    }
                }
                other => errors.spanned(
                    &*other,
                    "an #[rpc] trait may contain only methods (associated types and consts have no wire form)",
                ),
            }
        }
        let krate = attrs.krate.unwrap_or_else(|| syn::parse_quote!(::jsonrpc_duplex));
        let client = Ident::new(&format!("{}Client", item.ident), item.ident.span());
        let server = Ident::new(&format!("{}Server", item.ident), item.ident.span());
        // Neither flag: both sides.
        let sides = match (attrs.client, attrs.server) {
            (false, false) => Sides { client: true, server: true },
            (client, server) => Sides { client, server },
        };
        RpcTrait { item, krate, client, server, sides, methods }
    }
}

fn check_trait_shape(item: &ItemTrait, errors: &mut Errors) {
    if !item.generics.params.is_empty() {
        errors.spanned(&item.generics, "an #[rpc] trait cannot be generic: the wire carries concrete types");
    } else if let Some(w) = &item.generics.where_clause {
        errors.spanned(w, "an #[rpc] trait cannot have a where clause");
    }
    if let Some(u) = &item.unsafety {
        errors.spanned(u, "an #[rpc] trait cannot be unsafe");
    }
    if let Some(a) = &item.auto_token {
        errors.spanned(a, "an #[rpc] trait cannot be an auto trait");
    }
}

struct Naming {
    namespace: Option<String>,
    separator: String,
    rename_all: Option<RenameRule>,
    rename_all_params: Option<RenameRule>,
}

impl Naming {
    fn method_name(&self, ident: &Ident) -> String {
        let base = unraw(ident);
        let base = match self.rename_all {
            Some(rule) => rule.apply(&base),
            None => base,
        };
        match &self.namespace {
            Some(ns) => format!("{ns}{}{base}", self.separator),
            None => base,
        }
    }

    fn param_key(&self, ident: &Ident) -> String {
        let base = unraw(ident);
        match self.rename_all_params {
            Some(rule) => rule.apply(&base),
            None => base,
        }
    }
}

impl Method {
    fn from_ast(
        f: &mut TraitItemFn,
        naming: &Naming,
        default_style: ParamStyle,
        errors: &mut Errors,
    ) -> Option<Method> {
        let attrs = MethodAttrs::take(&mut f.attrs, errors);
        let docs = f.attrs.iter().filter(|a| a.path().is_ident("doc")).cloned().collect();
        let cfgs = f.attrs.iter().filter(|a| a.path().is_ident("cfg")).cloned().collect();
        let sig = &mut f.sig;
        let mut ok = signature_is_supported(sig, errors);

        let mut args = Vec::new();
        for input in sig.inputs.iter_mut() {
            if let FnArg::Typed(pt) = input {
                match Arg::from_ast(pt, naming, errors) {
                    Some(arg) => args.push(arg),
                    None => ok = false,
                }
            }
        }

        let ret = match return_kind(&sig.output, sig.asyncness.is_some()) {
            Ok(r) => r,
            Err(e) => {
                // A method that is not `async` was reported already, unless it returns a stream.
                if sig.asyncness.is_some() || returns_stream(&sig.output) {
                    errors.push(e);
                }
                ok = false;
                ReturnKind::Unit
            }
        };

        let name = match &attrs.name {
            Some(lit) => WireName { value: lit.value(), span: lit.span(), origin: NameOrigin::Explicit },
            None => {
                WireName { value: naming.method_name(&sig.ident), span: sig.ident.span(), origin: NameOrigin::Derived }
            }
        };
        let aliases = attrs
            .aliases
            .iter()
            .map(|lit| WireName { value: lit.value(), span: lit.span(), origin: NameOrigin::Alias })
            .collect();

        ok.then(|| Method {
            ident: sig.ident.clone(),
            kind: attrs.kind,
            docs,
            cfgs,
            name,
            aliases,
            params: attrs.params.unwrap_or(default_style),
            args,
            ret,
            output: sig.output.clone(),
        })
    }
}

/// Report every part of a signature the macro cannot express; `true` when there is none.
fn signature_is_supported(sig: &Signature, errors: &mut Errors) -> bool {
    let before = errors.len();
    if let Some(c) = &sig.constness {
        errors.spanned(c, "an rpc method cannot be `const`");
    }
    if let Some(u) = &sig.unsafety {
        errors.spanned(u, "an rpc method cannot be `unsafe`");
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(abi, "an rpc method cannot have an `extern` ABI");
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            "generic rpc methods are not supported: the wire carries concrete types (and lifetimes cannot cross it)",
        );
    } else if let Some(w) = &sig.generics.where_clause {
        errors.spanned(w, "an rpc method cannot have a where clause");
    }
    if let Some(v) = &sig.variadic {
        errors.spanned(v, "an rpc method cannot be variadic");
    }
    // A streaming method may be a plain `fn` that returns its stream.
    if sig.asyncness.is_none() && !returns_stream(&sig.output) {
        let (fn_token, ident) = (&sig.fn_token, &sig.ident);
        errors.spanned(
            quote!(#fn_token #ident),
            "an rpc method must be an `async fn` (write `async fn`; implementations may too), or a `fn` that \
             returns `impl Stream<Item = T> + Send`",
        );
    }
    // `&self` only: the server shares the service between concurrent requests.
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) if r.colon_token.is_some() => {
            errors.spanned(r, "an rpc method takes `&self` (typed receivers like `self: Arc<Self>` are not supported)");
        }
        Some(FnArg::Receiver(r)) if r.reference.is_none() => errors.spanned(
            r,
            "an rpc method takes `&self`, not `self` by value: the server keeps the service for later requests",
        ),
        Some(FnArg::Receiver(r)) if r.mutability.is_some() => errors.spanned(
            r,
            "an rpc method takes `&self`, not `&mut self`: requests run concurrently (use interior mutability)",
        ),
        Some(FnArg::Receiver(_)) => {}
        _ => errors.spanned(&sig.ident, "an rpc method takes `&self` as its first argument"),
    }
    errors.len() == before
}

impl Arg {
    /// One argument after `&self`, with this crate's attributes taken off it.
    fn from_ast(pt: &mut PatType, naming: &Naming, errors: &mut Errors) -> Option<Arg> {
        let attrs = ParamAttrs::take(&mut pt.attrs, errors);
        let ident = match &*pt.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.ident.clone(),
            other => {
                errors.spanned(other, "an rpc argument must be a plain name (it names the param on the wire)");
                return None;
            }
        };
        let ty = (*pt.ty).clone();
        if let Some(why) = unsupported_arg_type(&ty) {
            errors.spanned(&ty, why);
            return None;
        }
        let by_type = last_segment_is(&ty, &["CancellationToken", "RequestContext", "NotificationContext"]);
        let role = if attrs.context.is_some() || by_type {
            if let Some(rename) = &attrs.rename {
                errors.spanned(rename, "a context argument is not a param: it has no name on the wire");
            }
            Role::Context { cancellation: last_segment_is(&ty, &["CancellationToken"]) }
        } else {
            let key = match &attrs.rename {
                Some(lit) => lit.value(),
                None => naming.param_key(&ident),
            };
            Role::Wire { key, optional: option_inner(&ty).is_some() }
        };
        let special = match &role {
            Role::Context { .. } => Special::None,
            Role::Wire { .. } => match (single_type_arg(&ty, "RpcStream"), single_type_arg(&ty, "Progress")) {
                (Some(item), _) => Special::Stream(Box::new(item.clone())),
                (_, Some(value)) => Special::Progress(Box::new(value.clone())),
                _ => Special::None,
            },
        };
        Some(Arg { ident, ty, role, special })
    }
}

fn return_kind(output: &ReturnType, is_async: bool) -> syn::Result<ReturnKind> {
    let ty = match output {
        ReturnType::Default => return Ok(ReturnKind::Unit),
        ReturnType::Type(_, ty) => &**ty,
    };
    if let Type::Tuple(t) = ty
        && t.elems.is_empty()
    {
        return Ok(ReturnKind::Unit);
    }
    if let Type::ImplTrait(it) = ty {
        let item = stream_item(it)?;
        return Ok(ReturnKind::Stream(StreamReturn::new(item, None, is_async)));
    }
    if let Some(args) = last_segment_args(ty, "Result") {
        return match type_args(args).as_slice() {
            [Type::ImplTrait(it), err] => {
                let item = stream_item(it)?;
                Ok(ReturnKind::Stream(StreamReturn::new(item, Some((*err).clone()), is_async)))
            }
            [ok, err] => Ok(ReturnKind::Result { ok: Box::new((*ok).clone()), err: Box::new((*err).clone()) }),
            _ => Err(syn::Error::new_spanned(
                ty,
                "write the error type out: `Result<T, E>` (the macro cannot see through a `Result<T>` alias)",
            )),
        };
    }
    Ok(ReturnKind::Value(Box::new(ty.clone())))
}

impl StreamReturn {
    fn new(item: Type, outer_err: Option<Type>, is_async: bool) -> Self {
        let fallible = last_segment_args(&item, "Result").and_then(|args| match type_args(args).as_slice() {
            [ok, err] => Some((Box::new((*ok).clone()), Box::new((*err).clone()))),
            _ => None,
        });
        StreamReturn { item: Box::new(item), fallible, outer_err: outer_err.map(Box::new), is_async }
    }
}

fn type_args(args: &syn::punctuated::Punctuated<GenericArgument, syn::Token![,]>) -> Vec<&Type> {
    args.iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// `I` of `impl Stream<Item = I> + Send`; anything else is an error saying what to write.
fn stream_item(it: &syn::TypeImplTrait) -> syn::Result<Type> {
    let stream = it.bounds.iter().find_map(|b| match b {
        TypeParamBound::Trait(t) => t.path.segments.last().filter(|s| s.ident == "Stream"),
        _ => None,
    });
    let Some(stream) = stream else {
        return Err(syn::Error::new_spanned(
            it,
            "an rpc method returns a concrete type, or a stream: `impl Stream<Item = T> + Send`",
        ));
    };
    let item = match &stream.arguments {
        PathArguments::AngleBracketed(a) => a.args.iter().find_map(|arg| match arg {
            GenericArgument::AssocType(at) if at.ident == "Item" => Some(at.ty.clone()),
            _ => None,
        }),
        _ => None,
    };
    let Some(item) = item else {
        return Err(syn::Error::new_spanned(
            stream,
            "write the item type out: `impl Stream<Item = T> + Send` (it is what the client receives)",
        ));
    };
    let is_send = it.bounds.iter().any(|b| match b {
        TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "Send"),
        _ => false,
    });
    if !is_send {
        return Err(syn::Error::new_spanned(
            it,
            "a method's stream is kept and pulled by the connection's tasks: write `impl Stream<Item = T> + Send`",
        ));
    }
    Ok(item)
}

fn unsupported_arg_type(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Reference(_) => {
            Some("borrowed arguments are not supported: the server decodes owned values (use e.g. `String` for `&str`)")
        }
        Type::ImplTrait(_) => Some("`impl Trait` arguments are generics, which an rpc method cannot have"),
        Type::Infer(_) => Some("the argument's type must be written out"),
        _ => None,
    }
}

/// `impl Stream..`, or `Result<impl Stream.., E>`.
fn returns_stream(output: &ReturnType) -> bool {
    let ReturnType::Type(_, ty) = output else { return false };
    let ty = match last_segment_args(ty, "Result").map(type_args).as_deref() {
        Some([ok, _]) => *ok,
        _ => &**ty,
    };
    let Type::ImplTrait(it) = ty else { return false };
    it.bounds.iter().any(|b| match b {
        TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "Stream"),
        _ => false,
    })
}

/// `T` of `Name<T>` or `Name<T, ..>` (the first type argument).
fn single_type_arg<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    last_segment_args(ty, name).and_then(|args| type_args(args).first().copied())
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

fn last_segment_is(ty: &Type, names: &[&str]) -> bool {
    last_segment(ty).is_some_and(|s| names.iter().any(|n| s.ident == n))
}

fn last_segment_args<'a>(
    ty: &'a Type,
    name: &str,
) -> Option<&'a syn::punctuated::Punctuated<GenericArgument, syn::Token![,]>> {
    let seg = last_segment(ty)?;
    if seg.ident != name {
        return None;
    }
    match &seg.arguments {
        PathArguments::AngleBracketed(a) => Some(&a.args),
        _ => None,
    }
}

/// `T` of an `Option<T>` written as such: such a param may be left out by the caller.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    let args = last_segment_args(ty, "Option")?;
    match args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(t)] => Some(t),
        _ => None,
    }
}
