//! TypeScript modules from `#[rpc]` traits (the `openrpc` feature), for a TypeScript peer on
//! [vscode-jsonrpc](https://www.npmjs.com/package/vscode-jsonrpc) (10.x).
//!
//! [`Module`] renders, from the same description as the OpenRPC document
//! ([`Describe`]):
//!
//! - the **types** every method names: one declaration per JSON Schema definition, with the
//!   Rust doc comments;
//! - an **error class** per typed error (`class FileNotFoundError extends ResponseError`, with
//!   `static readonly code`), which clients throw and implementations may throw;
//! - for each trait the Rust side serves, a **client** class over a `MessageConnection`;
//! - for each trait the TypeScript side serves (callbacks), an **interface** to implement and a
//!   `serve{Trait}(connection, service)` function that registers it (returning a `Disposable`).
//!
//! The module imports only `vscode-jsonrpc`, compiles with `tsc --strict` (and
//! `noUnusedLocals`, `noUnusedParameters`), and is the same bytes every time it is rendered from
//! the same traits. Write it with a build step (see the [`openrpc`](crate::openrpc) docs).
//!
//! | in the trait | the client method | the interface method |
//! |---|---|---|
//! | `params = "positional"` | one argument per param (`Option` ones at the end may be left out) | the same |
//! | `params = "named"` | one object, keyed as on the wire: `files.index({ prefix })` | the same object |
//! | `params = "object"` | the object: `files.readTextFile({ path })` | the same |
//! | a request | returns a `Promise` of the result; an optional `CancellationToken` last | returns the result or a `Promise` of it; takes a `CancellationToken` last |
//! | `#[notification]` | returns the `Promise<void>` of the send | returns `void` or a `Promise`; a failure is logged (there is no answer) |
//! | a typed error (`DescribeErrors`) | rejects with its error class (else with vscode-jsonrpc's `ResponseError`) | throw the class: its code, message and data are the answer |
//! | `Progress<T>` | a callback `(report: T) => void`, called for each report before the promise settles; leave it out for none | a function that reports (a no-op when the caller asked for none) |
//! | returns a stream | an `AsyncGenerator<T>`: the request goes out when it is first pulled, each item is a `$/enumerator/next`, leaving the loop early sends `$/enumerator/abort` | return an `AsyncIterable<T>` (pulled one item per `next`) or an `Iterable<T>` (answered in batches of up to 64), or a `Promise` of one |
//! | `RpcStream<T>` param | an `AsyncIterable<T>` or `Iterable<T>`, pulled by the peer until the answer | an `AsyncGenerator<T>` to pull before answering |
//!
//! Integers are `number`s, exact up to 2^53 - 1 (`Number.MAX_SAFE_INTEGER`): vscode-jsonrpc's
//! `JSON.parse` rounds larger ones. The connections of the spawn runtime ([`SPAWN_RUNTIME`], a
//! `MessageConnection` of its own) refuse a message that carries one instead of rounding it.
//!
//! Method and param names are the Rust names in camelCase (keywords get a trailing `_`). The
//! generated helpers (one `$/enumerator/next` handler per connection, shared by every generated
//! module) are named `rpc…` / `Rpc…`, and only those the module uses are written.
//!
//! Limits: incoming params are not checked against their types (as with vscode-jsonrpc's own
//! handlers); a served method receives them in the shape the Rust trait sends (positional
//! methods an array, named methods an object). A Rust type named like an import
//! (`MessageConnection`, `Disposable`, …), a `{Trait}Client` class or a served trait's interface
//! would clash with it.
//!
//! ```
//! use jsonrpc_duplex::{RpcError, rpc, typescript::Module};
//!
//! /// Arithmetic.
//! #[rpc]
//! pub trait Calc {
//!     /// Add two numbers.
//!     async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;
//! }
//!
//! let ts = Module::new().client::<CalcApi>().render();
//! assert!(ts.contains("export class CalcClient {"));
//! assert!(ts.contains("add(a: number, b: number, token?: CancellationToken): Promise<number> {"));
//! ```

mod client;
mod server;
mod types;

use crate::openrpc::{Describe, ErrorDoc, Method, ParamKind, ParamStructure, Service};
use crate::sdk_ir::{ErrorNames, Services};
use types::{Member, Types, doc_comment, object_literal, pascal, string_literal, wrap};

