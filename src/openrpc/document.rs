//! An OpenRPC 1.3 document from described services, and the `rpc.discover` route that serves it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::model::{Method, MethodKind, Param, ParamKind, ParamStructure, Returns, Service};
use super::{Describe, Schemas};
use crate::Router;

/// The OpenRPC version documents say they follow.
pub const OPENRPC_VERSION: &str = "1.3.2";

/// An OpenRPC document: `info`, the methods of every service added (in the order added, each
/// in its trait's order) and the schemas they refer to (`components.schemas`, sorted by name).
///
/// ```
/// # #[cfg(feature = "openrpc")] {
/// use jsonrpc_duplex::{RpcError, openrpc::Document, rpc};
///
/// /// Arithmetic.
/// #[rpc]
/// pub trait Calc {
///     /// Add two numbers.
///     async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;
/// }
///
/// let doc = Document::new("calc", "1.0.0").service::<CalcApi>().to_value();
/// assert_eq!(doc["openrpc"], "1.3.2");
/// assert_eq!(doc["methods"][0]["name"], "add");
/// assert_eq!(doc["methods"][0]["paramStructure"], "by-position");
/// assert_eq!(doc["methods"][0]["params"][1]["name"], "b");
/// assert_eq!(doc["methods"][0]["result"]["schema"]["type"], "integer");
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until it is used"]
pub struct Document {
    title: String,
    version: String,
    description: Option<String>,
    license: Option<String>,
    servers: Vec<(String, String)>,
    services: Vec<Service>,
    schemas: Schemas,
}

impl Document {
    /// A document titled `title`, for version `version` of the API, without methods yet.
    pub fn new(title: impl Into<String>, version: impl Into<String>) -> Self {
        Document {
            title: title.into(),
            version: version.into(),
            description: None,
            license: None,
            servers: Vec::new(),
            services: Vec::new(),
            schemas: Schemas::default(),
        }
    }

    /// `info.license.name`: the API's license, an SPDX expression such as `"MIT OR Apache-2.0"`
    /// (Redocly's recommended rules warn about a document without one).
    pub fn license(mut self, name: impl Into<String>) -> Self {
        self.license = Some(name.into());
        self
    }

    /// `info.description` (by default, the doc comment of the only service, if there is one).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Add a `servers` entry: where the API is served, named `name` (a URL such as
    /// `http://127.0.0.1:8080/` for a server of `bind_http`). Tools that call the API read it:
    /// `@open-rpc/test-coverage` sends its calls to the first one, the OpenRPC playground
    /// offers them. Without any, the document has no `servers` (the specification then means
    /// `localhost:8545`, which is rarely yours).
    ///
    /// ```
    /// # #[cfg(feature = "openrpc")] {
    /// use jsonrpc_duplex::openrpc::Document;
    ///
    /// let doc = Document::new("calc", "1.0.0").server("local", "http://127.0.0.1:8080/").to_value();
    /// assert_eq!(doc["servers"][0]["name"], "local");
    /// assert_eq!(doc["servers"][0]["url"], "http://127.0.0.1:8080/");
    /// # }
    /// ```
    pub fn server(mut self, name: impl Into<String>, url: impl Into<String>) -> Self {
        self.servers.push((name.into(), url.into()));
        self
    }

    /// Add the methods of a trait (`.service::<FilesApi>()` for `#[rpc] trait Files`).
    pub fn service<D: Describe>(mut self) -> Self {
        let service = self.schemas.describe::<D>();
        self.services.push(service);
        self
    }

    /// The services added so far.
    pub fn services(&self) -> &[Service] {
        &self.services
    }

