//! Python modules from `#[rpc]` traits (the `openrpc` feature): a typed asyncio SDK for a CLI
//! written in Rust, on the standard library alone.
//!
//! [`Module`] renders, from the same description as the OpenRPC document and the TypeScript
//! module ([`Describe`]), one module to check in, which imports the small runtime
//! [`RUNTIME`] (write it beside the module as `jsonrpc_duplex_runtime.py`):
//!
//! - the **types** every method names: a `TypedDict` per object (what `json` gives is the value,
//!   nothing is converted), a type alias per anything else (string enums are `Literal`s);
//! - an **error class** per typed error (`class DeniedError(rt.TypedError)`, with `CODE` and a
//!   typed `data`), which clients raise and implementations may raise;
//! - for each trait the Rust side serves, a **client** class over an `rt.Peer`;
//! - for each trait the Python side serves (callbacks), a `Protocol` to implement and a
//!   `serve_{trait}(peer, service)` function that registers it;
//! - `spawn(command, args, ...)` and `connect(host, port, ...)`: the CLI started (or reached on
//!   TCP) with the callback traits served, as an `Sdk` with a client attribute per trait and
//!   `stop()`, which ends the CLI and returns its exit status.
//!
//! The module passes `mypy --strict` and is the same bytes every time it is rendered from the
//! same traits.
//!
//! | in the trait | the client method | the `Protocol` method |
//! |---|---|---|
//! | a request | `async def`, returning the result; `cancel=rt.Cancel()` to cancel it (answered `-32800`, raised as `rt.RequestCancelled`); cancelling the awaiting task also sends the cancel | `async def` |
//! | `#[notification]` | `async def` that sends it | `async def`, run in arrival order (the reader waits for it) |
//! | `params = "named"` | keyword arguments, `Option` ones may be left out | the same |
//! | `params = "object"` | the object (a `TypedDict`) | the same |
//! | a typed error | raises its class (else `rt.RpcError`) | raise the class: its code, message and data are the answer |
//! | `Progress<T>` | `progress=callback`, called with each report before the call returns | a function that reports (a no-op when the caller asked for none) |
//! | returns a stream | an `rt.Pull[T]` (an async iterator): the request goes out when it is first pulled, each batch is a `$/enumerator/next`, `aclose()` sends `$/enumerator/abort` | return an `AsyncIterable[T]` or `Iterable[T]` |
//! | `RpcStream<T>` param | an `AsyncIterable[T]` or `Iterable[T]`, pulled by the peer until the answer | an `rt.Pull[T]` to pull before answering |
//!
//! Integers are Python `int`s: 64-bit values keep every digit. Incoming params are not checked
//! against their types (as in the TypeScript module).
//!
//! ```
//! use jsonrpc_duplex::{RpcError, python::Module, rpc};
//!
//! /// Arithmetic.
//! #[rpc]
//! pub trait Calc {
//!     /// Add two numbers.
//!     async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;
//! }
//!
//! let py = Module::new().client::<CalcApi>().render();
//! assert!(py.contains("class CalcClient:"));
//! assert!(py.contains("async def add(self, a: int, b: int, *, cancel: rt.Cancel | None = None) -> int:"));
//! ```

mod types;

use crate::openrpc::{Describe, ErrorDoc, Method, MethodKind, Param, ParamKind, ParamStructure, Returns, Service};
use crate::sdk_ir::{ErrorNames, Services};
use types::{Ty, Types, docstring, pascal, snake, string_literal};

/// The runtime every generated module imports (`import jsonrpc_duplex_runtime as rt`): framing,
/// calls, cancellation, progress, the enumerator protocol, `spawn` and `connect`. Check it in
/// beside the module.
pub const RUNTIME: &str = include_str!("runtime.py");

/// The runtime's module name, as generated modules import it.
pub const RUNTIME_MODULE: &str = "jsonrpc_duplex_runtime";

