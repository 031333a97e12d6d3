//! The attribute grammar: `#[rpc(..)]` on the trait, `#[method(..)]` / `#[notification(..)]` on
//! its methods, `#[param(..)]` / `#[context]` on arguments. Keys are typed [`Symbol`]s; a key
//! given twice, an unknown key or a bad value is an error at its own tokens, and parsing goes on
//! so that every mistake is reported in one build.

use std::fmt;

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Attribute, LitStr, Meta, Path, Token};

use crate::case::RenameRule;
use crate::ctxt::Errors;

/// A keyword of the grammar.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Symbol(&'static str);

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, other: &Symbol) -> bool {
        self.is_ident(other.0)
    }
}

// Attributes.
pub(crate) const METHOD: Symbol = Symbol("method");
pub(crate) const NOTIFICATION: Symbol = Symbol("notification");
pub(crate) const PARAM: Symbol = Symbol("param");
pub(crate) const CONTEXT: Symbol = Symbol("context");
// Keys of `#[rpc(..)]`.
pub(crate) const NAMESPACE: Symbol = Symbol("namespace");
pub(crate) const SEPARATOR: Symbol = Symbol("separator");
pub(crate) const RENAME_ALL: Symbol = Symbol("rename_all");
pub(crate) const RENAME_ALL_PARAMS: Symbol = Symbol("rename_all_params");
pub(crate) const CRATE: Symbol = Symbol("crate");
// Flags of `#[rpc(..)]`: generate one side only.
pub(crate) const CLIENT: Symbol = Symbol("client");
pub(crate) const SERVER: Symbol = Symbol("server");
// Keys of `#[rpc(..)]` and `#[method(..)]` / `#[notification(..)]`.
pub(crate) const PARAMS: Symbol = Symbol("params");
// Keys of `#[method(..)]` / `#[notification(..)]`.
pub(crate) const NAME: Symbol = Symbol("name");
pub(crate) const ALIASES: Symbol = Symbol("aliases");
// Keys of `#[param(..)]`.
pub(crate) const RENAME: Symbol = Symbol("rename");

const TRAIT_KEYS: &[Symbol] = &[CLIENT, SERVER, NAMESPACE, SEPARATOR, RENAME_ALL, RENAME_ALL_PARAMS, PARAMS, CRATE];
const METHOD_KEYS: &[Symbol] = &[NAME, ALIASES, PARAMS];
const PARAM_KEYS: &[Symbol] = &[RENAME];

/// How a method's arguments travel in `params`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParamStyle {
    /// `[a, b]` (the server also accepts `{"a":..,"b":..}`).
    Positional,
    /// `{"a": .., "b": ..}` (the server also accepts `[a, b]`).
    Named,
    /// The single argument *is* the params object.
    Object,
}

impl ParamStyle {
    const ALL: &'static [(&'static str, ParamStyle)] =
        &[("positional", ParamStyle::Positional), ("named", ParamStyle::Named), ("object", ParamStyle::Object)];

    pub(crate) fn describe(self) -> &'static str {
        match self {
            ParamStyle::Positional => "by position",
            ParamStyle::Named => "by name",
            ParamStyle::Object => "as one object",
        }
    }
}

/// A request (answered) or a notification (not answered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Request,
    Notification,
}

/// A value that may be set once; setting it again is an error at the second key.
struct Once<T> {
    key: Symbol,
    value: Option<T>,
}

impl<T> Once<T> {
    fn new(key: Symbol) -> Self {
        Once { key, value: None }
    }

    fn set(&mut self, errors: &mut Errors, at: &Path, value: T) {
        if self.value.is_some() {
            errors.spanned(at, format_args!("`{}` is specified more than once", self.key));
        } else {
            self.value = Some(value);
        }
    }
}

fn expected_list(keys: &[Symbol]) -> String {
    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

/// Report an unknown key and step over its value, so the keys after it are still read.
fn unknown_key(errors: &mut Errors, meta: &ParseNestedMeta<'_>, attr: &str, keys: &[Symbol]) -> syn::Result<()> {
    let key = meta.path.get_ident().map_or_else(|| "?".to_owned(), ToString::to_string);
    errors.spanned(&meta.path, format_args!("unknown key `{key}` in {attr}; expected one of: {}", expected_list(keys)));
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let skipped;
        syn::parenthesized!(skipped in meta.input);
        skipped.parse::<TokenStream>()?;
    }
    Ok(())
}

fn string(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value()?.parse()
}

fn param_style(errors: &mut Errors, lit: &LitStr) -> Option<ParamStyle> {
    let value = lit.value();
    let found = ParamStyle::ALL.iter().find(|(name, _)| *name == value).map(|(_, style)| *style);
    if found.is_none() {
        let expected = ParamStyle::ALL.iter().map(|(n, _)| format!("\"{n}\"")).collect::<Vec<_>>().join(", ");
        errors.spanned(lit, format_args!("unknown params style \"{value}\"; expected one of: {expected}"));
    }
    found
}

