//! A trait as data, at run time: what `#[rpc]` knows about each method (wire names, params
//! style, what it returns, its typed errors) with a JSON Schema for every type. The OpenRPC
//! document and the TypeScript module are both renderings of it.

use serde_json::Value;

/// One `#[rpc]` trait, described: what [`Describe::describe`](super::Describe::describe) returns.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Service {
    /// The trait's name, as written in Rust (`Files`).
    pub name: String,
    /// The trait's doc comment (unindented; empty when there is none).
    pub docs: String,
    /// Its methods, in the order of the trait.
    pub methods: Vec<Method>,
    /// Rust types that have no JSON Schema (no `schemars::JsonSchema` impl): their schema is
    /// `{}` (any value) and their TypeScript type `unknown`.
    pub untyped: Vec<String>,
}

/// A request (answered) or a notification (never answered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodKind {
    /// `#[method]`: a request, answered with a result or an error.
    Request,
    /// `#[notification]`: no answer.
    Notification,
}

/// How a method's params travel (the trait's `params = ".."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamStructure {
    /// `"params":[a, b]` (OpenRPC `by-position`).
    ByPosition,
    /// `"params":{"a":..,"b":..}` (OpenRPC `by-name`).
    ByName,
    /// The one argument *is* the params object (OpenRPC `by-name`, its properties as params).
    Object,
}

/// One method of a [`Service`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[must_use]
pub struct Method {
    /// The Rust method's name (`read_text_file`); TypeScript spells it `readTextFile`.
    pub rust_name: String,
    /// The wire name the client sends.
    pub name: String,
    /// More names the server answers.
    pub aliases: Vec<String>,
    /// Request or notification.
    pub kind: MethodKind,
    /// The method's doc comment (unindented).
    pub docs: String,
    /// How its params travel.
    pub params: ParamStructure,
    /// Its params, in order (context arguments are not params and are left out).
    pub args: Vec<Param>,
    /// What a request's answer carries (`Returns::Nothing` for a notification).
    pub returns: Returns,
    /// The typed errors it may answer with (from its error type's
    /// [`DescribeErrors`](super::DescribeErrors); empty when it has none).
    pub errors: Vec<ErrorDoc>,
}

/// What a param carries.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ParamKind {
    /// A value of the schema.
    Value,
    /// `RpcStream<T>`: an enumerable object (`{"token":N}`) the receiver pulls `T`s from with
    /// `$/enumerator/next`; the schema is the item's.
    Stream,
    /// `Progress<T>`: a progress token (or `null`); the receiver reports `T`s with
    /// `$/progress`; the schema is the report's.
    Progress,
}

/// One param of a [`Method`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[must_use]
pub struct Param {
    /// The Rust argument's name.
    pub rust_name: String,
    /// Its key in by-name params.
    pub key: String,
    /// Its JSON Schema (for streams, the item's; for progress, the report's).
    pub schema: Value,
    /// A caller must send it (an `Option<T>` argument may be left out).
    pub required: bool,
    /// A value, a stream or a progress token.
    pub kind: ParamKind,
}

/// What a request's answer carries.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Returns {
    /// A notification: no answer at all.
    Nothing,
    /// `"result":null`.
    Unit,
    /// `"result":` a value of the schema.
    Value(Value),
    /// `"result":{"token":N,"values":[..]}`: a stream of items of the schema, pulled with
    /// `$/enumerator/next`.
    Stream(Value),
}

/// One typed error: an error object with a known code, and the schema of its `data`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ErrorDoc {
    /// A name for it (`NotFound`); TypeScript makes it the class `NotFoundError`.
    pub name: String,
    /// Its `code`.
    pub code: i64,
    /// Its usual `message`.
    pub message: String,
    /// What it means (unindented; may be empty).
    pub docs: String,
    /// The schema of its `data`, when it has data.
    pub data: Option<Value>,
}

impl Service {
    /// A service without methods.
    pub fn new(name: impl Into<String>, docs: &[&str]) -> Self {
        Service { name: name.into(), docs: unindent(docs), methods: Vec::new(), untyped: Vec::new() }
    }

    /// Add a method.
    pub fn push(&mut self, method: Method) {
        self.methods.push(method);
    }

    /// Record a Rust type without a JSON Schema (once).
    pub fn untyped(&mut self, rust_type: &str) {
        if !self.untyped.iter().any(|t| t == rust_type) {
            self.untyped.push(rust_type.to_owned());
        }
    }
}

