//! The IR of a generated Go package's types: JSON Schemas become [`GoTy`] expressions and
//! [`Decl`]s (a struct per object, merged for a union of objects, a string type with constants
//! for a string enum, a named type for anything else), which then render as Go.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub(super) use crate::sdk_ir::types::string_literal;
use crate::sdk_ir::types::{Lang, description, is_plain_object};

/// A Go type expression.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum GoTy {
    /// Any JSON value (`any`).
    Any,
    Bool,
    /// An integer type (`int64`, `uint32`, …).
    Int(&'static str),
    Float,
    Str,
    Slice(Box<GoTy>),
    Map(Box<GoTy>),
    /// `*T`: may be `null` or left out.
    Ptr(Box<GoTy>),
    Named(String),
}

impl GoTy {
    pub(super) fn render(&self) -> String {
        match self {
            GoTy::Any => "any".into(),
            GoTy::Bool => "bool".into(),
            GoTy::Int(t) => (*t).into(),
            GoTy::Float => "float64".into(),
            GoTy::Str => "string".into(),
            GoTy::Slice(t) => format!("[]{}", t.render()),
            GoTy::Map(t) => format!("map[string]{}", t.render()),
            GoTy::Ptr(t) => format!("*{}", t.render()),
            GoTy::Named(n) => n.clone(),
        }
    }

    /// The type of a value that may be absent or `null`: a pointer (maps, slices and `any` are
    /// nil already).
    pub(super) fn optional(self) -> GoTy {
        match self {
            GoTy::Any | GoTy::Slice(_) | GoTy::Map(_) | GoTy::Ptr(_) => self,
            other => GoTy::Ptr(Box::new(other)),
        }
    }
}

/// One field of a struct.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Field {
    pub(super) name: String,
    pub(super) key: String,
    pub(super) ty: GoTy,
    pub(super) omitempty: bool,
    pub(super) docs: String,
}

/// A declaration of the package's types.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Decl {
    Struct {
        name: String,
        docs: String,
        fields: Vec<Field>,
    },
    /// `type Name string` and a constant per value.
    StringEnum {
        name: String,
        docs: String,
        values: Vec<(String, String)>,
    },
    /// `type Name T`.
    Named {
        name: String,
        docs: String,
        ty: GoTy,
    },
}

impl Decl {
    pub(super) fn render(&self) -> String {
        match self {
            Decl::Struct { name, docs, fields } => {
                let mut out = comment(name, docs, "");
                out.push_str(&format!("type {name} struct {{\n"));
                for f in fields {
                    if !f.docs.is_empty() {
                        out.push_str(&comment_lines(&f.docs, "\t"));
                    }
                    let omit = if f.omitempty { ",omitempty" } else { "" };
                    out.push_str(&format!("\t{} {} `json:\"{}{omit}\"`\n", f.name, f.ty.render(), f.key));
                }
                out.push_str("}\n");
                out
            }
            Decl::StringEnum { name, docs, values } => {
                let mut out = comment(name, docs, "");
                out.push_str(&format!("type {name} string\n\n// The values of {name}.\nconst (\n"));
                for (value, docs) in values {
                    if !docs.is_empty() {
                        out.push_str(&comment_lines(docs, "\t"));
                    }
                    out.push_str(&format!("\t{name}{} {name} = {}\n", pascal(value), string_literal(value)));
                }
                out.push_str(")\n");
                out
            }
            Decl::Named { name, docs, ty } => {
                let mut out = comment(name, docs, "");
                out.push_str(&format!("type {name} = {}\n", ty.render()));
                out
            }
        }
    }
}

/// The Go side of the walk over schemas the Python generator shares.
#[derive(Debug)]
pub(super) struct Go;

/// Turns schemas into [`GoTy`]s, declaring definitions and the objects they hoist.
pub(super) type Types<'a> = crate::sdk_ir::types::Types<'a, Go>;

impl Lang for Go {
    type Ty = GoTy;
    type Decl = Decl;
    type Field = Field;

    fn type_name(definition: &str) -> String {
        type_name(definition)
    }

    fn any() -> GoTy {
        GoTy::Any
    }

    fn named(name: String) -> GoTy {
        GoTy::Named(name)
    }

    fn map(value: GoTy) -> GoTy {
        GoTy::Map(Box::new(value))
    }

    fn field(key: &str, ty: GoTy, required: bool, docs: &str) -> Field {
        Field {
            name: pascal(key),
            key: key.to_owned(),
            ty: if required { ty } else { ty.optional() },
            omitempty: !required,
            docs: docs.to_owned(),
        }
    }