/// A Python module: clients for the traits the Rust side serves, `Protocol`s for those the
/// Python side serves, and `spawn` / `connect`.
#[derive(Debug, Default)]
#[must_use = "a builder does nothing until it is used"]
pub struct Module {
    services: Services,
    runtime_import: Option<String>,
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

    /// How the module imports the runtime, when not `import jsonrpc_duplex_runtime as rt`
    /// (in a package: `from . import jsonrpc_duplex_runtime as rt`).
    pub fn runtime_import(mut self, statement: impl Into<String>) -> Self {
        self.runtime_import = Some(statement.into());
        self
    }

    /// A client for a trait the Rust side serves: `{Trait}Client`.
    pub fn client<D: Describe>(mut self) -> Self {
        self.services.client::<D>();
        self
    }

    /// A `Protocol` for a trait the Python side serves (the Rust side calls it back), and
    /// `serve_{trait}(peer, service)`.
    pub fn server<D: Describe>(mut self) -> Self {
        self.services.server::<D>();
        self
    }

    /// The module's source text.
    pub fn render(&self) -> String {
        let mut reserved: Vec<String> = vec!["Sdk".into(), "spawn".into(), "connect".into()];
        for s in &self.services.clients {
            reserved.push(format!("{}Client", s.name));
        }
        for s in &self.services.servers {
            reserved.push(s.name.clone());
        }
        let errors = ErrorClasses::new(self.services.all());
        reserved.extend(errors.0.classes.keys().cloned());
        let mut types = Types::new(&self.services.schemas.definitions, &reserved);
        let mut body = String::new();
        let clients: Vec<String> = self.services.clients.iter().map(|s| client(s, &mut types, &errors)).collect();
        let servers: Vec<String> = self.services.servers.iter().map(|s| server(s, &mut types)).collect();
        if !types.decls.is_empty() {
            section(&mut body, "Types");
            let decls: Vec<String> = types.decls.iter().map(types::Decl::render).collect();
            body.push_str(&decls.join("\n\n"));
        }
        if !errors.0.classes.is_empty() {
            section(&mut body, "Errors");
            let classes: Vec<String> =
                errors.0.classes.iter().map(|(name, e)| error_class(name, e, &mut types)).collect();
            body.push_str(&classes.join("\n\n"));
        }
        for (s, text) in self.services.clients.iter().zip(clients) {
            section(&mut body, &format!("{}: served by the Rust side; call it with {}Client", s.name, s.name));
            body.push_str(&text);
        }
        for (s, text) in self.services.servers.iter().zip(servers) {
            section(
                &mut body,
                &format!(
                    "{}: served by this side; implement {} and register it with serve_{}",
                    s.name,
                    s.name,
                    snake_of(&s.name)
                ),
            );
            body.push_str(&text);
        }
        section(&mut body, "The CLI: spawn it (or connect to it) with the callback traits served");
        body.push_str(&self.sdk());
        let mut out = self.header_text();
        out.push_str(&body);
        format!("{}\n", out.trim_end())
    }

    fn header_text(&self) -> String {
        let mut traits: Vec<&str> = Vec::new();
        for s in self.services.all() {
            if !traits.contains(&s.name.as_str()) {
                traits.push(&s.name);
            }
        }
        let mut out = format!(
            "# Generated by jsonrpc-duplex from the Rust traits {}. Do not edit: regenerate.\n",
            traits.join(", ")
        );
        if let Some(header) = &self.services.header {
            for line in header.lines() {
                out.push_str(&format!("# {line}\n"));
            }
        }
        let mut untyped: Vec<&str> = self.services.all().flat_map(|s| s.untyped.iter().map(String::as_str)).collect();
        untyped.sort_unstable();
        untyped.dedup();
        if !untyped.is_empty() {
            out.push_str(&format!(
                "# Typed `Any` (no JSON Schema: derive schemars::JsonSchema for them): {}.\n",
                untyped.join(", ")
            ));
        }
        out.push_str("\nfrom __future__ import annotations\n\n");
        out.push_str("from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence\n");
        out.push_str(
            "from typing import Any, ClassVar, Literal, NotRequired, Protocol, TypeAlias, TypedDict, cast\n\n",
        );
        match &self.runtime_import {
            Some(statement) => out.push_str(statement),
            None => out.push_str(&format!("import {RUNTIME_MODULE} as rt")),
        }
        out.push_str("\n\n__all__ = [\"Sdk\", \"connect\", \"spawn\"]\n");
        out
    }