impl Method {
    fn new(kind: MethodKind, name: &str, rust_name: &str) -> Self {
        Method {
            rust_name: rust_name.to_owned(),
            name: name.to_owned(),
            aliases: Vec::new(),
            kind,
            docs: String::new(),
            params: ParamStructure::ByPosition,
            args: Vec::new(),
            returns: match kind {
                MethodKind::Request => Returns::Unit,
                MethodKind::Notification => Returns::Nothing,
            },
            errors: Vec::new(),
        }
    }

    /// A request named `name` on the wire and `rust_name` in Rust; answered `null` until
    /// [`returns`](Self::returns) says otherwise.
    pub fn request(name: &str, rust_name: &str) -> Self {
        Method::new(MethodKind::Request, name, rust_name)
    }

    /// A notification.
    pub fn notification(name: &str, rust_name: &str) -> Self {
        Method::new(MethodKind::Notification, name, rust_name)
    }

    /// More names the server answers.
    pub fn aliases(mut self, aliases: &[&str]) -> Self {
        self.aliases = aliases.iter().map(|a| (*a).to_owned()).collect();
        self
    }

    /// The doc comment, as its lines (`#[doc = ".."]` values).
    pub fn docs(mut self, lines: &[&str]) -> Self {
        self.docs = unindent(lines);
        self
    }

    /// How the params travel.
    pub fn params(mut self, structure: ParamStructure) -> Self {
        self.params = structure;
        self
    }

    /// Add a param.
    pub fn param(mut self, param: Param) -> Self {
        self.args.push(param);
        self
    }

    /// What the answer carries.
    pub fn returns(mut self, returns: Returns) -> Self {
        self.returns = returns;
        self
    }

    /// Add typed errors (those already listed by name and code are skipped).
    pub fn errors(mut self, errors: Vec<ErrorDoc>) -> Self {
        for e in errors {
            if !self.errors.iter().any(|known| known.name == e.name && known.code == e.code) {
                self.errors.push(e);
            }
        }
        self
    }
}

impl Param {
    fn new(kind: ParamKind, key: &str, rust_name: &str, schema: Value) -> Self {
        Param { rust_name: rust_name.to_owned(), key: key.to_owned(), schema, required: true, kind }
    }

    /// A plain value param.
    pub fn value(key: &str, rust_name: &str, schema: Value) -> Self {
        Param::new(ParamKind::Value, key, rust_name, schema)
    }

    /// An `RpcStream<T>` param; `item` is the schema of `T`.
    pub fn stream(key: &str, rust_name: &str, item: Value) -> Self {
        Param::new(ParamKind::Stream, key, rust_name, item)
    }

    /// A `Progress<T>` param; `report` is the schema of `T`. A caller may leave it out.
    pub fn progress(key: &str, rust_name: &str, report: Value) -> Self {
        Param { required: false, ..Param::new(ParamKind::Progress, key, rust_name, report) }
    }

    /// Whether the caller must send it.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }
}

impl ErrorDoc {
    /// An error object with `code` and `message`, called `name` in generated code.
    pub fn new(name: impl Into<String>, code: i64, message: impl Into<String>) -> Self {
        ErrorDoc { name: name.into(), code, message: message.into(), docs: String::new(), data: None }
    }

    /// What the error means.
    pub fn docs(mut self, docs: impl Into<String>) -> Self {
        self.docs = docs.into();
        self
    }

    /// The error's `data` is a `T`.
    pub fn data<T: schemars::JsonSchema + ?Sized>(mut self, generator: &mut schemars::SchemaGenerator) -> Self {
        self.data = Some(super::schema_for::<T>(generator));
        self
    }
}

/// Doc comment lines (`#[doc = " text"]`) as one text: the one space rustdoc strips is stripped,
/// and surrounding blank lines dropped.
fn unindent(lines: &[&str]) -> String {
    let text: Vec<&str> = lines.iter().flat_map(|l| l.split('\n')).map(|l| l.strip_prefix(' ').unwrap_or(l)).collect();
    let text = text.join("\n");
    text.trim_matches('\n').trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::unindent;

    #[test]
    fn doc_lines_lose_the_space_rustdoc_strips() {
        assert_eq!(unindent(&[" Read a file.", "", "   indented"]), "Read a file.\n\n  indented");
        assert_eq!(unindent(&[]), "");
        assert_eq!(unindent(&["", " One.", ""]), "One.");
    }
}