    fn record(name: String, docs: String, fields: Vec<Field>) -> Decl {
        Decl::Struct { name, docs, fields }
    }

    fn declaration(types: &mut Types<'_>, name: &str, schema: &Value) -> Decl {
        let docs = description(schema).to_owned();
        let object = schema.as_object();
        if let Some(values) = object.and_then(string_enum) {
            return Decl::StringEnum { name: name.to_owned(), docs, values };
        }
        if let Some(variants) = object.and_then(object_variants) {
            return Decl::Struct { name: name.to_owned(), docs, fields: merged(types, &variants, name) };
        }
        match object {
            Some(o) if is_plain_object(o) => {
                Decl::Struct { name: name.to_owned(), docs, fields: types.fields(o, name) }
            }
            _ => Decl::Named { name: name.to_owned(), docs, ty: types.ty(schema, name) },
        }
    }

    fn ty(types: &mut Types<'_>, object: &Map<String, Value>, hint: &str) -> GoTy {
        if let Some(all) = object.get("allOf").and_then(Value::as_array) {
            return match all.as_slice() {
                [one] => types.ty(one, hint),
                _ => GoTy::Any,
            };
        }
        if string_enum(object).is_some() || object_variants(object).is_some() {
            return types.hoist(&Value::Object(object.clone()), hint);
        }
        // `[T, null]`, or `anyOf: [T, {type: null}]` (an `Option` schemars writes).
        let kinds: Vec<&str> = match object.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            Some(_) => return GoTy::Any,
            None if object.contains_key("properties") => vec!["object"],
            None => {
                if let Some(alternatives) =
                    object.get("anyOf").or_else(|| object.get("oneOf")).and_then(Value::as_array)
                {
                    let non_null: Vec<&Value> =
                        alternatives.iter().filter(|a| a.get("type") != Some(&Value::from("null"))).collect();
                    if non_null.len() == 1 && alternatives.len() == 2 {
                        return types.ty(non_null[0], hint).optional();
                    }
                }
                return GoTy::Any;
            }
        };
        let nullable = kinds.contains(&"null");
        let non_null: Vec<&str> = kinds.into_iter().filter(|t| *t != "null").collect();
        let base = match non_null.as_slice() {
            ["string"] => GoTy::Str,
            ["boolean"] => GoTy::Bool,
            ["number"] => GoTy::Float,
            ["integer"] => GoTy::Int(int_type(object.get("format").and_then(Value::as_str))),
            ["array"] => match object.get("items") {
                Some(items) if items.is_object() => GoTy::Slice(Box::new(types.ty(items, &format!("{hint}Item")))),
                _ => GoTy::Slice(Box::new(GoTy::Any)),
            },
            ["object"] => types.object(object, hint),
            _ => GoTy::Any,
        };
        if nullable { base.optional() } else { base }
    }
}

/// The fields of every variant of a union of objects, in one struct: a field every variant
/// has with one type stays as it is; the others become optional; a key with two types is `any`.
fn merged(types: &mut Types<'_>, variants: &[&Map<String, Value>], owner: &str) -> Vec<Field> {
    let mut out: Vec<Field> = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for v in variants {
        for f in types.fields(v, owner) {
            *counts.entry(f.key.clone()).or_default() += 1;
            match out.iter_mut().find(|known| known.key == f.key) {
                Some(known) if known.ty != f.ty => known.ty = GoTy::Any,
                Some(_) => {}
                None => out.push(f),
            }
        }
    }
    for f in &mut out {
        if counts.get(&f.key).copied().unwrap_or(0) < variants.len() && !f.omitempty {
            f.ty = f.ty.clone().optional();
            f.omitempty = true;
        }
    }
    out
}

fn int_type(format: Option<&str>) -> &'static str {
    match format {
        Some("int8") => "int8",
        Some("int16") => "int16",
        Some("int32") => "int32",
        Some("uint8") => "uint8",
        Some("uint16") => "uint16",
        Some("uint32") => "uint32",
        Some("uint64" | "uint") => "uint64",
        _ => "int64",
    }
}

/// The values of a string enum (`enum: [..]`, or `oneOf` of string `const`s), with their docs.
fn string_enum(object: &Map<String, Value>) -> Option<Vec<(String, String)>> {
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return values.iter().map(|v| v.as_str().map(|s| (s.to_owned(), String::new()))).collect();
    }
    let variants = object.get("oneOf").and_then(Value::as_array)?;
    variants
        .iter()
        .map(|v| {
            let value = v.get("const").and_then(Value::as_str).or_else(|| {
                v.get("enum").and_then(Value::as_array).filter(|e| e.len() == 1).and_then(|e| e[0].as_str())
            })?;
            Some((value.to_owned(), description(v).to_owned()))
        })
        .collect()
}

