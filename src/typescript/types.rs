//! JSON Schemas (draft-07, as schemars writes them) as TypeScript types, and the spelling of
//! names and comments.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Where `$ref`s point: `#/components/schemas/Name`.
const REF_PREFIX: &str = "#/components/schemas/";

/// Words TypeScript reserves as parameter or variable names.
const RESERVED: &[&str] = &[
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// The TypeScript name of a schema definition: its name with anything that is not an
/// identifier character replaced (`Page<String>` becomes `Page_String`).
pub(super) fn type_name(definition: &str) -> String {
    let mut out = String::with_capacity(definition.len());
    for c in definition.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) { format!("T{out}") } else { out }
}

/// `snake_case` as `camelCase`, safe as a TypeScript parameter or method name.
pub(super) fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    if RESERVED.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// `snake_case` or `camelCase` as `PascalCase`.
pub(super) fn pascal(name: &str) -> String {
    let camel = camel(name);
    let camel = camel.trim_end_matches('_');
    let mut chars = camel.chars();
    chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}

/// A property key: bare when it is an identifier, quoted otherwise.
pub(super) fn property_key(key: &str) -> String {
    let identifier = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier { key.to_owned() } else { string_literal(key) }
}

/// A TypeScript string literal (JSON's spelling is valid TypeScript).
pub(super) fn string_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A `/** .. */` comment at `indent`, or nothing for empty text.
pub(super) fn doc_comment(text: &str, indent: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let text = text.replace("*/", "*\\/");
    let mut out = format!("{indent}/**\n");
    for line in text.lines() {
        if line.trim().is_empty() {
            out.push_str(&format!("{indent} *\n"));
        } else {
            out.push_str(&format!("{indent} * {line}\n"));
        }
    }
    out.push_str(&format!("{indent} */\n"));
    out
}

/// Turns schemas into TypeScript type expressions.
pub(super) struct Types<'a> {
    pub(super) definitions: &'a BTreeMap<String, Value>,
}