    /// The document as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self.render()).unwrap_or_default()
    }

    /// The document as pretty-printed JSON with a final newline (what a build step writes);
    /// members in the order the OpenRPC specification lists them, schemas sorted by name.
    pub fn to_json_string(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.render()).unwrap_or_default();
        text.push('\n');
        text
    }

    fn render(&self) -> Doc<'_> {
        // What the tools people use with their defaults accept: a title on every component
        // schema (`@open-rpc/typings` names its types by them, by hash without), and no integer
        // formats (Ajv refuses the ones it does not know, and it knows none of schemars').
        let definitions: BTreeMap<String, Value> = self
            .schemas
            .definitions
            .iter()
            .map(|(name, schema)| {
                let mut schema = schema.clone();
                for_tools(&mut schema);
                if let Some(object) = schema.as_object_mut()
                    && !object.contains_key("title")
                {
                    object.insert("title".into(), Value::String(name.clone()));
                }
                (name.clone(), schema)
            })
            .collect();
        let description = self.description.clone().or_else(|| match self.services.as_slice() {
            [only] if !only.docs.is_empty() => Some(only.docs.clone()),
            _ => None,
        });
        Doc {
            openrpc: OPENRPC_VERSION,
            info: Info {
                title: &self.title,
                version: &self.version,
                description,
                license: self.license.as_deref().map(|name| License { name }),
            },
            servers: self.servers.iter().map(|(name, url)| ServerObject { name, url }).collect(),
            methods: self.services.iter().flat_map(|s| s.methods.iter().map(|m| method(s, m, &definitions))).collect(),
            // Each method's tag carries its description: a `components.tags` entry beside it
            // would be a component nothing refers to (Redocly warns about those).
            components: Components { schemas: definitions.clone() },
        }
    }

    /// A router that answers `rpc.discover` (OpenRPC's service discovery method) with this
    /// document; merge it with the services it describes:
    /// `FilesServer::new(files).into_router().merge(doc.discover())`.
    pub fn discover(&self) -> Router {
        // Any params are accepted: the method takes none, and clients differ in what they send.
        let doc = std::sync::Arc::new(self.to_value());
        Router::new().request_raw("rpc.discover", move |_request, reply| {
            let doc = doc.clone();
            async move {
                reply.ok(&*doc);
            }
        })
    }
}

#[derive(Serialize)]
struct Doc<'a> {
    openrpc: &'static str,
    info: Info<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    servers: Vec<ServerObject<'a>>,
    methods: Vec<MethodObject<'a>>,
    components: Components,
}

#[derive(Serialize)]
struct Info<'a> {
    title: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<License<'a>>,
    version: &'a str,
}

#[derive(Serialize)]
struct License<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct ServerObject<'a> {
    name: &'a str,
    url: &'a str,
}

#[derive(Serialize)]
struct Components {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    schemas: BTreeMap<String, Value>,
}

#[derive(Serialize)]
struct Tag<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MethodObject<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    tags: [Tag<'a>; 1],
    param_structure: &'static str,
    params: Vec<ContentDescriptor<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<ContentDescriptor<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<ErrorObject<'a>>,
    #[serde(rename = "x-aliases", skip_serializing_if = "<[_]>::is_empty")]
    aliases: &'a [String],
    #[serde(rename = "x-notification", skip_serializing_if = "std::ops::Not::not")]
    notification: bool,
    #[serde(rename = "x-params-object", skip_serializing_if = "Option::is_none")]
    params_object: Option<&'a Value>,
    #[serde(rename = "x-error-data", skip_serializing_if = "BTreeMap::is_empty")]
    error_data: BTreeMap<String, &'a Value>,
}

#[derive(Serialize)]
struct ContentDescriptor<'a> {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    required: Option<bool>,
    #[serde(rename = "x-stream", skip_serializing_if = "Option::is_none")]
    stream: Option<&'a Value>,
    #[serde(rename = "x-progress", skip_serializing_if = "Option::is_none")]
    progress: Option<&'a Value>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
}

fn non_empty(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

fn method<'a>(service: &'a Service, m: &'a Method, definitions: &BTreeMap<String, Value>) -> MethodObject<'a> {
    let (param_structure, mut params, params_object): (_, Vec<_>, _) = match m.params {
        ParamStructure::ByPosition => {
            let mut params: Vec<_> = m.args.iter().map(param).collect();
            // A param left out of an array can only be one at its end: an optional one before a
            // required one must be sent (as `null`), so it is required in the document.
            let mut later_required = false;
            for p in params.iter_mut().rev() {
                later_required |= p.required == Some(true);
                if later_required {
                    p.required = Some(true);
                }
            }
            ("by-position", params, None)
        }
        ParamStructure::ByName => ("by-name", m.args.iter().map(param).collect(), None),
        ParamStructure::Object => {
            let object = m.args.first();
            let params = object
                .map_or_else(Vec::new, |p| object_properties(&p.schema, definitions).unwrap_or_else(|| vec![param(p)]));
            ("by-name", params, object.map(|p| &p.schema))
        }
    };
    // By name, order does not matter on the wire, but tools (OpenRPC's, Redocly) want the
    // required params first: a stable partition keeps each group in its order.
    if param_structure == "by-name" {
        params.sort_by_key(|p| p.required != Some(true));
    }
    let result = match &m.returns {
        Returns::Nothing => None,
        Returns::Unit => Some(result(json!({ "type": "null" }), None)),
        Returns::Value(schema) => Some(result(schema.clone(), None)),
        Returns::Stream(item) => Some(result(enumerable(item), Some(item))),
    };
    MethodObject {
        name: &m.name,
        // Only a first paragraph of several: a summary that repeats the description is noise.
        summary: m.docs.trim().contains("\n\n").then(|| summary(&m.docs)),
        description: non_empty(&m.docs),
        tags: [Tag { name: &service.name, description: non_empty(&service.docs) }],
        param_structure,
        params,
        result,
        errors: m.errors.iter().map(|e| ErrorObject { code: e.code, message: &e.message }).collect(),
        aliases: &m.aliases,
        notification: m.kind == MethodKind::Notification,
        params_object,
        error_data: m.errors.iter().filter_map(|e| Some((e.code.to_string(), e.data.as_ref()?))).collect(),
    }
}

fn result(mut schema: Value, stream: Option<&Value>) -> ContentDescriptor<'_> {
    for_tools(&mut schema);
    ContentDescriptor { name: "result".into(), description: None, schema, required: None, stream, progress: None }
}

