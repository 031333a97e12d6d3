//! The IR of a generated Python module's types: JSON Schemas (draft-07, as schemars writes them)
//! become [`Ty`] expressions and [`Decl`] declarations (a `TypedDict` per object, a type alias per
//! anything else, inline objects hoisted under names of their own), which then render as text.

use serde_json::{Map, Value};

pub(super) use crate::sdk_ir::types::string_literal;
use crate::sdk_ir::types::{Lang, description, is_plain_object};

/// Python's keywords and the soft keywords and names a generated module must not take.
const RESERVED: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "self", "cancel", "rt",
];

/// A Python type expression.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Ty {
    /// Any JSON value (`Any`).
    Any,
    /// `None` (JSON `null`).
    None,
    Bool,
    Int,
    Float,
    Str,
    /// `list[T]`.
    List(Box<Ty>),
    /// `dict[str, T]`.
    Dict(Box<Ty>),
    /// `tuple[A, B]`.
    Tuple(Vec<Ty>),
    /// `Literal[..]`, each value already spelled as Python.
    Literal(Vec<String>),
    /// A declared name.
    Named(String),
    /// `A | B`.
    Union(Vec<Ty>),
}

impl Ty {
    /// The expression's text.
    pub(super) fn render(&self) -> String {
        match self {
            Ty::Any => "Any".into(),
            Ty::None => "None".into(),
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Float => "float".into(),
            Ty::Str => "str".into(),
            Ty::List(t) => format!("list[{}]", t.render()),
            Ty::Dict(t) => format!("dict[str, {}]", t.render()),
            Ty::Tuple(ts) if ts.is_empty() => "tuple[()]".into(),
            Ty::Tuple(ts) => format!("tuple[{}]", ts.iter().map(Ty::render).collect::<Vec<_>>().join(", ")),
            Ty::Literal(values) => format!("Literal[{}]", values.join(", ")),
            Ty::Named(name) => name.clone(),
            Ty::Union(ts) => ts.iter().map(Ty::render).collect::<Vec<_>>().join(" | "),
        }
    }

    /// `A | B` without repeats, flattened; `Any` absorbs the rest.
    fn union(parts: Vec<Ty>) -> Ty {
        let mut out: Vec<Ty> = Vec::new();
        for p in parts {
            let items = match p {
                Ty::Union(inner) => inner,
                other => vec![other],
            };
            for item in items {
                if item == Ty::Any {
                    return Ty::Any;
                }
                if !out.contains(&item) {
                    out.push(item);
                }
            }
        }
        match out.len() {
            0 => Ty::Any,
            1 => out.remove(0),
            _ => Ty::Union(out),
        }
    }

    /// `self | None`.
    pub(super) fn optional(self) -> Ty {
        Ty::union(vec![self, Ty::None])
    }
}

/// One member of a `TypedDict`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Field {
    pub(super) key: String,
    pub(super) ty: Ty,
    pub(super) required: bool,
    pub(super) docs: String,
}

/// A declaration of the module's types section.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Decl {
    /// `class Name(TypedDict): ..` (or the functional form for keys that are not identifiers).
    TypedDict { name: String, docs: String, fields: Vec<Field> },
    /// `Name: TypeAlias = "..."` (quoted, so that it may name what is declared later).
    Alias { name: String, docs: String, ty: Ty },
}

impl Decl {
    /// The declaration's text.
    pub(super) fn render(&self) -> String {
        match self {
            Decl::Alias { name, docs, ty } => {
                let mut out = format!("{name}: TypeAlias = {}\n", string_literal(&ty.render()));
                if !docs.is_empty() {
                    out.push_str(&docstring(docs, ""));
                }
                out
            }
            Decl::TypedDict { name, docs, fields } => {
                let member = |f: &Field| {
                    let t = f.ty.render();
                    if f.required { t } else { format!("NotRequired[{t}]") }
                };
                if fields.iter().all(|f| is_identifier(&f.key)) {
                    let mut out = format!("class {name}(TypedDict):\n");
                    out.push_str(&docstring(docs, "    "));
                    for f in fields {
                        out.push_str(&format!("    {}: {}\n", f.key, member(f)));
                        if !f.docs.is_empty() {
                            out.push_str(&docstring(&f.docs, "    "));
                        }
                    }
                    if fields.is_empty() && docs.is_empty() {
                        out.push_str("    pass\n");
                    }
                    out
                } else {
                    let mut out = format!("{name} = TypedDict(\n    {},\n    {{\n", string_literal(name));
                    for f in fields {
                        out.push_str(&format!("        {}: {},\n", string_literal(&f.key), member(f)));
                    }
                    out.push_str("    },\n)\n");
                    if !docs.is_empty() {
                        out.push_str(&docstring(docs, ""));
                    }
                    out
                }
            }
        }
    }
}