impl Types<'_> {
    /// The declaration of one definition: an `interface` for a plain object, else a `type`.
    pub(super) fn declaration(&self, name: &str, schema: &Value) -> String {
        let ts_name = type_name(name);
        let mut out = doc_comment(description(schema).unwrap_or_default(), "");
        match schema.as_object() {
            Some(object) if is_plain_object(object) => {
                out.push_str(&format!("export interface {ts_name} {}\n", self.object(object, 0)));
            }
            _ => match self.variants(schema) {
                Some(variants) if variants.iter().any(|v| v.contains('\n')) || variants.join(" | ").len() > 80 => {
                    out.push_str(&format!("export type {ts_name} =\n"));
                    for v in &variants {
                        out.push_str(&format!("  | {v}\n"));
                    }
                    out.pop();
                    out.push_str(";\n");
                }
                _ => out.push_str(&format!("export type {ts_name} = {};\n", self.expr(schema, 0))),
            },
        }
        out
    }

    /// The alternatives of a schema that is only a `oneOf` / `anyOf`, each at level 1.
    fn variants(&self, schema: &Value) -> Option<Vec<String>> {
        let object = schema.as_object()?;
        let composed = ["type", "properties", "allOf", "$ref", "enum", "const"].iter().any(|k| object.contains_key(*k));
        let alternatives = object.get("oneOf").or_else(|| object.get("anyOf"))?.as_array()?;
        if composed || (object.contains_key("oneOf") && object.contains_key("anyOf")) {
            return None;
        }
        Some(union_parts(alternatives.iter().map(|v| self.expr(v, 1)).collect()))
    }

    /// The type of `schema` at nesting level `level` (for the indentation of object members).
    pub(super) fn expr(&self, schema: &Value, level: usize) -> String {
        let object = match schema {
            Value::Bool(true) => return "unknown".into(),
            Value::Bool(false) => return "never".into(),
            Value::Object(o) => o,
            _ => return "unknown".into(),
        };
        if let Some(r) = object.get("$ref").and_then(Value::as_str) {
            return match r.strip_prefix(REF_PREFIX) {
                Some(name) if self.definitions.contains_key(name) => type_name(name),
                _ => "unknown".into(),
            };
        }
        if let Some(c) = object.get("const") {
            return literal(c);
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            return union(values.iter().map(literal).collect());
        }
        let mut parts = Vec::new();
        if let Some(base) = self.typed(object, level) {
            parts.push(base);
        }
        for (key, join) in [("oneOf", " | "), ("anyOf", " | ")] {
            if let Some(variants) = object.get(key).and_then(Value::as_array) {
                let variants: Vec<String> = variants.iter().map(|v| self.expr(v, level)).collect();
                parts.push(variants.join(join));
            }
        }
        if let Some(all) = object.get("allOf").and_then(Value::as_array) {
            parts.extend(all.iter().map(|v| group(&self.expr(v, level), 2)));
        }
        match parts.len() {
            0 => "unknown".into(),
            1 => parts.remove(0),
            _ => parts.iter().map(|p| group(p, 2)).collect::<Vec<_>>().join(" & "),
        }
    }

    /// The part of a schema its `type` (or its `properties`) says.
    fn typed(&self, object: &Map<String, Value>, level: usize) -> Option<String> {
        let types: Vec<&str> = match object.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if object.contains_key("properties") => vec!["object"],
            _ => return None,
        };
        let each: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "string" => "string".into(),
                "integer" | "number" => "number".into(),
                "boolean" => "boolean".into(),
                "null" => "null".into(),
                "array" => self.array(object, level),
                "object" => self.object(object, level),
                _ => "unknown".into(),
            })
            .collect();
        Some(union(each))
    }

    fn array(&self, object: &Map<String, Value>, level: usize) -> String {
        match object.get("items") {
            Some(Value::Array(tuple)) => {
                format!("[{}]", tuple.iter().map(|i| self.expr(i, level)).collect::<Vec<_>>().join(", "))
            }
            Some(items) => format!("{}[]", group(&self.expr(items, level), 2)),
            None => "unknown[]".into(),
        }
    }

    fn object(&self, object: &Map<String, Value>, level: usize) -> String {
        let properties = object.get("properties").and_then(Value::as_object);
        let extra = match object.get("additionalProperties") {
            None | Some(Value::Bool(false)) => None,
            Some(schema) => Some(schema),
        };
        let Some(properties) = properties.filter(|p| !p.is_empty()) else {
            return match extra {
                Some(value) => format!("{{ [key: string]: {} }}", self.expr(value, level)),
                None if object.get("additionalProperties") == Some(&Value::Bool(false)) => "{}".into(),
                None => "{ [key: string]: unknown }".into(),
            };
        };
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
        let mut members: Vec<Member> = properties
            .iter()
            .map(|(key, schema)| {
                let optional = if required.contains(&key.as_str()) { "" } else { "?" };
                Member {
                    docs: description(schema).unwrap_or_default().to_owned(),
                    text: format!("{}{optional}: {}", property_key(key), self.expr(schema, level + 1)),
                }
            })
            .collect();
        if extra.is_some() {
            // Other members may be present; an index signature must admit every property's type.
            members.push(Member { docs: String::new(), text: "[key: string]: unknown".into() });
        }
        object_literal(&members, level)
    }
}

/// One member of an object type: its doc comment and `key: type`.
pub(super) struct Member {
    pub(super) docs: String,
    pub(super) text: String,
}

/// `{ a: A; b?: B }` on one line when it is short and undocumented, else one member a line,
/// at nesting `level`.
pub(super) fn object_literal(members: &[Member], level: usize) -> String {
    let one_line = members.iter().all(|m| m.docs.is_empty() && !m.text.contains('\n'));
    let texts: Vec<&str> = members.iter().map(|m| m.text.as_str()).collect();
    if one_line && texts.join("; ").len() <= 60 {
        return format!("{{ {} }}", texts.join("; "));
    }
    let inner = "  ".repeat(level + 1);
    let mut out = String::from("{\n");
    for m in members {
        out.push_str(&doc_comment(&m.docs, &inner));
        out.push_str(&format!("{inner}{};\n", m.text));
    }
    out.push_str(&"  ".repeat(level));
    out.push('}');
    out
}

/// Prose in lines of at most `width` characters (paragraphs kept).
pub(super) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for (i, paragraph) in text.split("\n\n").enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let mut line = 0;
        for word in paragraph.split_whitespace() {
            if line > 0 && line + 1 + word.len() > width {
                out.push('\n');
                line = 0;
            } else if line > 0 {
                out.push(' ');
                line += 1;
            }
            out.push_str(word);
            line += word.len();
        }
    }
    out
}