    fn sdk(&self) -> String {
        let mut out = String::from("class Sdk:\n");
        out.push_str(&docstring(
            "The CLI's connection: a client per trait it serves, and `stop()`. Use it as\n`async with await spawn(...) as sdk:` to stop the CLI at the end.",
            "    ",
        ));
        out.push_str("\n    def __init__(self, peer: rt.Peer, child: rt.Child | None = None) -> None:\n");
        out.push_str("        self.peer = peer\n        self.child = child\n");
        for s in &self.services.clients {
            out.push_str(&format!("        self.{} = {}Client(peer)\n", snake_of(&s.name), s.name));
        }
        out.push_str(
            "\n    async def stop(self, grace: float = 2.0) -> int | None:\n        \"\"\"End the connection; a spawned CLI is \
             ended too (stdin closed, then signals after `grace`\n        seconds): its exit status.\"\"\"\n        if self.child is not None:\n            \
             return await self.child.stop(grace)\n        await self.peer.close()\n        return None\n\n    \
             async def __aenter__(self) -> Sdk:\n        return self\n\n    \
             async def __aexit__(self, *exc: object) -> None:\n        await self.stop()\n\n\n",
        );
        // The callback traits as keyword arguments, named so as not to meet the others.
        const TAKEN: &[&str] = &["command", "args", "transport", "framing", "stderr", "env", "cwd", "host", "port"];
        let callback = |s: &Service| {
            let name = snake_of(&s.name);
            if TAKEN.contains(&name.as_str()) { format!("{name}_") } else { name }
        };
        let callbacks: Vec<String> =
            self.services.servers.iter().map(|s| format!("{}: {}", callback(s), s.name)).collect();
        let params = |head: &[&str], tail: &[&str]| {
            let mut all: Vec<String> = head.iter().map(|p| (*p).to_owned()).collect();
            all.push("*".into());
            all.extend(callbacks.iter().cloned());
            all.extend(tail.iter().map(|p| (*p).to_owned()));
            all.iter().map(|p| format!("    {p},\n")).collect::<String>()
        };
        let serve: String = self
            .services
            .servers
            .iter()
            .map(|s| format!("    serve_{}(peer, {})\n", snake_of(&s.name), callback(s)))
            .collect();
        out.push_str(&format!(
            "async def spawn(\n{}) -> Sdk:\n",
            params(
                &["command: str", "args: Sequence[str] = ()"],
                &[
                    "transport: Literal[\"stdio\", \"tcp\"] = \"stdio\"",
                    "framing: rt.Framing = \"content-length\"",
                    "stderr: rt.Stderr = \"inherit\"",
                    "env: dict[str, str] | None = None",
                    "cwd: str | None = None",
                ]
            )
        ));
        out.push_str(&docstring(
            "Start the CLI `command` with `args` and speak to it on its stdin and stdout (or, with\n`transport=\"tcp\"`, \
             at the address it prints when given `--listen 127.0.0.1:0`), the callback traits\nserved. Its stderr is \
             inherited, captured (`sdk.child.stderr_text()`) or discarded. It ends when\nthis process does, however it does (its stdin closes).",
            "    ",
        ));
        out.push_str(
            "    child = await rt.spawn(\n        command, args, transport=transport, framing=framing, stderr=stderr, env=env, cwd=cwd\n    )\n    peer = child.peer\n",
        );
        out.push_str(&serve);
        out.push_str("    peer.start()\n    return Sdk(peer, child)\n\n\n");
        out.push_str(&format!(
            "async def connect(\n{}) -> Sdk:\n",
            params(&["host: str", "port: int"], &["framing: rt.Framing = \"content-length\""])
        ));
        out.push_str(&docstring("Speak to a CLI listening on TCP at `host:port`, the callback traits served.", "    "));
        out.push_str("    peer = await rt.connect(host, port, framing=framing)\n");
        out.push_str(&serve);
        out.push_str("    peer.start()\n    return Sdk(peer)\n");
        out
    }
}