/// The helpers generated modules carry (calls, typed errors, progress, enumerators), in
/// `// section: name` parts, each declaring `name`. A module carries the parts its code refers
/// to (and the parts those refer to), so that `noUnusedLocals` holds; the names are prefixed
/// `rpc` / `Rpc` so that they do not meet the names of types.
const RUNTIME: &str = include_str!("runtime.ts");

/// The spawn runtime, a TypeScript file of its own to check in beside the generated module
/// ([`SPAWN_RUNTIME_FILE`]): `spawnCli(command, args, { transport, stderr })` starts a CLI on
/// this crate (stdio, or TCP at the address line it prints) and returns its connection with
/// `stop()`, which ends the CLI and resolves with its exit status; `connectCli(host, port)`
/// connects to one. The CLI's stdin stays the SDK's, so it ends when the SDK's process does.
///
/// The connection is a vscode-jsonrpc `MessageConnection` (the interface the generated module
/// takes; a connection made with vscode-jsonrpc's own `createMessageConnection` works with the
/// module as well) written in the runtime: each Content-Length frame is dispatched from the
/// stream's `data` event as it completes and each message is one `write`, where vscode-jsonrpc's
/// connection queues every message behind a `setImmediate` (about half again the cost of a call
/// by hand on the same pipe; see the README's SDK latency table).
///
/// Integers are TypeScript `number`s: exact up to 2^53 - 1. The connections `spawnCli` and
/// `connectCli` make refuse a message carrying a larger integer rather than round it (an
/// answer becomes the error `-32603` naming it; a request is answered `-32601`).
pub const SPAWN_RUNTIME: &str = include_str!("spawn.ts");

/// The spawn runtime's file name.
pub const SPAWN_RUNTIME_FILE: &str = "jsonrpc_duplex_spawn.ts";

/// What the module imports from vscode-jsonrpc, each only when its code uses it.
const IMPORTS: &[&str] =
    &["CancellationToken", "Disposable", "MessageConnection", "ParameterStructures", "ProgressType", "ResponseError"];

/// The imports that are only types in vscode-jsonrpc (the others are values too).
const TYPE_ONLY: &[&str] = &["MessageConnection"];

