//! Semantic checks over the whole trait: names that clash or are reserved, notifications that
//! would need an answer, params styles that do not fit the arguments.

use std::collections::HashMap;

use crate::attr::{Kind, ParamStyle};
use crate::ctxt::Errors;
use crate::model::{NameOrigin, ReturnKind, Role, RpcTrait, WireName};

/// Prefixes no method may use.
const RESERVED: &[(&str, &str)] = &[
    ("rpc.", "names starting with `rpc.` are reserved by JSON-RPC 2.0 for rpc-internal methods"),
    ("$/", "names starting with `$/` are reserved for protocol messages (cancellation, progress)"),
];

/// Inherent methods of the generated client, which a trait method of the same name would clash with.
const CLIENT_METHODS: &[&str] = &["new", "handle", "with_options"];

pub(crate) fn check(t: &RpcTrait, errors: &mut Errors) {
    let mut seen: HashMap<&str, &syn::Ident> = HashMap::new();
    for m in &t.methods {
        for name in m.names() {
            check_name(name, errors);
            if let Some(first) = seen.get(name.value.as_str()) {
                let what = match name.origin {
                    NameOrigin::Alias => "alias",
                    _ => "method name",
                };
                errors.at(name.span, format_args!("duplicate {what} \"{}\": `{first}` already uses it", name.value));
            } else {
                seen.insert(&name.value, &m.ident);
            }
        }

        let ident = m.ident.to_string();
        if CLIENT_METHODS.contains(&ident.as_str()) {
            errors.spanned(
                &m.ident,
                format_args!(
                    "`{ident}` is a method of the generated client; name the Rust method differently and keep the wire name with `#[method(name = \"{}\")]`",
                    m.name.value
                ),
            );
        }

        if m.kind == Kind::Notification {
            if !matches!(m.ret, ReturnKind::Unit) {
                errors.spanned(&m.output, "a notification has no answer, so it cannot return a value; remove the return type or make it a `#[method]`");
            }
            for arg in &m.args {
                if let Role::Context { cancellation: true } = arg.role {
                    errors.spanned(
                        &arg.ty,
                        "a notification cannot be cancelled: only requests have a cancellation token",
                    );
                }
            }
        }

        if m.params == ParamStyle::Object {
            let n = m.wire_args().count();
            if n != 1 {
                errors.spanned(
                    &m.ident,
                    format_args!(
                        "`params = \"object\"` needs exactly one argument, the params object itself; `{}` has {n}",
                        m.ident
                    ),
                );
            }
        }
    }
}

fn check_name(name: &WireName, errors: &mut Errors) {
    if name.value.is_empty() {
        errors.at(name.span, "a method name must not be empty");
        return;
    }
    for (prefix, why) in RESERVED {
        if name.value.starts_with(prefix) {
            let derived = if name.origin == NameOrigin::Derived {
                format!(" (this method's name is \"{}\")", name.value)
            } else {
                String::new()
            };
            errors.at(name.span, format_args!("reserved method name: {why}{derived}"));
        }
    }
}