fn section(out: &mut String, title: &str) {
    out.push_str(&format!("\n\n# {}\n# {title}\n# {}\n\n", "-".repeat(93), "-".repeat(93)));
}

/// A trait's name as a Python attribute (`FileSystem` → `file_system`).
fn snake_of(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    snake(&out)
}

/// Every typed error of the module, one class each, by class name ([`ErrorNames`]).
struct ErrorClasses<'a>(ErrorNames<'a>);

impl<'a> ErrorClasses<'a> {
    fn new(services: impl Iterator<Item = &'a Service>) -> Self {
        ErrorClasses(ErrorNames::new(services, pascal))
    }

    /// The classes of a method's errors, as a Python tuple.
    fn of(&self, m: &Method) -> String {
        let names: Vec<&str> = self.0.of(m).map(|(name, _)| name).collect();
        match names.len() {
            0 => "()".into(),
            1 => format!("({},)", names[0]),
            _ => format!("({})", names.join(", ")),
        }
    }
}

fn error_class(name: &str, e: &ErrorDoc, types: &mut Types<'_>) -> String {
    let mut docs = format!("`{}`: {}.", e.code, e.message.trim_end_matches('.'));
    if !e.docs.is_empty() {
        docs.push_str("\n\n");
        docs.push_str(&e.docs);
    }
    let mut out = format!("class {name}(rt.TypedError):\n");
    out.push_str(&docstring(&docs, "    "));
    out.push_str(&format!("\n    CODE: ClassVar[int] = {}\n", e.code));
    let message = string_literal(&e.message);
    match &e.data {
        Some(schema) => {
            let data = types.ty(schema, &format!("{name}Data")).render();
            out.push_str(&format!(
                "    data: {data}\n\n    def __init__(self, data: {data}, message: str = {message}) -> None:\n        \
                 super().__init__(self.CODE, message, data)\n\n    @classmethod\n    \
                 def from_wire(cls, message: str, data: Any) -> rt.RpcError:\n        \
                 if data is None:\n            return rt.RpcError(cls.CODE, message)\n        return cls(data, message)\n"
            ));
        }
        None => out.push_str(&format!(
            "\n    def __init__(self, message: str = {message}) -> None:\n        super().__init__(self.CODE, message)\n\n    \
             @classmethod\n    def from_wire(cls, message: str, data: Any) -> rt.RpcError:\n        return cls(message)\n"
        )),
    }
    out
}

/// Which side a signature is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

/// One Python parameter: its name, type and whether it has a default (`None`).
struct PyParam {
    name: String,
    ty: String,
    default: bool,
}

fn param_ty(p: &Param, side: Side, types: &mut Types<'_>, hint: &str) -> Ty {
    let item = types.ty(&p.schema, hint);
    match (&p.kind, side) {
        (ParamKind::Value, _) => item,
        (ParamKind::Stream, Side::Client) => Ty::Named(format!("AsyncIterable[{0}] | Iterable[{0}]", item.render())),
        (ParamKind::Stream, Side::Server) => Ty::Named(format!("rt.Pull[{}]", item.render())),
        (ParamKind::Progress, Side::Client) => Ty::Named(format!("Callable[[{}], None] | None", item.render())),
        (ParamKind::Progress, Side::Server) => Ty::Named(format!("Callable[[{}], None]", item.render())),
    }
}