/// `body` (the generated declarations) followed by the runtime parts it needs, with the imports
/// it uses before them.
fn link(header: &str, body: &str) -> String {
    let mut parts = RUNTIME.split("// section: ");
    let banner = parts.next().unwrap_or_default();
    let sections: Vec<(&str, &str)> = parts.map(|p| p.split_once('\n').unwrap_or((p, ""))).collect();
    let mut included = vec![false; sections.len()];
    let mut code = code_of(body);
    loop {
        let mut changed = false;
        for (i, (name, text)) in sections.iter().enumerate() {
            if !included[i] && refers_to(&code, name.trim()) {
                included[i] = true;
                code.push_str(&code_of(text));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let imports: Vec<&str> = IMPORTS.iter().copied().filter(|name| refers_to(&code, name)).collect();
    let mut out = String::from(header);
    // An interface is imported as a type: under `verbatimModuleSyntax` (on in the tsconfig
    // `tsc --init` writes) a value import of it is an error.
    out.push_str(&format!(
        "import {{\n{}}} from \"vscode-jsonrpc\";\n",
        imports
            .iter()
            .map(|i| if TYPE_ONLY.contains(i) { format!("  type {i},\n") } else { format!("  {i},\n") })
            .collect::<String>()
    ));
    out.push_str(body);
    out.push('\n');
    out.push_str(banner);
    for ((_, text), used) in sections.iter().zip(included) {
        if used {
            out.push_str(text);
        }
    }
    // Parts end with a blank line; the module ends with one newline.
    format!("{}\n", out.trim_end())
}

/// The lines of `text` that are not comments (generated comments take whole lines).
fn code_of(text: &str) -> String {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("//") || t.starts_with("/**") || t.starts_with('*'))
        })
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// `name` as a whole identifier in `code`.
fn refers_to(code: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// A TypeScript module for a vscode-jsonrpc peer: clients for the traits the Rust side serves,
/// interfaces for those the TypeScript side serves.
#[derive(Debug, Default)]
#[must_use = "a builder does nothing until it is used"]
pub struct Module {
    services: Services,
}

impl Module {
    /// An empty module.
    pub fn new() -> Self {
        Module::default()
    }

    /// A line for the module's header comment (say, the command that regenerates it).
    pub fn header(mut self, text: impl Into<String>) -> Self {
        self.services.header = Some(text.into());
        self
    }

    /// A client for a trait the Rust side serves: `{Trait}Client`.
    pub fn client<D: Describe>(mut self) -> Self {
        self.services.client::<D>();
        self
    }

    /// An interface for a trait the TypeScript side serves (the Rust side calls it back):
    /// `interface {Trait}` and `serve{Trait}(connection, impl)`.
    pub fn server<D: Describe>(mut self) -> Self {
        self.services.server::<D>();
        self
    }

    /// The module's source text.
    pub fn render(&self) -> String {
        let types = Types { definitions: &self.services.schemas.definitions };
        let errors = ErrorClasses::new(self.services.all());
        let mut header = String::new();
        self.render_header(&mut header);
        let mut out = String::new();
        if !self.services.schemas.definitions.is_empty() {
            section(&mut out, "Types");
            for (i, (name, schema)) in self.services.schemas.definitions.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(&types.declaration(name, schema));
            }
        }
        if !errors.0.classes.is_empty() {
            section(&mut out, "Errors");
            for (i, (name, e)) in errors.0.classes.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(&error_class(name, e, &types));
            }
        }
        for service in &self.services.clients {
            section(
                &mut out,
                &format!("{}: served by the Rust side; call it with {}Client", service.name, service.name),
            );
            out.push_str(&client::render(service, &types, &errors));
        }
        for service in &self.services.servers {
            section(
                &mut out,
                &format!(
                    "{}: served by this side; implement {} and register it with serve{}",
                    service.name, service.name, service.name
                ),
            );
            out.push_str(&server::render(service, &types));
        }
        link(&header, &out)
    }

    fn render_header(&self, out: &mut String) {
        let mut traits: Vec<&str> = Vec::new();
        for s in self.services.all() {
            if !traits.contains(&s.name.as_str()) {
                traits.push(&s.name);
            }
        }
        out.push_str(&format!(
            "// Generated by jsonrpc-duplex from the Rust traits {}. Do not edit: regenerate.\n",
            traits.join(", ")
        ));
        if let Some(header) = &self.services.header {
            for line in header.lines() {
                out.push_str(&format!("// {line}\n"));
            }
        }
        let mut untyped: Vec<&str> = self.services.all().flat_map(|s| s.untyped.iter().map(String::as_str)).collect();
        untyped.sort_unstable();
        untyped.dedup();
        if !untyped.is_empty() {
            out.push_str(&format!(
                "// Typed `unknown` (no JSON Schema: derive schemars::JsonSchema for them): {}.\n",
                untyped.join(", ")
            ));
        }
        out.push('\n');
    }
}

fn section(out: &mut String, title: &str) {
    out.push_str(&format!("\n// {}\n// {title}\n// {}\n\n", "-".repeat(93), "-".repeat(93)));
}

/// Every typed error of the module, one class each, by class name ([`ErrorNames`]).
pub(crate) struct ErrorClasses<'a>(ErrorNames<'a>);

impl<'a> ErrorClasses<'a> {
    fn new(services: impl Iterator<Item = &'a Service>) -> Self {
        ErrorClasses(ErrorNames::new(services, pascal))
    }

    /// The classes of a method's errors, as a TypeScript array.
    pub(crate) fn of(&self, m: &Method) -> String {
        let names: Vec<&str> = self.0.of(m).map(|(name, _)| name).collect();
        format!("[{}]", names.join(", "))
    }
}

fn error_class(name: &str, e: &ErrorDoc, types: &Types<'_>) -> String {
    let mut docs = format!("`{}`: {}.", e.code, e.message.trim_end_matches('.'));
    if !e.docs.is_empty() {
        docs.push_str("\n\n");
        docs.push_str(&e.docs);
    }
    let mut out = doc_comment(&docs, "");
    let message = string_literal(&e.message);
    match &e.data {
        Some(schema) => {
            let data = types.expr(schema, 1);
            out.push_str(&format!(
                "export class {name} extends ResponseError<{data}> {{\n  static readonly code = {code};\n\n  \
                 constructor(message: string = {message}, data?: {data}) {{\n    super({name}.code, message, data);\n",
                code = e.code
            ));
        }
        None => out.push_str(&format!(
            "export class {name} extends ResponseError {{\n  static readonly code = {code};\n\n  \
             constructor(message: string = {message}) {{\n    super({name}.code, message);\n",
            code = e.code
        )),
    }
    // vscode-jsonrpc's `ResponseError` sets its own prototype; restore the subclass's.
    out.push_str(&format!(
        "    Object.setPrototypeOf(this, new.target.prototype);\n    this.name = {};\n  }}\n}}\n",
        string_literal(name)
    ));
    out
}