/// The Python side of the walk over schemas the Go generator shares.
#[derive(Debug)]
pub(super) struct Python;

/// Turns schemas into [`Ty`]s, declaring the definitions and the objects they hoist.
pub(super) type Types<'a> = crate::sdk_ir::types::Types<'a, Python>;

impl Lang for Python {
    type Ty = Ty;
    type Decl = Decl;
    type Field = Field;

    fn type_name(definition: &str) -> String {
        type_name(definition)
    }

    fn any() -> Ty {
        Ty::Any
    }

    fn named(name: String) -> Ty {
        Ty::Named(name)
    }

    fn map(value: Ty) -> Ty {
        Ty::Dict(Box::new(value))
    }

    fn field(key: &str, ty: Ty, required: bool, docs: &str) -> Field {
        Field { key: key.to_owned(), ty, required, docs: docs.to_owned() }
    }

    fn record(name: String, docs: String, fields: Vec<Field>) -> Decl {
        Decl::TypedDict { name, docs, fields }
    }

    fn declaration(types: &mut Types<'_>, name: &str, schema: &Value) -> Decl {
        let docs = description(schema).to_owned();
        match schema.as_object() {
            Some(object) if is_plain_object(object) => {
                Decl::TypedDict { name: name.to_owned(), docs, fields: types.fields(object, name) }
            }
            _ => Decl::Alias { name: name.to_owned(), docs, ty: types.ty(schema, name) },
        }
    }

    fn not_an_object(schema: &Value) -> Ty {
        if schema == &Value::Bool(false) { Ty::None } else { Ty::Any }
    }

    fn ty(types: &mut Types<'_>, object: &Map<String, Value>, hint: &str) -> Ty {
        if let Some(c) = object.get("const") {
            return literal(c);
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            return Ty::union(values.iter().map(literal).collect());
        }
        let mut parts = Vec::new();
        if let Some(base) = typed(types, object, hint) {
            parts.push(base);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(variants) = object.get(key).and_then(Value::as_array) {
                let variants: Vec<Ty> = variants
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let name = format!("{hint}{}", variant_name(v).unwrap_or_else(|| (i + 1).to_string()));
                        types.ty(v, &name)
                    })
                    .collect();
                parts.push(Ty::union(variants));
            }
        }
        if let Some(all) = object.get("allOf").and_then(Value::as_array) {
            // One member is a `$ref` with a description beside it; an intersection has no Python type.
            match all.as_slice() {
                [one] => parts.push(types.ty(one, hint)),
                _ => parts.push(Ty::Any),
            }
        }
        match parts.len() {
            0 => Ty::Any,
            1 => parts.remove(0),
            // `type` and `oneOf` together (an object with a flattened enum): not a Python type.
            _ => Ty::Any,
        }
    }
}

fn typed(types: &mut Types<'_>, object: &Map<String, Value>, hint: &str) -> Option<Ty> {
    let kinds: Vec<&str> = match object.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if object.contains_key("properties") => vec!["object"],
        _ => return None,
    };
    let each: Vec<Ty> = kinds
        .iter()
        .map(|t| match *t {
            "string" => Ty::Str,
            "integer" => Ty::Int,
            "number" => Ty::Float,
            "boolean" => Ty::Bool,
            "null" => Ty::None,
            "array" => match object.get("items") {
                Some(Value::Array(tuple)) => {
                    Ty::Tuple(tuple.iter().enumerate().map(|(i, s)| types.ty(s, &format!("{hint}{}", i + 1))).collect())
                }
                Some(items) => Ty::List(Box::new(types.ty(items, &format!("{hint}Item")))),
                None => Ty::List(Box::new(Ty::Any)),
            },
            "object" => types.object(object, hint),
            _ => Ty::Any,
        })
        .collect();
    Some(Ty::union(each))
}