/// The variants of a union whose every variant is an object with members.
fn object_variants(object: &Map<String, Value>) -> Option<Vec<&Map<String, Value>>> {
    if object.contains_key("properties") {
        return None;
    }
    let variants = object.get("oneOf").or_else(|| object.get("anyOf")).and_then(Value::as_array)?;
    variants.iter().map(|v| v.as_object().filter(|o| is_plain_object(o))).collect()
}

/// An exported Go name for a definition.
pub(super) fn type_name(definition: &str) -> String {
    let out = pascal(definition);
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) { format!("T{out}") } else { out }
}

/// Any name as `PascalCase`, word by word (`tool_output` → `ToolOutput`).
pub(super) use crate::sdk_ir::pascal;

/// Go's keywords and predeclared names a parameter must not take.
const RESERVED: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
    "ctx",
    "err",
    "p",
    "c",
    "params",
    "peer",
    "service",
    "any",
    "string",
    "error",
    "len",
    "copy",
];

/// A Rust name as a Go parameter (`tool_name` → `toolName`).
pub(super) fn param_name(name: &str) -> String {
    let p = pascal(name);
    let mut chars = p.chars();
    let mut out: String = chars.next().map(|c| c.to_ascii_lowercase().to_string() + chars.as_str()).unwrap_or_default();
    if RESERVED.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// A doc comment that starts with the declared name (what `go doc` expects).
pub(super) fn comment(name: &str, docs: &str, indent: &str) -> String {
    let docs = docs.trim();
    if docs.is_empty() {
        return format!("{indent}// {name} is generated from the Rust traits.\n");
    }
    comment_lines(&format!("{name}: {docs}"), indent)
}

pub(super) fn comment_lines(text: &str, indent: &str) -> String {
    text.trim()
        .lines()
        .map(|l| if l.trim().is_empty() { format!("{indent}//\n") } else { format!("{indent}// {l}\n") })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_become_go_types() {
        let definitions = BTreeMap::from([("Point".to_owned(), json!({"type": "object"}))]);
        let mut types = Types::new(&definitions, &[]);
        let mut ty = |schema: Value| types.ty(&schema, "Hint").render();
        assert_eq!(ty(json!({"type": "string"})), "string");
        assert_eq!(ty(json!({"type": ["integer", "null"], "format": "uint64"})), "*uint64");
        assert_eq!(ty(json!({"type": "integer"})), "int64");
        assert_eq!(ty(json!({"type": "array", "items": {"type": "number"}})), "[]float64");
        assert_eq!(ty(json!({"$ref": "#/components/schemas/Point"})), "Point");
        assert_eq!(ty(json!({"$ref": "#/components/schemas/Missing"})), "any");
        assert_eq!(ty(json!({"type": "object", "additionalProperties": {"type": "boolean"}})), "map[string]bool");
        assert_eq!(ty(json!({"anyOf": [{"type": "string"}, {"type": "null"}]})), "*string");
        assert_eq!(ty(json!({})), "any");
        assert_eq!(ty(json!({"enum": ["a", "b"]})), "Hint");
        let hoisted = types.decls.last().expect("a hoisted enum").render();
        assert!(hoisted.contains("type Hint string") && hoisted.contains("HintA Hint = \"a\""), "{hoisted}");
    }

    #[test]
    fn a_union_of_objects_is_one_struct() {
        let definitions = BTreeMap::new();
        let mut types = Types::new(&definitions, &[]);
        let union = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"type": "string", "const": "a"}, "n": {"type": "integer"}}, "required": ["kind", "n"]},
            {"type": "object", "properties": {"kind": {"type": "string", "const": "b"}}, "required": ["kind"]}
        ]});
        assert_eq!(types.ty(&union, "Event").render(), "Event");
        let decl = types.decls.last().expect("the struct").render();
        assert!(decl.contains("Kind string `json:\"kind\"`"), "{decl}");
        assert!(decl.contains("N *int64 `json:\"n,omitempty\"`"), "{decl}");
    }

    #[test]
    fn names_are_valid_go() {
        assert_eq!(type_name("Page<String>"), "PageString");
        assert_eq!(pascal("tool_output"), "ToolOutput");
        assert_eq!(param_name("type"), "type_");
        assert_eq!(param_name("read_text_file"), "readTextFile");
    }
}