/// `ParameterStructures.byPosition` / `byName` for a method.
fn structure(m: &Method) -> &'static str {
    match m.params {
        ParamStructure::ByPosition => "ParameterStructures.byPosition",
        ParamStructure::ByName | ParamStructure::Object => "ParameterStructures.byName",
    }
}

/// Which side of a stream or progress param a signature is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The caller: passes items, takes reports.
    Client,
    /// The implementation: pulls items, sends reports.
    Server,
}

/// The TypeScript type of a param on one side.
fn param_type(kind: &ParamKind, schema: &serde_json::Value, side: Side, types: &Types<'_>, level: usize) -> String {
    let t = types.expr(schema, level);
    match (kind, side) {
        (ParamKind::Value, _) => t,
        (ParamKind::Stream, Side::Client) => format!("AsyncIterable<{t}> | Iterable<{t}>"),
        (ParamKind::Stream, Side::Server) => format!("AsyncGenerator<{t}, void, undefined>"),
        (ParamKind::Progress, _) => format!("(report: {t}) => void"),
    }
}

/// The parameter list of a method (without the trailing token), for one side.
fn parameters(m: &Method, side: Side, types: &Types<'_>) -> Vec<String> {
    use types::{camel, property_key};
    match m.params {
        ParamStructure::ByPosition => {
            // `?` only where every later param may be left out too.
            let mut optional_from = m.args.len();
            while optional_from > 0 && !m.args[optional_from - 1].required {
                optional_from -= 1;
            }
            m.args
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let t = param_type(&p.kind, &p.schema, side, types, 1);
                    match side {
                        Side::Client if i >= optional_from => format!("{}?: {t}", camel(&p.rust_name)),
                        // The token follows, so a param left out is `undefined` rather than `?`.
                        Side::Server if !p.required && p.kind == ParamKind::Value => {
                            format!("{}: {t} | undefined", camel(&p.rust_name))
                        }
                        _ => format!("{}: {t}", camel(&p.rust_name)),
                    }
                })
                .collect()
        }
        ParamStructure::ByName => {
            if m.args.is_empty() {
                return Vec::new();
            }
            let members: Vec<Member> = m
                .args
                .iter()
                .map(|p| {
                    let optional = !p.required && (side == Side::Client || p.kind == ParamKind::Value);
                    let mark = if optional { "?" } else { "" };
                    let t = param_type(&p.kind, &p.schema, side, types, 2);
                    Member { docs: String::new(), text: format!("{}{mark}: {t}", property_key(&p.key)) }
                })
                .collect();
            let object = object_literal(&members, 1);
            let all_optional = side == Side::Client && m.args.iter().all(|p| !p.required);
            let default = if all_optional { " = {}" } else { "" };
            vec![format!("params: {object}{default}")]
        }
        ParamStructure::Object => {
            m.args.iter().map(|p| format!("{}: {}", camel(&p.rust_name), types.expr(&p.schema, 1))).collect()
        }
    }
}

/// A method's docs plus a line saying what goes on the wire.
fn method_docs(m: &Method) -> String {
    use crate::openrpc::{MethodKind, Returns};
    let what = match m.kind {
        MethodKind::Request => "request",
        MethodKind::Notification => "notification",
    };
    let params = match (m.args.is_empty(), m.params) {
        (true, _) => "without params".to_owned(),
        (false, ParamStructure::ByPosition) => "with params by position".to_owned(),
        (false, ParamStructure::ByName) => "with params by name".to_owned(),
        (false, ParamStructure::Object) => "with the object as its params".to_owned(),
    };
    let mut wire = format!("The {what} `{}` {params}", m.name);
    if !m.aliases.is_empty() {
        let aliases: Vec<String> = m.aliases.iter().map(|a| format!("`{a}`")).collect();
        wire.push_str(&format!(" (also answered as {})", aliases.join(", ")));
    }
    if matches!(m.returns, Returns::Stream(_)) {
        wire.push_str("; its result is a stream, pulled with `$/enumerator/next` as it is consumed");
    }
    wire.push('.');
    let wire = wrap(&wire, 96);
    if m.docs.is_empty() { wire } else { format!("{}\n\n{wire}", m.docs) }
}