/// The name a variant's tag gives it: the `const` string of one of its properties.
fn variant_name(schema: &Value) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    properties.values().find_map(|p| p.get("const").and_then(Value::as_str)).map(pascal)
}

fn literal(value: &Value) -> Ty {
    match value {
        Value::Null => Ty::None,
        Value::String(s) => Ty::Literal(vec![string_literal(s)]),
        Value::Bool(b) => Ty::Literal(vec![if *b { "True".into() } else { "False".into() }]),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ty::Literal(vec![n.to_string()]),
        Value::Number(_) => Ty::Float,
        _ => Ty::Any,
    }
}

/// The Python name of a schema definition: identifier characters kept, the rest `_`.
pub(super) fn type_name(definition: &str) -> String {
    let mut out = String::with_capacity(definition.len());
    for c in definition.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) || RESERVED.contains(&out.as_str()) {
        format!("T{out}")
    } else {
        out
    }
}

/// A Rust `snake_case` name as a Python parameter or method name.
pub(super) fn snake(name: &str) -> String {
    let mut out: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if RESERVED.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// Any name as `PascalCase`, word by word (`tool_output` → `ToolOutput`).
pub(super) use crate::sdk_ir::pascal;

/// Whether `key` can be a `TypedDict` member in the class syntax.
fn is_identifier(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED[..35].contains(&key)
}

/// A docstring at `indent`, or nothing for empty text.
pub(super) fn docstring(text: &str, indent: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let text = text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        let closing = if first.ends_with('"') { " " } else { "" };
        return format!("{indent}\"\"\"{first}{closing}\"\"\"\n");
    }
    let mut out = format!("{indent}\"\"\"{first}\n");
    for line in rest {
        if line.trim().is_empty() {
            out.push('\n');
        } else {
            out.push_str(&format!("{indent}{line}\n"));
        }
    }
    out.push_str(&format!("{indent}\"\"\"\n"));
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_become_python_types() {
        let definitions = BTreeMap::from([("Point".to_owned(), json!({"type": "object"}))]);
        let mut types = Types::new(&definitions, &[]);
        let mut ty = |schema: Value| types.ty(&schema, "Hint").render();
        assert_eq!(ty(json!({"type": "string"})), "str");
        assert_eq!(ty(json!({"type": ["integer", "null"]})), "int | None");
        assert_eq!(ty(json!({"type": "array", "items": {"type": "number"}})), "list[float]");
        assert_eq!(ty(json!({"$ref": "#/components/schemas/Point"})), "Point");
        assert_eq!(ty(json!({"$ref": "#/components/schemas/Missing"})), "Any");
        assert_eq!(ty(json!({"enum": ["a", "b", null]})), "Literal[\"a\"] | Literal[\"b\"] | None");
        assert_eq!(ty(json!({"type": "object", "additionalProperties": {"type": "integer"}})), "dict[str, int]");
        assert_eq!(ty(json!({})), "Any");
        assert_eq!(
            ty(json!({"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
                {"type": "string"}
            ]})),
            "HintA | str"
        );
        let hoisted = types.decls.last().expect("a hoisted object").render();
        assert_eq!(hoisted, "class HintA(TypedDict):\n    kind: Literal[\"a\"]\n");
    }

    #[test]
    fn names_are_valid_python() {
        assert_eq!(type_name("Page<String>"), "Page_String");
        assert_eq!(snake("from"), "from_");
        assert_eq!(snake("cancel"), "cancel_");
        assert_eq!(pascal("not_found"), "NotFound");
        assert_eq!(pascal("notFound"), "NotFound");
        assert_eq!(docstring("one \"quoted\"", ""), "\"\"\"one \"quoted\" \"\"\"\n");
    }
}