fn rename_rule(errors: &mut Errors, lit: &LitStr) -> Option<RenameRule> {
    let value = lit.value();
    let found = RenameRule::from_str(&value);
    if found.is_none() {
        let expected = RenameRule::ALL.iter().map(|(n, _)| format!("\"{n}\"")).collect::<Vec<_>>().join(", ");
        errors.spanned(lit, format_args!("unknown rename rule \"{value}\"; expected one of: {expected}"));
    }
    found
}

/// The arguments of `#[rpc(..)]`.
#[derive(Default)]
pub(crate) struct TraitAttrs {
    pub(crate) namespace: Option<LitStr>,
    pub(crate) separator: Option<LitStr>,
    pub(crate) rename_all: Option<RenameRule>,
    pub(crate) rename_all_params: Option<RenameRule>,
    pub(crate) params: Option<ParamStyle>,
    pub(crate) krate: Option<Path>,
    /// `client` was given: generate the client.
    pub(crate) client: bool,
    /// `server` was given: generate the server.
    pub(crate) server: bool,
}

/// A flag of `#[rpc(..)]` (`client`, `server`): a bare word, no value.
fn flag(errors: &mut Errors, meta: &ParseNestedMeta<'_>, once: &mut Once<()>) -> syn::Result<()> {
    let key = once.key;
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        let what = if key == CLIENT { "the client (`{Trait}Client`)" } else { "the server (`{Trait}Server`)" };
        errors.spanned(
            &meta.path,
            format_args!(
                "`{key}` takes no value: write `#[rpc({key})]` to generate only {what}, or leave it out for both"
            ),
        );
        if meta.input.peek(Token![=]) {
            meta.value()?.parse::<syn::Expr>()?;
        } else {
            let skipped;
            syn::parenthesized!(skipped in meta.input);
            skipped.parse::<TokenStream>()?;
        }
        return Ok(());
    }
    once.set(errors, &meta.path, ());
    Ok(())
}

impl TraitAttrs {
    pub(crate) fn parse(args: TokenStream, errors: &mut Errors) -> TraitAttrs {
        let mut namespace = Once::new(NAMESPACE);
        let mut separator = Once::new(SEPARATOR);
        let mut rename_all = Once::new(RENAME_ALL);
        let mut rename_all_params = Once::new(RENAME_ALL_PARAMS);
        let mut params = Once::new(PARAMS);
        let mut krate = Once::new(CRATE);
        let mut client = Once::new(CLIENT);
        let mut server = Once::new(SERVER);
        let parser = syn::meta::parser(|meta| {
            if meta.path == CLIENT {
                flag(errors, &meta, &mut client)?;
            } else if meta.path == SERVER {
                flag(errors, &meta, &mut server)?;
            } else if meta.path == NAMESPACE {
                let lit = string(&meta)?;
                namespace.set(errors, &meta.path, lit);
            } else if meta.path == SEPARATOR {
                let lit = string(&meta)?;
                if lit.value().is_empty() {
                    errors.spanned(&lit, "the separator must not be empty");
                }
                separator.set(errors, &meta.path, lit);
            } else if meta.path == RENAME_ALL {
                let lit = string(&meta)?;
                if let Some(rule) = rename_rule(errors, &lit) {
                    rename_all.set(errors, &meta.path, rule);
                }
            } else if meta.path == RENAME_ALL_PARAMS {
                let lit = string(&meta)?;
                if let Some(rule) = rename_rule(errors, &lit) {
                    rename_all_params.set(errors, &meta.path, rule);
                }
            } else if meta.path == PARAMS {
                let lit = string(&meta)?;
                if let Some(style) = param_style(errors, &lit) {
                    params.set(errors, &meta.path, style);
                }
            } else if meta.path == CRATE {
                let lit = string(&meta)?;
                match lit.parse::<Path>() {
                    Ok(path) => krate.set(errors, &meta.path, path),
                    Err(_) => errors.spanned(&lit, "expected a path, like \"::jsonrpc_duplex\""),
                }
            } else {
                unknown_key(errors, &meta, "#[rpc(..)]", TRAIT_KEYS)?;
            }
            Ok(())
        });
        if let Err(e) = parser.parse2(args) {
            errors.push(e);
        }
        TraitAttrs {
            namespace: namespace.value,
            separator: separator.value,
            rename_all: rename_all.value,
            rename_all_params: rename_all_params.value,
            params: params.value,
            krate: krate.value,
            client: client.value.is_some(),
            server: server.value.is_some(),
        }
    }
}