/// The JSON Schema formats schemars gives numbers, and the bounds they stand for (those a JSON
/// number holds exactly).
const NUMBER_FORMATS: &[(&str, Option<(i64, i64)>)] = &[
    ("int8", Some((i8::MIN as i64, i8::MAX as i64))),
    ("int16", Some((i16::MIN as i64, i16::MAX as i64))),
    ("int32", Some((i32::MIN as i64, i32::MAX as i64))),
    ("uint8", Some((0, u8::MAX as i64))),
    ("uint16", Some((0, u16::MAX as i64))),
    ("uint32", Some((0, u32::MAX as i64))),
    ("int64", None),
    ("uint64", None),
    ("int", None),
    ("uint", None),
    ("float", None),
    ("double", None),
];

/// `schema` as validators with their default settings take it: a number's `format` (which Ajv
/// refuses unless told to ignore formats: `unknown format "int32"`) becomes the bounds it means.
fn for_tools(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            let numeric = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
            let is_number =
                object.get("type").is_some_and(|t| numeric(t) || t.as_array().is_some_and(|a| a.iter().any(numeric)));
            if is_number
                && let Some(format) = object.get("format").and_then(Value::as_str)
                && let Some((_, bounds)) = NUMBER_FORMATS.iter().find(|(f, _)| *f == format)
            {
                object.remove("format");
                if let Some((min, max)) = bounds {
                    object.entry("minimum").or_insert(json!(min));
                    object.entry("maximum").or_insert(json!(max));
                }
            }
            for value in object.values_mut() {
                for_tools(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(for_tools),
        _ => {}
    }
}

/// The first paragraph, on one line.
fn summary(docs: &str) -> String {
    let first = docs.split("\n\n").next().unwrap_or_default();
    first.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn param(p: &Param) -> ContentDescriptor<'_> {
    let (schema, stream, progress) = match p.kind {
        ParamKind::Value => (p.schema.clone(), None, None),
        ParamKind::Stream => (enumerable(&p.schema), Some(&p.schema), None),
        ParamKind::Progress => (json!({ "type": ["integer", "string", "null"] }), None, Some(&p.schema)),
    };
    let mut schema = schema;
    for_tools(&mut schema);
    ContentDescriptor { name: p.key.clone(), description: None, schema, required: Some(p.required), stream, progress }
}

/// StreamJsonRpc's enumerable object: a token to pull with (absent when every value is here)
/// and values sent ahead.
fn enumerable(item: &Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "token": { "description": "Pull more values with `$/enumerator/next [token]`; absent when `values` holds them all." },
            "values": { "type": "array", "items": item }
        }
    })
}

/// The properties of a plain object schema (through one `$ref`) as by-name params, so that an
/// OpenRPC client that knows no extension sends the right object.
fn object_properties<'a>(
    schema: &'a Value,
    definitions: &BTreeMap<String, Value>,
) -> Option<Vec<ContentDescriptor<'a>>> {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => definitions.get(r.strip_prefix("#/components/schemas/")?)?,
        None => schema,
    };
    let object = schema.as_object()?;
    let plain = object.get("type") == Some(&json!("object"))
        && !["$ref", "allOf", "anyOf", "oneOf", "if", "not"].iter().any(|k| object.contains_key(*k));
    if !plain {
        return None;
    }
    let properties = object.get("properties")?.as_object()?;
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
    Some(
        properties
            .iter()
            .map(|(name, schema)| ContentDescriptor {
                name: name.clone(),
                description: schema.get("description").and_then(Value::as_str).map(str::to_owned),
                schema: schema.clone(),
                required: Some(required.contains(&name.as_str())),
                stream: None,
                progress: None,
            })
            .collect(),
    )
}