/// An object with members and nothing that makes it a union or intersection.
fn is_plain_object(object: &Map<String, Value>) -> bool {
    object.get("type") == Some(&Value::String("object".into()))
        && object.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
        && !["$ref", "allOf", "anyOf", "oneOf", "enum", "const"].iter().any(|k| object.contains_key(*k))
}

fn description(schema: &Value) -> Option<&str> {
    schema.get("description").and_then(Value::as_str)
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => string_literal(s),
        Value::Null | Value::Bool(_) | Value::Number(_) => value.to_string(),
        _ => "unknown".into(),
    }
}

/// `a | b`, with repeats removed.
fn union(parts: Vec<String>) -> String {
    union_parts(parts).join(" | ")
}

fn union_parts(mut parts: Vec<String>) -> Vec<String> {
    let mut seen = Vec::with_capacity(parts.len());
    parts.retain(|p| {
        let new = !seen.contains(p);
        seen.push(p.clone());
        new
    });
    parts
}

/// Parenthesized when it is a union or intersection that another operator binds.
fn group(expr: &str, operands: usize) -> String {
    let compound = operands > 1 && (top_level_contains(expr, '|') || top_level_contains(expr, '&'));
    if compound { format!("({expr})") } else { expr.to_owned() }
}

/// `c` outside any brackets and string literals.
fn top_level_contains(expr: &str, c: char) -> bool {
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    for ch in expr.chars() {
        if in_string {
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => in_string = true,
            '{' | '[' | '(' | '<' => depth += 1,
            '}' | ']' | ')' | '>' => depth -= 1,
            _ if ch == c && depth == 0 => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ts(schema: Value) -> String {
        let definitions = BTreeMap::from([("Point".to_owned(), json!({"type": "object"}))]);
        Types { definitions: &definitions }.expr(&schema, 0)
    }

    #[test]
    fn schemas_become_typescript_types() {
        assert_eq!(ts(json!({"type": "string"})), "string");
        assert_eq!(ts(json!({"type": ["integer", "null"]})), "number | null");
        assert_eq!(ts(json!({"type": "array", "items": {"type": ["string", "null"]}})), "(string | null)[]");
        assert_eq!(
            ts(json!({"type": "array", "items": [{"type": "string"}, {"type": "boolean"}]})),
            "[string, boolean]"
        );
        assert_eq!(ts(json!({"$ref": "#/components/schemas/Point"})), "Point");
        assert_eq!(ts(json!({"$ref": "#/components/schemas/Missing"})), "unknown");
        assert_eq!(ts(json!({"enum": ["a", "b", null]})), r#""a" | "b" | null"#);
        assert_eq!(ts(json!({"const": "x"})), r#""x""#);
        assert_eq!(ts(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})), "string | number");
        assert_eq!(
            ts(json!({"type": "object", "additionalProperties": {"type": "integer"}})),
            "{ [key: string]: number }"
        );
        assert_eq!(ts(json!({})), "unknown");
        assert_eq!(ts(json!(true)), "unknown");
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"a b": {"type": "string", "description": "Spaced."}, "c": {"type": "integer"}}, "required": ["c"]})
            ),
            "{\n  /**\n   * Spaced.\n   */\n  \"a b\"?: string;\n  c: number;\n}"
        );
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}}, "required": ["kind"]})
            ),
            "{ kind: \"a\"; n?: number }"
        );
        assert_eq!(wrap("one two three\n\nfour", 7), "one two\nthree\n\nfour");
    }

    #[test]
    fn names_are_valid_typescript() {
        assert_eq!(type_name("Page<String>"), "Page_String");
        assert_eq!(type_name("Array_of_int"), "Array_of_int");
        assert_eq!(camel("read_text_file"), "readTextFile");
        assert_eq!(camel("default"), "default_");
        assert_eq!(pascal("not_found"), "NotFound");
        assert_eq!(pascal("NotFound"), "NotFound");
        assert_eq!(property_key("x-y"), "\"x-y\"");
        assert_eq!(doc_comment("a */ b", ""), "/**\n * a *\\/ b\n */\n");
    }
}