/// The parameters of a method on one side (the object param's is the object).
fn parameters(service: &Service, m: &Method, side: Side, types: &mut Types<'_>) -> Vec<PyParam> {
    // Optional ones keep a default only where every later one has one too.
    let mut optional_from = m.args.len();
    while optional_from > 0 && !m.args[optional_from - 1].required {
        optional_from -= 1;
    }
    m.args
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let hint = format!("{}{}{}", service.name, pascal(&m.rust_name), pascal(&p.rust_name));
            let mut ty = param_ty(p, side, types, &hint);
            let optional = !p.required && p.kind != ParamKind::Progress;
            if optional {
                ty = ty.optional();
            }
            let default = side == Side::Client
                && (p.kind == ParamKind::Progress
                    || (optional && (i >= optional_from || m.params != ParamStructure::ByPosition)));
            PyParam { name: snake(&p.rust_name), ty: ty.render(), default }
        })
        .collect()
}

/// The signature's parameter list: `self`, then those without a default, then (keyword-only)
/// those with one and `extra`.
fn signature(params: &[PyParam], extra: &[&str]) -> String {
    let mut out = vec!["self".to_owned()];
    let mut keyword_only = false;
    for p in params {
        if p.default && !keyword_only {
            out.push("*".into());
            keyword_only = true;
        }
        if p.default {
            out.push(format!("{}: {} = None", p.name, p.ty));
        } else {
            out.push(format!("{}: {}", p.name, p.ty));
        }
    }
    if !extra.is_empty() && !keyword_only {
        out.push("*".into());
    }
    out.extend(extra.iter().map(|e| (*e).to_owned()));
    out.join(", ")
}

/// A method's docs plus a line saying what goes on the wire.
fn method_docs(m: &Method) -> String {
    let what = match m.kind {
        MethodKind::Request => "request",
        MethodKind::Notification => "notification",
    };
    let params = match (m.args.is_empty(), m.params) {
        (true, _) => "without params",
        (false, ParamStructure::ByPosition) => "with params by position",
        (false, ParamStructure::ByName) => "with params by name",
        (false, ParamStructure::Object) => "with the object as its params",
    };
    let mut wire = format!("The {what} `{}` {params}", m.name);
    if matches!(m.returns, Returns::Stream(_)) {
        wire.push_str("; its result is a stream, pulled with `$/enumerator/next` as it is consumed");
    }
    wire.push('.');
    if m.docs.is_empty() { wire } else { format!("{}\n\n{wire}", m.docs) }
}

fn result_ty(service: &Service, m: &Method, types: &mut Types<'_>) -> (Ty, bool) {
    let hint = format!("{}{}Result", service.name, pascal(&m.rust_name));
    match &m.returns {
        Returns::Nothing | Returns::Unit => (Ty::None, false),
        Returns::Value(schema) => (types.ty(schema, &hint), false),
        Returns::Stream(item) => (types.ty(item, &format!("{hint}Item")), true),
    }
}

fn client(service: &Service, types: &mut Types<'_>, errors: &ErrorClasses<'_>) -> String {
    let mut out = format!("class {}Client:\n", service.name);
    let docs = if service.docs.is_empty() {
        format!("A client of `{}`, served by the Rust side.", service.name)
    } else {
        service.docs.clone()
    };
    out.push_str(&docstring(&docs, "    "));
    out.push_str("\n    def __init__(self, peer: rt.Peer) -> None:\n        self.peer = peer\n");
    for m in &service.methods {
        out.push('\n');
        out.push_str(&client_method(service, m, types, errors));
    }
    out
}

