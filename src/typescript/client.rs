//! `{Trait}Client`: a TypeScript class that calls a trait the Rust side serves.

use super::types::{Types, camel, doc_comment, property_key, string_literal};
use super::{ErrorClasses, Side, method_docs, parameters, structure};
use crate::openrpc::{Method, MethodKind, ParamKind, ParamStructure, Returns, Service};

pub(super) fn render(service: &Service, types: &Types<'_>, errors: &ErrorClasses<'_>) -> String {
    let mut out = doc_comment(&service.docs, "");
    out.push_str(&format!("export class {}Client {{\n", service.name));
    out.push_str("  constructor(readonly connection: MessageConnection) {}\n");
    for m in &service.methods {
        out.push('\n');
        out.push_str(&doc_comment(&method_docs(m), "  "));
        out.push_str(&method(m, types, errors));
    }
    out.push_str("}\n");
    out
}

fn method(m: &Method, types: &Types<'_>, errors: &ErrorClasses<'_>) -> String {
    let name = camel(&m.rust_name);
    let wire = string_literal(&m.name);
    let mut params = parameters(m, Side::Client, types);
    if m.kind == MethodKind::Notification {
        let sent = match m.params {
            _ if m.args.is_empty() => String::new(),
            ParamStructure::ByPosition => {
                let values: Vec<String> = m.args.iter().map(|p| camel(&p.rust_name)).collect();
                format!(", {}, {}", structure(m), values.join(", "))
            }
            ParamStructure::ByName => format!(", {}, params", structure(m)),
            ParamStructure::Object => format!(", {}, {}", structure(m), camel(&m.args[0].rust_name)),
        };
        return format!(
            "  {name}({}): Promise<void> {{\n    return this.connection.sendNotification({wire}{sent});\n  }}\n",
            params.join(", ")
        );
    }
    params.push("token?: CancellationToken".into());
    let (returns, send) = match &m.returns {
        Returns::Stream(item) => {
            let t = types.expr(item, 1);
            (format!("AsyncGenerator<{t}, void, undefined>"), format!("call.pull<{t}>"))
        }
        Returns::Value(schema) => {
            let t = types.expr(schema, 1);
            (format!("Promise<{t}>"), format!("call.request<{t}>"))
        }
        Returns::Unit | Returns::Nothing => ("Promise<void>".into(), "call.request<void>".into()),
    };
    format!(
        "  {name}({}): {returns} {{\n    const call = new RpcCall(this.connection, token, {});\n    return {send}({wire}, {}, {});\n  }}\n",
        params.join(", "),
        errors.of(m),
        structure(m),
        sent_params(m),
    )
}

/// The params as sent: streams offered and callbacks turned into progress tokens.
fn sent_params(m: &Method) -> String {
    let special = |p: &crate::openrpc::Param, value: String| match p.kind {
        ParamKind::Value => value,
        ParamKind::Stream => format!("call.stream({value})"),
        ParamKind::Progress => format!("call.progress({value})"),
    };
    match m.params {
        _ if m.args.is_empty() => "[]".into(),
        ParamStructure::ByPosition => {
            let values: Vec<String> = m.args.iter().map(|p| special(p, camel(&p.rust_name))).collect();
            format!("[{}]", values.join(", "))
        }
        ParamStructure::ByName if m.args.iter().all(|p| p.kind == ParamKind::Value) => "[params]".into(),
        ParamStructure::ByName => {
            let overrides: Vec<String> = m
                .args
                .iter()
                .filter(|p| p.kind != ParamKind::Value)
                .map(|p| {
                    let key = property_key(&p.key);
                    let member = if key.starts_with('"') { format!("params[{key}]") } else { format!("params.{key}") };
                    format!("{key}: {}", special(p, member))
                })
                .collect();
            format!("[{{ ...params, {} }}]", overrides.join(", "))
        }
        ParamStructure::Object => format!("[{}]", camel(&m.args[0].rust_name)),
    }
}
