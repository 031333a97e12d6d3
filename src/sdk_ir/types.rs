//! The walk over JSON Schemas (draft-07, as schemars writes them) that the Python and Go
//! generators share: definitions declared in name order, `$ref`s resolved to declared names,
//! inline objects with members hoisted under fresh names, objects without members as maps, an
//! object's members with their required flags. A [`Lang`] says how each of these is spelled
//! (a `TypedDict` or a struct, `dict[str, T]` or `map[string]T`) and maps what the languages
//! do differently (unions, enums, nullable types).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::pascal;

/// Where `$ref`s point: `#/components/schemas/Name`.
const REF_PREFIX: &str = "#/components/schemas/";

/// What a language's types are, and the parts of the walk that are its own.
pub(crate) trait Lang: Sized {
    /// A type expression.
    type Ty;
    /// A declaration of the types section.
    type Decl;
    /// One member of a declared object.
    type Field;

    /// The language's name of a schema definition (or of a hoisted object's hint).
    fn type_name(definition: &str) -> String;
    /// Any JSON value.
    fn any() -> Self::Ty;
    /// A declared name.
    fn named(name: String) -> Self::Ty;
    /// An object without members whose values are `value`.
    fn map(value: Self::Ty) -> Self::Ty;
    /// A member `key` of type `ty` (the type of its schema as it is, however `required`).
    fn field(key: &str, ty: Self::Ty, required: bool, docs: &str) -> Self::Field;
    /// The declaration of an object with members.
    fn record(name: String, docs: String, fields: Vec<Self::Field>) -> Self::Decl;
    /// The declaration of definition `name` (or of a hoisted schema): a record, an alias, …
    fn declaration(types: &mut Types<'_, Self>, name: &str, schema: &Value) -> Self::Decl;
    /// The type of `schema` past a `$ref` (which [`Types::ty`] resolves first).
    fn ty(types: &mut Types<'_, Self>, object: &Map<String, Value>, hint: &str) -> Self::Ty;
    /// The type of a schema that is not an object (`true`, `false`).
    fn not_an_object(_schema: &Value) -> Self::Ty {
        Self::any()
    }
}

/// Turns schemas into `L::Ty`s, declaring the definitions and the objects they hoist.
pub(crate) struct Types<'a, L: Lang> {
    definitions: &'a BTreeMap<String, Value>,
    pub(crate) decls: Vec<L::Decl>,
    taken: BTreeSet<String>,
}

impl<'a, L: Lang> Types<'a, L> {
    /// Every definition declared (in name order), with the names `reserved` kept free.
    pub(crate) fn new(definitions: &'a BTreeMap<String, Value>, reserved: &[String]) -> Self {
        let mut taken: BTreeSet<String> = reserved.iter().cloned().collect();
        taken.extend(definitions.keys().map(|d| L::type_name(d)));
        let mut types = Types { definitions, decls: Vec::new(), taken };
        for (name, schema) in definitions {
            let declared = L::type_name(name);
            let decl = L::declaration(&mut types, &declared, schema);
            types.decls.push(decl);
        }
        types
    }

    /// The type of `schema`; an inline object with members is declared under `hint`.
    pub(crate) fn ty(&mut self, schema: &Value, hint: &str) -> L::Ty {
        let Some(object) = schema.as_object() else { return L::not_an_object(schema) };
        if let Some(r) = object.get("$ref").and_then(Value::as_str) {
            return match r.strip_prefix(REF_PREFIX) {
                Some(name) if self.definitions.contains_key(name) => L::named(L::type_name(name)),
                _ => L::any(),
            };
        }
        L::ty(self, object, hint)
    }

    /// A fresh declaration name from `hint`.
    pub(crate) fn fresh(&mut self, hint: &str) -> String {
        let base = L::type_name(hint);
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// The members of an object, in the schema's order; an inline object among them is
    /// declared as `{owner}{Key}`.
    pub(crate) fn fields(&mut self, object: &Map<String, Value>, owner: &str) -> Vec<L::Field> {
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
        let Some(properties) = object.get("properties").and_then(Value::as_object) else { return Vec::new() };
        properties
            .iter()
            .map(|(key, schema)| {
                let ty = self.ty(schema, &format!("{owner}{}", pascal(key)));
                L::field(key, ty, required.contains(&key.as_str()), description(schema))
            })
            .collect()
    }

    /// An object schema's type: a map without members (of `additionalProperties`' type, when
    /// that is a schema), else a record declared under a fresh name from `hint`.
    pub(crate) fn object(&mut self, object: &Map<String, Value>, hint: &str) -> L::Ty {
        if !has_members(object) {
            let value = match object.get("additionalProperties") {
                Some(value @ Value::Object(_)) => self.ty(value, &format!("{hint}Value")),
                _ => L::any(),
            };
            return L::map(value);
        }
        let name = self.fresh(hint);
        let fields = self.fields(object, &name);
        let docs = object.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
        self.decls.push(L::record(name.clone(), docs, fields));
        L::named(name)
    }

    /// Declare `schema` under a fresh name from `hint` (an enum, a union, …): its name.
    pub(crate) fn hoist(&mut self, schema: &Value, hint: &str) -> L::Ty {
        let name = self.fresh(hint);
        let decl = L::declaration(self, &name, schema);
        self.decls.push(decl);
        L::named(name)
    }
}

/// Whether an object schema lists members.
fn has_members(object: &Map<String, Value>) -> bool {
    object.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
}

/// An object with members and nothing that makes it a union.
pub(crate) fn is_plain_object(object: &Map<String, Value>) -> bool {
    object.get("type") == Some(&Value::String("object".into()))
        && has_members(object)
        && !["$ref", "allOf", "anyOf", "oneOf", "enum", "const"].iter().any(|k| object.contains_key(*k))
}

/// A schema's `description`, or nothing.
pub(crate) fn description(schema: &Value) -> &str {
    schema.get("description").and_then(Value::as_str).unwrap_or_default()
}

/// A string literal as JSON spells it, which Python and Go read the same for what JSON escapes.
pub(crate) fn string_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}