/// The `#[method(..)]` or `#[notification(..)]` of one trait method.
pub(crate) struct MethodAttrs {
    pub(crate) kind: Kind,
    /// The attribute, for errors about the method as a whole.
    pub(crate) attr_span: Option<Span>,
    pub(crate) name: Option<LitStr>,
    pub(crate) aliases: Vec<LitStr>,
    pub(crate) params: Option<ParamStyle>,
}

impl MethodAttrs {
    /// Take this crate's attributes out of `attrs` (the rest stay on the trait method).
    pub(crate) fn take(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> MethodAttrs {
        let mut out =
            MethodAttrs { kind: Kind::Request, attr_span: None, name: None, aliases: Vec::new(), params: None };
        let mut seen: Option<Symbol> = None;
        let mut name = Once::new(NAME);
        let mut aliases = Once::new(ALIASES);
        let mut params = Once::new(PARAMS);
        let mut kept = Vec::with_capacity(attrs.len());
        for attr in attrs.drain(..) {
            let kind = if *attr.path() == METHOD {
                Kind::Request
            } else if *attr.path() == NOTIFICATION {
                Kind::Notification
            } else {
                kept.push(attr);
                continue;
            };
            let symbol = if kind == Kind::Request { METHOD } else { NOTIFICATION };
            match seen {
                Some(prev) if prev == symbol => {
                    errors.spanned(attr.path(), format_args!("`#[{symbol}]` is given more than once"));
                    continue;
                }
                Some(prev) => {
                    errors.spanned(
                        attr.path(),
                        format_args!("a method is either `#[method]` or `#[notification]`, not both (`#[{prev}]` is given already)"),
                    );
                    continue;
                }
                None => {}
            }
            seen = Some(symbol);
            out.kind = kind;
            out.attr_span = Some(attr.path().get_ident().map_or_else(Span::call_site, syn::Ident::span));
            match &attr.meta {
                Meta::Path(_) => continue,
                Meta::NameValue(nv) => {
                    errors.spanned(nv, format_args!("expected `#[{symbol}(name = \"...\")]` or `#[{symbol}]`"));
                    continue;
                }
                Meta::List(_) => {}
            }
            let attr_name = format!("#[{symbol}(..)]");
            let result = attr.parse_nested_meta(|meta| {
                if meta.path == NAME {
                    let lit = string(&meta)?;
                    name.set(errors, &meta.path, lit);
                } else if meta.path == ALIASES {
                    let value = meta.value()?;
                    let content;
                    syn::bracketed!(content in value);
                    let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
                    aliases.set(errors, &meta.path, list.into_iter().collect::<Vec<_>>());
                } else if meta.path == PARAMS {
                    let lit = string(&meta)?;
                    if let Some(style) = param_style(errors, &lit) {
                        params.set(errors, &meta.path, style);
                    }
                } else {
                    unknown_key(errors, &meta, &attr_name, METHOD_KEYS)?;
                }
                Ok(())
            });
            if let Err(e) = result {
                errors.push(e);
            }
        }
        *attrs = kept;
        out.name = name.value;
        out.aliases = aliases.value.unwrap_or_default();
        out.params = params.value;
        out
    }
}

/// The `#[param(..)]` and `#[context]` of one argument.
#[derive(Default)]
pub(crate) struct ParamAttrs {
    pub(crate) rename: Option<LitStr>,
    /// Where `#[context]` was written, if it was.
    pub(crate) context: Option<Span>,
}

impl ParamAttrs {
    /// Take this crate's attributes out of an argument's `attrs`.
    pub(crate) fn take(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> ParamAttrs {
        let mut out = ParamAttrs::default();
        let mut rename = Once::new(RENAME);
        let mut kept = Vec::with_capacity(attrs.len());
        for attr in attrs.drain(..) {
            if *attr.path() == CONTEXT {
                if !matches!(attr.meta, Meta::Path(_)) {
                    errors.spanned(&attr.meta, "`#[context]` takes no arguments");
                }
                if out.context.is_some() {
                    errors.spanned(attr.path(), "`#[context]` is given more than once");
                }
                out.context = Some(attr.path().get_ident().map_or_else(Span::call_site, syn::Ident::span));
            } else if *attr.path() == PARAM {
                let result = attr.parse_nested_meta(|meta| {
                    if meta.path == RENAME {
                        let lit = string(&meta)?;
                        if lit.value().is_empty() {
                            errors.spanned(&lit, "a param name must not be empty");
                        }
                        rename.set(errors, &meta.path, lit);
                    } else {
                        unknown_key(errors, &meta, "#[param(..)]", PARAM_KEYS)?;
                    }
                    Ok(())
                });
                if let Err(e) = result {
                    errors.push(e);
                }
            } else {
                kept.push(attr);
            }
        }
        *attrs = kept;
        out.rename = rename.value;
        out
    }
}
