//! OpenRPC documents and TypeScript modules from `#[rpc]` traits (the `openrpc` feature).
//!
//! With this feature, `#[rpc]` also writes `{Trait}Api`, a unit struct that implements
//! [`Describe`]: the trait as data ([`Service`]), with a JSON Schema (by [`schemars`]) for every
//! param, result, stream item, progress report and error `data`. [`Document`] renders services as
//! an OpenRPC 1.3 document; [`crate::typescript::Module`] renders them as a TypeScript module.
#![doc = include_str!("openrpc.md")]

mod document;
mod model;
#[doc(hidden)]
pub mod probe;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

pub use document::{Document, OPENRPC_VERSION};
pub use model::{ErrorDoc, Method, MethodKind, Param, ParamKind, ParamStructure, Returns, Service};
/// The JSON Schema library (1.x) that describes params, results and errors.
pub use schemars;
pub use schemars::SchemaGenerator;

/// A trait described for OpenRPC and TypeScript; `#[rpc]` implements it for `{Trait}Api`.
pub trait Describe {
    /// The service, its schemas' definitions added to `generator`.
    fn describe(generator: &mut SchemaGenerator) -> Service;
}

/// The typed errors of an error type ([`RpcErrorType`](crate::RpcErrorType)): their codes and
/// the schema of their `data`. A method whose error type implements it lists them in its
/// OpenRPC `errors`, and its TypeScript client throws an error class per entry.
///
/// ```
/// use jsonrpc_duplex::openrpc::{DescribeErrors, ErrorDoc, SchemaGenerator};
///
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// enum FsError {
///     NotFound { path: String },
///     Denied,
/// }
///
/// impl DescribeErrors for FsError {
///     fn describe_errors(generator: &mut SchemaGenerator) -> Vec<ErrorDoc> {
///         vec![
///             ErrorDoc::new("NotFound", -32002, "file not found").data::<FsError>(generator),
///             ErrorDoc::new("Denied", -32003, "permission denied"),
///         ]
///     }
/// }
/// ```
pub trait DescribeErrors {
    /// Every error object this type maps to.
    fn describe_errors(generator: &mut SchemaGenerator) -> Vec<ErrorDoc>;
}

/// The schema generator both renderings use: JSON Schema draft-07 (OpenRPC's dialect), with
/// definitions at `#/components/schemas/`, describing what the server deserializes.
pub fn schema_generator() -> SchemaGenerator {
    schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator()
}

/// The schema of `T` (a `$ref` for named types, whose definitions go to `generator`).
pub fn schema_for<T: schemars::JsonSchema + ?Sized>(generator: &mut SchemaGenerator) -> Value {
    let mut schema = generator.subschema_for::<T>();
    for transform in generator.transforms_mut() {
        transform.transform(&mut schema);
    }
    schema.to_value()
}

/// The schema of a Rust type that has none: any value, and a description saying why.
pub fn untyped_schema(rust_type: &str) -> Value {
    serde_json::json!({
        "description": format!("Rust type `{rust_type}` (it has no JSON Schema: derive `schemars::JsonSchema` for it)")
    })
}

/// A schema generator and the definitions of every service described with it so far, sorted by
/// name (what `components.schemas` holds, and what TypeScript declares).
#[derive(Debug)]
pub(crate) struct Schemas {
    generator: SchemaGenerator,
    pub(crate) definitions: BTreeMap<String, Value>,
}

impl Default for Schemas {
    fn default() -> Self {
        Schemas { generator: schema_generator(), definitions: BTreeMap::new() }
    }
}

impl Schemas {
    /// Describe `D`, keeping the definitions its schemas refer to.
    pub(crate) fn describe<D: Describe>(&mut self) -> Service {
        let service = D::describe(&mut self.generator);
        self.definitions.extend(self.generator.take_definitions(true));
        service
    }
}

/// Write generated `contents` to `path` when they differ from what is there, or with `check`,
/// only compare: an error says the file is stale (for a CI step that fails on a stale file).
/// Returns whether the file was (or, with `check`, would be) changed.
pub fn write_or_check(path: impl AsRef<Path>, contents: &str, check: bool) -> std::io::Result<bool> {
    let path = path.as_ref();
    let current = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if current.as_deref() == Some(contents.as_bytes()) {
        return Ok(false);
    }
    if check {
        let why = if current.is_some() { "is stale" } else { "is missing" };
        return Err(std::io::Error::other(format!(
            "{} {why}: it differs from what the traits generate now; regenerate it",
            path.display()
        )));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, contents)?;
    Ok(true)
}