fn client_method(service: &Service, m: &Method, types: &mut Types<'_>, errors: &ErrorClasses<'_>) -> String {
    let params = parameters(service, m, Side::Client, types);
    let (result, stream) = result_ty(service, m, types);
    let wire = string_literal(&m.name);
    let name = snake(&m.rust_name);
    let docs = docstring(&method_docs(m), "        ");
    // Each special param's setup (a token and its release) and the value sent for each param.
    let mut setup = String::new();
    let mut releases: Vec<String> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    for (p, py) in m.args.iter().zip(&params) {
        match p.kind {
            ParamKind::Value => values.push(py.name.clone()),
            ParamKind::Progress => {
                setup.push_str(&format!("        {0}_token, release_{0} = self.peer.progress_token({0})\n", py.name));
                releases.push(format!("release_{}()", py.name));
                values.push(format!("{}_token", py.name));
            }
            ParamKind::Stream => {
                setup.push_str(&format!("        {0}_enumerable, release_{0} = self.peer.offer({0})\n", py.name));
                releases.push(format!("release_{}()", py.name));
                values.push(format!("{}_enumerable", py.name));
            }
        }
    }
    let sent = match m.params {
        _ if m.args.is_empty() => "None".to_owned(),
        ParamStructure::ByPosition => format!("[{}]", values.join(", ")),
        ParamStructure::Object => values[0].clone(),
        ParamStructure::ByName => {
            let required: Vec<String> = m
                .args
                .iter()
                .zip(&values)
                .filter(|(p, _)| p.required || p.kind == ParamKind::Progress)
                .map(|(p, v)| format!("{}: {v}", string_literal(&p.key)))
                .collect();
            let optional: Vec<(String, String)> = m
                .args
                .iter()
                .zip(&values)
                .filter(|(p, _)| !p.required && p.kind != ParamKind::Progress)
                .map(|(p, v)| (string_literal(&p.key), v.clone()))
                .collect();
            if optional.is_empty() {
                format!("{{{}}}", required.join(", "))
            } else {
                setup.push_str(&format!("        sent_params: dict[str, Any] = {{{}}}\n", required.join(", ")));
                for (key, v) in optional {
                    setup.push_str(&format!("        if {v} is not None:\n            sent_params[{key}] = {v}\n"));
                }
                "sent_params".to_owned()
            }
        }
    };
    if m.kind == MethodKind::Notification {
        let sig = signature(&params, &[]);
        return format!(
            "    async def {name}({sig}) -> None:\n{docs}{setup}        await self.peer.notify({wire}, {sent})\n"
        );
    }
    let errs = errors.of(m);
    let call = format!("self.peer.request({wire}, {sent}, errors={errs}, cancel=cancel)");
    let sig = signature(&params, &["cancel: rt.Cancel | None = None"]);
    if stream {
        let t = result.render();
        let mut body = setup;
        if releases.is_empty() {
            body.push_str(&format!("        return self.peer.pull(lambda: {call}, {errs}, cancel)\n"));
        } else {
            // Offered streams and progress end with the call that opens the stream.
            body.push_str(&format!(
                "\n        async def open_call() -> Any:\n            try:\n                return await {call}\n            finally:\n{}",
                releases.iter().map(|r| format!("                {r}\n")).collect::<String>()
            ));
            body.push_str(&format!("\n        return self.peer.pull(open_call, {errs}, cancel)\n"));
        }
        return format!("    def {name}({sig}) -> rt.Pull[{t}]:\n{docs}{body}");
    }
    let t = result.render();
    let ret = if result == Ty::None { "None".to_owned() } else { t.clone() };
    let finish = |value: &str| {
        if result == Ty::None {
            format!("await {value}\n")
        } else if result == Ty::Any {
            format!("return await {value}\n")
        } else {
            format!("return cast({}, await {value})\n", string_literal(&t))
        }
    };
    let body = if releases.is_empty() {
        format!("        {}", finish(&call))
    } else {
        format!(
            "        try:\n            {}        finally:\n{}",
            finish(&call),
            releases.iter().map(|r| format!("            {r}\n")).collect::<String>()
        )
    };
    format!("    async def {name}({sig}) -> {ret}:\n{docs}{setup}{body}")
}

