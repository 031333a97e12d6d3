//! Semantic checks over the whole trait: names that clash or are reserved, notifications that
//! would need an answer, params styles that do not fit the arguments.

use std::collections::HashMap;

use jsonrpc_duplex_names::Handled;

use crate::attr::{Kind, ParamStyle};
use crate::ctxt::Errors;
use crate::model::{Method, NameOrigin, ReturnKind, Role, RpcTrait, Special, WireName};

/// A prefix no method may use, and what to do instead.
const RESERVED_PREFIX: (&str, &str) = (
    "rpc.",
    "names starting with `rpc.` are reserved by JSON-RPC 2.0 for rpc-internal methods and extensions; name the \
     method otherwise, or, to answer a peer that sends one anyway, serve a \
     `Router::new().request_raw(\"rpc.…\", ..)` next to the generated server",
);

/// What to write instead of a method the connection handles itself (the names are
/// [`jsonrpc_duplex_names::HANDLED`], the one list the connection's presets are built from too;
/// other `$/` names, like `$/setTrace`, `$/logTrace` or `$/progress` for tokens the peer made, are
/// the trait's to declare).
fn instead(handled: Handled) -> &'static str {
    match handled {
        Handled::Cancellation => {
            "the connection handles cancellation itself (under the profile that spells it so: `$/cancelRequest` \
             by default and for LSP, `$/cancel_request` for ACP, `notifications/cancelled` for MCP); take a \
             `CancellationToken` argument in the method to be cancelled, and cancel your own calls with \
             `CallOptions::cancel`"
        }
        Handled::StreamNext => {
            "the connection serves streams itself; return `impl Stream<Item = T> + Send` from a method, or take an \
             `RpcStream<T>` argument"
        }
        Handled::StreamAbort => {
            "the connection serves streams itself; a stream returned by a method is dropped when its consumer aborts it"
        }
    }
}

/// Inherent methods of the generated client, which a trait method of the same name would clash with.
const CLIENT_METHODS: &[&str] = &["new", "handle", "options", "with_options"];

/// Report every semantic mistake; the result says, for each of `t.methods`, whether one was
/// found in it (so that the expansion can leave that method out and still emit the rest).
pub(crate) fn check(t: &RpcTrait, errors: &mut Errors) -> Vec<bool> {
    let mut seen: HashMap<&str, &syn::Ident> = HashMap::new();
    let mut faulty = Vec::with_capacity(t.methods.len());
    for m in &t.methods {
        let before = errors.len();
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
        if t.sides.client && CLIENT_METHODS.contains(&ident.as_str()) {
            errors.spanned(
                &m.ident,
                format_args!(
                    "`{ident}` is a method of the generated client; name the Rust method differently and keep the wire name with `#[method(name = \"{}\")]`",
                    m.name.value
                ),
            );
        }

        check_streams(m, errors);

        if m.kind == Kind::Notification {
            if matches!(m.ret, ReturnKind::Stream(_)) {
                errors.spanned(
                    &m.output,
                    "a notification cannot return a stream: it has no answer to carry the stream; make it a `#[method]`",
                );
            } else if !matches!(m.ret, ReturnKind::Unit) {
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
            // A `Progress` travels inside the object, where the connection's profile puts a
            // request's token (MCP's `_meta.progressToken`).
            // No argument at all is a method without params (MCP's `ping`, LSP's `shutdown`): it
            // accepts absent params, `{}` or `[]`.
            let n = m.wire_args().filter(|(a, _, _)| !matches!(a.special, Special::Progress(_))).count();
            let progress = m.wire_args().any(|(a, _, _)| matches!(a.special, Special::Progress(_)));
            if n > 1 {
                errors.spanned(
                    &m.ident,
                    format_args!(
                        "`params = \"object\"` takes one argument, the params object itself; `{}` has {n}: put them \
                         in one struct (deriving `Serialize` and `Deserialize`) and take that, or use \
                         `params = \"named\"` on this method to send each argument as a member of the object",
                        m.ident
                    ),
                );
            } else if n == 0 && progress {
                errors.spanned(
                    &m.ident,
                    format_args!(
                        "`params = \"object\"` carries a `Progress` token inside the params object, and `{}` has \
                         none: take the params object as an argument too (a struct, or `Option<serde_json::Value>`), \
                         or use `params = \"named\"` on this method",
                        m.ident
                    ),
                );
            }
        }
        faulty.push(errors.len() > before);
    }
    faulty
}

/// Streams and progress: where they may appear.
fn check_streams(m: &Method, errors: &mut Errors) {
    let mut progress = 0;
    for arg in &m.args {
        match (&arg.special, m.kind) {
            (Special::Stream(_), Kind::Notification) => errors.spanned(
                &arg.ty,
                "a stream cannot be passed in a notification: only the answer to a request ends an argument \
                 stream (StreamJsonRpc refuses this too); make it a `#[method]`",
            ),
            (Special::Progress(_), Kind::Notification) => errors.spanned(
                &arg.ty,
                "a notification cannot report progress: only the answer to a request ends the reports; make it a \
                 `#[method]`",
            ),
            (Special::Progress(_), Kind::Request) => {
                progress += 1;
                if progress > 1 {
                    errors.spanned(&arg.ty, "a method takes at most one `Progress` argument");
                } else if matches!(m.ret, ReturnKind::Stream(_)) {
                    errors.spanned(
                        &arg.ty,
                        "a streaming method cannot take a `Progress` argument: its answer comes before its items, so \
                         reports would have nowhere to go (yield them as items instead)",
                    );
                }
            }
            _ => {}
        }
        if m.params == ParamStyle::Object && matches!(arg.special, Special::Stream(_)) {
            errors.spanned(
                &arg.ty,
                "with `params = \"object\"` the one argument is the params object itself; a stream travels as a \
                 param of its own: use \"positional\" or \"named\"",
            );
        }
    }
    if let ReturnKind::Stream(s) = &m.ret
        && let (Some((_, item_err)), Some(outer_err)) = (&s.fallible, &s.outer_err)
        && quote::quote!(#item_err).to_string() != quote::quote!(#outer_err).to_string()
    {
        errors.spanned(
            outer_err,
            "the method's error type and its items' error type must be the same: the client's stream has one",
        );
    }
}

fn check_name(name: &WireName, errors: &mut Errors) {
    if name.value.is_empty() {
        errors.at(name.span, "a method name must not be empty");
        return;
    }
    let derived = if name.origin == NameOrigin::Derived {
        format!(" (this method's name is \"{}\")", name.value)
    } else {
        String::new()
    };
    let (prefix, why) = RESERVED_PREFIX;
    if name.value.starts_with(prefix) {
        errors.at(name.span, format_args!("reserved method name{derived}: {why}"));
    }
    if let Some(handled) = jsonrpc_duplex_names::handled(&name.value) {
        let (reserved, instead) = (&name.value, instead(handled));
        errors.at(name.span, format_args!("`{reserved}` is never routed to a trait{derived}: {instead}"));
    }
}
