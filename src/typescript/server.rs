//! `interface {Trait}` and `serve{Trait}`: a trait the TypeScript side serves, for the Rust side
//! to call back.

use super::types::{Types, camel, doc_comment, pascal, property_key, string_literal, wrap};
use super::{Side, method_docs, parameters, structure};
use crate::openrpc::{Method, MethodKind, Param, ParamKind, ParamStructure, Returns, Service};

pub(super) fn render(service: &Service, types: &Types<'_>) -> String {
    let name = &service.name;
    let mut out = doc_comment(&service.docs, "");
    out.push_str(&format!("export interface {name} {{\n"));
    for (i, m) in service.methods.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&doc_comment(&method_docs(m), "  "));
        out.push_str(&signature(m, types));
    }
    out.push_str("}\n\n");
    out.push_str(&doc_comment(
        &wrap(
            &format!(
                "Serve `{name}` on `connection`: a handler for each method name (aliases included). Params \
             arrive as the Rust trait sends them and are not checked against their types. Dispose the \
             result to remove the handlers."
            ),
            96,
        ),
        "",
    ));
    out.push_str(&format!(
        "export function serve{name}(connection: MessageConnection, service: {name}): Disposable {{\n  \
         const handlers: Disposable[] = [];\n"
    ));
    for m in &service.methods {
        out.push_str(&handler(m, types));
    }
    out.push_str("  return Disposable.create(() => handlers.forEach((handler) => handler.dispose()));\n}\n");
    out
}

fn signature(m: &Method, types: &Types<'_>) -> String {
    let mut params = parameters(m, Side::Server, types);
    if m.kind == MethodKind::Request {
        params.push("token: CancellationToken".into());
    }
    let returns = match &m.returns {
        Returns::Nothing | Returns::Unit => "void | Promise<void>".to_owned(),
        Returns::Value(schema) => {
            let t = types.expr(schema, 1);
            format!("{t} | Promise<{t}>")
        }
        Returns::Stream(item) => {
            let t = types.expr(item, 1);
            format!("AsyncIterable<{t}> | Iterable<{t}> | Promise<AsyncIterable<{t}> | Iterable<{t}>>")
        }
    };
    format!("  {}({}): {returns};\n", camel(&m.rust_name), params.join(", "))
}

/// The value of the `i`th param as the implementation takes it.
fn argument(p: &Param, i: usize, types: &Types<'_>) -> String {
    let t = types.expr(&p.schema, 2);
    match p.kind {
        ParamKind::Value => format!("p[{i}] as {t}"),
        ParamKind::Stream => format!("rpcArgumentStream<{t}>(connection, p[{i}])"),
        ParamKind::Progress => format!("rpcReporter<{t}>(connection, p[{i}])"),
    }
}

fn handler(m: &Method, types: &Types<'_>) -> String {
    let local = format!("on{}", pascal(&m.rust_name));
    let method = camel(&m.rust_name);
    let keys: Vec<String> = m.args.iter().map(|p| string_literal(&p.key)).collect();
    let mut call_args: Vec<String> = match m.params {
        ParamStructure::ByPosition => m.args.iter().enumerate().map(|(i, p)| argument(p, i, types)).collect(),
        ParamStructure::ByName if m.args.is_empty() => Vec::new(),
        ParamStructure::ByName => {
            let members: Vec<String> = m
                .args
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{}: {}", property_key(&p.key), argument(p, i, types)))
                .collect();
            vec![format!("{{ {} }}", members.join(", "))]
        }
        ParamStructure::Object => m.args.iter().map(|p| format!("args[0] as {}", types.expr(&p.schema, 2))).collect(),
    };
    let decode = match m.params {
        _ if m.args.is_empty() => String::new(),
        ParamStructure::Object => String::new(),
        _ => format!("    const p = rpcReceived(args, {}, [{}]);\n", structure(m), keys.join(", ")),
    };
    let names = std::iter::once(&m.name).chain(&m.aliases);
    let mut out = String::new();
    match m.kind {
        MethodKind::Notification => {
            let call = format!("service.{method}({})", call_args.join(", "));
            let args = if m.args.is_empty() { "" } else { "...args: unknown[]" };
            out.push_str(&format!(
                "  const {local} = ({args}): void => {{\n{decode}    rpcNotification({}, () => {call});\n  }};\n",
                string_literal(&m.name)
            ));
            for name in names {
                out.push_str(&format!(
                    "  handlers.push(connection.onNotification({}, {local}));\n",
                    string_literal(name)
                ));
            }
        }
        MethodKind::Request => {
            call_args.push("token".into());
            let call = format!("service.{method}({})", call_args.join(", "));
            let body = match &m.returns {
                Returns::Nothing | Returns::Unit => format!("    await {call};\n    return null;\n"),
                Returns::Value(_) => format!("    return await {call};\n"),
                Returns::Stream(item) => {
                    format!("    return rpcOfferResult<{}>(connection, {call});\n", types.expr(item, 2))
                }
            };
            out.push_str(&format!(
                "  const {local} = async (...args: unknown[]) => {{\n    const token = args.pop() as CancellationToken;\n{decode}{body}  }};\n"
            ));
            for name in names {
                out.push_str(&format!("  handlers.push(connection.onRequest({}, {local}));\n", string_literal(name)));
            }
        }
    }
    out
}