fn server(service: &Service, types: &mut Types<'_>) -> String {
    let name = &service.name;
    let mut out = format!("class {name}(Protocol):\n");
    let docs = if service.docs.is_empty() {
        format!("`{name}`, served by this side: the Rust side calls it.")
    } else {
        service.docs.clone()
    };
    out.push_str(&docstring(&docs, "    "));
    let mut handlers = String::new();
    for m in &service.methods {
        let params = parameters(service, m, Side::Server, types);
        let (result, stream) = result_ty(service, m, types);
        let sig = signature(&params, &[]);
        let method = snake(&m.rust_name);
        out.push('\n');
        let docs = docstring(&method_docs(m), "        ");
        if stream {
            let t = result.render();
            out.push_str(&format!(
                "    def {method}({sig}) -> AsyncIterable[{t}] | Iterable[{t}]:\n{docs}        ...\n"
            ));
        } else {
            out.push_str(&format!("    async def {method}({sig}) -> {}:\n{docs}        ...\n", result.render()));
        }
        handlers.push_str(&handler(m, stream));
    }
    let serve = snake_of(name);
    out.push_str(&format!("\n\ndef serve_{serve}(peer: rt.Peer, service: {name}) -> None:\n"));
    out.push_str(&docstring(
        &format!(
            "Serve `{name}` on `peer`: a handler for each method name (aliases included), registered\nbefore `peer.start()`. \
             Params arrive as the Rust trait sends them and are not checked\nagainst their types."
        ),
        "    ",
    ));
    out.push_str(&handlers);
    out
}

fn handler(m: &Method, stream: bool) -> String {
    let local = format!("on_{}", snake(&m.rust_name).trim_end_matches('_'));
    let keys: Vec<String> = m.args.iter().map(|p| string_literal(&p.key)).collect();
    let decode = match m.params {
        _ if m.args.is_empty() => String::new(),
        ParamStructure::Object => "        p = [rt.object_param(params)]\n".to_owned(),
        ParamStructure::ByPosition => format!("        p = rt.by_position(params, {})\n", m.args.len()),
        ParamStructure::ByName => format!("        p = rt.by_name(params, [{}])\n", keys.join(", ")),
    };
    let args: Vec<String> = m
        .args
        .iter()
        .enumerate()
        .map(|(i, p)| match p.kind {
            ParamKind::Value => format!("p[{i}]"),
            ParamKind::Progress => format!("peer.reporter(p[{i}])"),
            ParamKind::Stream => format!("peer.argument_stream(p[{i}])"),
        })
        .collect();
    let call = format!("service.{}({})", snake(&m.rust_name), args.join(", "));
    let names = std::iter::once(&m.name).chain(&m.aliases);
    let mut out = String::new();
    match m.kind {
        MethodKind::Notification => {
            // Not a coroutine of its own: the service's coroutine is what the peer awaits.
            out.push_str(&format!(
                "\n    def {local}(params: Any) -> Awaitable[None]:\n{decode}        return {call}\n\n"
            ));
            for n in names {
                out.push_str(&format!("    peer.on_notification({}, {local})\n", string_literal(n)));
            }
        }
        MethodKind::Request => {
            let (def, body) = if stream {
                ("async def", format!("        enumerable, _release = peer.offer({call})\n        return enumerable\n"))
            } else {
                // Not a coroutine of its own: the service's coroutine is what the peer awaits.
                ("def", format!("        return {call}\n"))
            };
            let returns = if stream { "Any" } else { "Awaitable[Any]" };
            out.push_str(&format!(
                "\n    {def} {local}(params: Any, context: rt.CallContext) -> {returns}:\n{decode}{body}\n"
            ));
            for n in names {
                out.push_str(&format!("    peer.on_request({}, {local})\n", string_literal(n)));
            }
        }
    }
    out
}
