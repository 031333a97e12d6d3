//! OpenRPC documents and TypeScript modules from `#[rpc]` traits (the `openrpc` feature):
//!
//! - what a document says for every shape a trait can have (names, aliases, params styles,
//!   notifications, results, typed errors, streams, progress, docs, types without a schema);
//! - every document validates against the official OpenRPC meta-schema (node,
//!   `tests/interop/openrpc/validate.js` on `@open-rpc/meta-schema` + `ajv`);
//! - every generated TypeScript module compiles with `tsc --strict` (and `noUnused*`);
//! - rendering is stable, and the committed files of `examples/files/` are what the traits
//!   generate now (a stale file fails);
//! - a node program on the generated client and vscode-jsonrpc alone talks both ways to the
//!   Rust `files_server` over stdio (`examples/files/ts/client.ts`);
//! - `rpc.discover` answers the document;
//! - `@open-rpc/test-coverage` at its defaults judges every call to the `Order` trait served
//!   with `bind_http` valid (`tests/interop/openrpc_coverage`), and a wrong result type invalid;
//!   the same for both traits of `examples/sdk_bridge` (`Session`, `Tools`).
//!
//! Needs `node` (>= 18); `npm ci` runs once per package when `node_modules` is missing. Every
//! wait is bounded.
#![cfg(feature = "openrpc")]

#[path = "../../examples/sdk_bridge/protocol.rs"]
mod bridge_protocol;
#[path = "../../examples/files/generate.rs"]
mod generate;
#[path = "../../examples/files/protocol.rs"]
mod protocol;

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::Stream;
use jsonrpc_duplex::openrpc::{DescribeErrors, Document, ErrorDoc, SchemaGenerator, write_or_check};
use jsonrpc_duplex::typescript::Module;
use jsonrpc_duplex::{
    CancellationToken, Connection, ErrorObject, Id, Progress, RpcError, RpcErrorType, RpcStream, rpc, transport::memory,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::interop;

/// Every shape a trait can have.
///
/// Its methods are for documents only; nothing serves them.
#[rpc(namespace = "shapes", rename_all = "camelCase")]
pub trait Shapes {
    /// Positional, with an optional last param.
    ///
    /// A second paragraph.
    async fn positional(&self, text: String, count: Option<u32>) -> Vec<String>;

    /// By name, with a renamed param and a keyword as a name.
    #[method(params = "named", aliases = ["shapes/named_alias", "shapes/old"])]
    async fn named(
        &self,
        #[param(rename = "type")] kind: Kind,
        r#default: Option<bool>,
        cancel: CancellationToken,
    ) -> Result<Point, RpcError>;

    /// One object is the params.
    #[method(params = "object")]
    async fn object(&self, point: Point) -> Result<(), ShapeError>;

    /// A notification without params.
    #[notification]
    async fn ping(&self);

    /// A stream.
    fn items(&self, n: u32) -> impl Stream<Item = Point> + Send;

    /// A stream whose items may fail.
    fn fallible(&self) -> impl Stream<Item = Result<u32, ShapeError>> + Send;

    /// A stream that may fail before it starts.
    async fn maybe(&self) -> Result<impl Stream<Item = String> + Send, ShapeError>;

    /// A stream in, progress out.
    #[method(params = "named")]
    async fn upload(&self, chunks: RpcStream<Vec<u8>>, progress: Progress<Percent>) -> u64;

    /// A type without a schema.
    async fn opaque(&self, value: Opaque) -> Opaque;

    /// A context argument is no param.
    async fn whoami(&self, #[context] id: Id) -> String;

    /// Compiled out, so not described either (its type does not even exist).
    #[cfg(any())]
    async fn gone(&self, value: DoesNotExist);
}

/// What kind of shape.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Round.
    Circle,
    /// Not round.
    Square,
}

/// A point.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Down.
    pub y: f64,
    /// A name for it.
    pub label: Option<String>,
}

/// Percent done.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct Percent(pub u8);

/// Serde, but no JSON Schema.
#[derive(Serialize, Deserialize)]
pub struct Opaque(pub String);

/// A typed error.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ShapeError {
    /// Out of range.
    OutOfRange {
        /// The bound.
        limit: u32,
    },
    /// Gone.
    Gone,
}

impl RpcErrorType for ShapeError {
    fn into_error_object(self) -> ErrorObject {
        match self {
            ShapeError::OutOfRange { .. } => ErrorObject::new(-32050, "out of range").with_data(&self),
            ShapeError::Gone => ErrorObject::new(-32051, "gone"),
        }
    }
    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
        match error.code {
            -32050 => error.data_as::<ShapeError>().and_then(Result::ok).ok_or(error),
            -32051 => Ok(ShapeError::Gone),
            _ => Err(error),
        }
    }
}

impl DescribeErrors for ShapeError {
    fn describe_errors(generator: &mut SchemaGenerator) -> Vec<ErrorDoc> {
        vec![
            ErrorDoc::new("OutOfRange", -32050, "out of range").data::<ShapeError>(generator),
            ErrorDoc::new("gone", -32051, "gone").docs("Nothing is left."),
        ]
    }
}

fn shapes_document() -> Document {
    Document::new("shapes", "1.2.3").service::<ShapesApi>()
}

/// Where a `format` is, outside members named `x-…`.
fn formats_outside_extensions(value: &Value) -> Vec<String> {
    match value {
        Value::Object(object) => object
            .iter()
            .filter(|(k, _)| !k.starts_with("x-"))
            .flat_map(|(k, v)| {
                let here = (k == "format").then(|| v.to_string());
                here.into_iter().chain(formats_outside_extensions(v))
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(formats_outside_extensions).collect(),
        _ => Vec::new(),
    }
}

fn method<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["methods"].as_array().and_then(|ms| ms.iter().find(|m| m["name"] == name)).unwrap_or_else(|| {
        panic!("no method {name} in {doc:#}");
    })
}

#[test]
fn a_document_describes_every_shape() {
    let doc = shapes_document().to_value();
    assert_eq!(doc["openrpc"], "1.3.2");
    assert_eq!(
        doc["info"],
        json!({"title": "shapes", "description": "Every shape a trait can have.\n\nIts methods are for documents only; nothing serves them.", "version": "1.2.3"})
    );
    let names: Vec<&str> = doc["methods"].as_array().unwrap().iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "shapes/positional",
            "shapes/named",
            "shapes/object",
            "shapes/ping",
            "shapes/items",
            "shapes/fallible",
            "shapes/maybe",
            "shapes/upload",
            "shapes/opaque",
            "shapes/whoami"
        ]
    );

    let positional = method(&doc, "shapes/positional");
    assert_eq!(positional["summary"], "Positional, with an optional last param.");
    assert_eq!(positional["description"], "Positional, with an optional last param.\n\nA second paragraph.");
    assert_eq!(positional["tags"][0]["name"], "Shapes");
    assert_eq!(positional["paramStructure"], "by-position");
    assert_eq!(positional["params"][0], json!({"name": "text", "schema": {"type": "string"}, "required": true}));
    assert_eq!(positional["params"][1]["name"], "count");
    assert_eq!(positional["params"][1]["required"], false);
    assert_eq!(
        positional["result"],
        json!({"name": "result", "schema": {"type": "array", "items": {"type": "string"}}})
    );
    assert!(positional.get("errors").is_none() && positional.get("x-notification").is_none());

    let named = method(&doc, "shapes/named");
    assert_eq!(named["paramStructure"], "by-name");
    assert_eq!(named["x-aliases"], json!(["shapes/named_alias", "shapes/old"]));
    let keys: Vec<&str> = named["params"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(keys, ["type", "default"], "renamed and raw names; the cancellation token is no param");
    assert_eq!(named["params"][0]["schema"], json!({"$ref": "#/components/schemas/Kind"}));
    assert_eq!(named["result"]["schema"], json!({"$ref": "#/components/schemas/Point"}));
    assert!(named.get("errors").is_none(), "RpcError declares no typed errors");

    // The one object's members are the by-name params, so that a client knowing no extension
    // sends the right object; `x-params-object` names the whole.
    let object = method(&doc, "shapes/object");
    assert_eq!(object["paramStructure"], "by-name");
    assert_eq!(object["x-params-object"], json!({"$ref": "#/components/schemas/Point"}));
    let members: Vec<(&str, bool)> = object["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["required"].as_bool().unwrap()))
        .collect();
    // Required members first (tools want them so), each group in the schema's order.
    assert_eq!(members, [("x", true), ("y", true), ("label", false)]);
    assert_eq!(object["params"][0]["description"], "Across.");
    assert_eq!(object["result"]["schema"], json!({"type": "null"}), "Result<(), E> answers null");
    assert_eq!(
        object["errors"],
        json!([{"code": -32050, "message": "out of range"}, {"code": -32051, "message": "gone"}])
    );
    assert_eq!(object["x-error-data"], json!({"-32050": {"$ref": "#/components/schemas/ShapeError"}}));

    let ping = method(&doc, "shapes/ping");
    assert_eq!(ping["x-notification"], true);
    assert!(ping.get("result").is_none(), "a notification has no result");
    assert_eq!(ping["params"], json!([]));

    // `x-stream` keeps schemars' formats; the schema validators read has the bounds they mean.
    for (name, item, checked, errors) in [
        ("shapes/items", json!({"$ref": "#/components/schemas/Point"}), None, false),
        (
            "shapes/fallible",
            json!({"type": "integer", "format": "uint32", "minimum": 0}),
            Some(json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32})),
            true,
        ),
        ("shapes/maybe", json!({"type": "string"}), None, true),
    ] {
        let m = method(&doc, name);
        assert_eq!(m["result"]["x-stream"], item, "{name}");
        assert_eq!(m["result"]["schema"]["properties"]["values"]["items"], checked.unwrap_or(item), "{name}");
        assert_eq!(m.get("errors").is_some(), errors, "{name}");
    }

    let upload = method(&doc, "shapes/upload");
    assert_eq!(upload["params"][0]["name"], "chunks");
    assert_eq!(
        upload["params"][0]["x-stream"],
        json!({"type": "array", "items": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}})
    );
    assert_eq!(upload["params"][1]["name"], "progress");
    assert_eq!(upload["params"][1]["required"], false);
    assert_eq!(upload["params"][1]["schema"], json!({"type": ["integer", "string", "null"]}));
    assert_eq!(upload["params"][1]["x-progress"], json!({"$ref": "#/components/schemas/Percent"}));

    let opaque = method(&doc, "shapes/opaque");
    let description = opaque["params"][0]["schema"]["description"].as_str().unwrap();
    assert!(description.contains("`Opaque`") && description.contains("schemars::JsonSchema"), "{description}");
    assert_eq!(shapes_document().services()[0].untyped, ["Opaque"]);

    assert_eq!(method(&doc, "shapes/whoami")["params"], json!([]), "context arguments are no params");

    let schemas: Vec<&str> = doc["components"]["schemas"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(schemas, ["Kind", "Percent", "Point", "ShapeError"]);
    // Titled, so that `@open-rpc/typings` names its types after them (by hash without).
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        assert_eq!(schema["title"], json!(name), "{name}");
    }
    // No `format` anywhere validators look (Ajv refuses `int32`, `uint64`, … unless told to
    // ignore formats); our own `x-` extensions keep them.
    assert_eq!(formats_outside_extensions(&doc), Vec::<String>::new());
    assert_eq!(
        doc["components"]["schemas"]["Percent"],
        json!({"title": "Percent", "description": "Percent done.", "type": "integer", "minimum": 0, "maximum": 255})
    );
    let kinds: Vec<&Value> =
        doc["components"]["schemas"]["Kind"]["oneOf"].as_array().unwrap().iter().map(|v| &v["const"]).collect();
    assert_eq!(kinds, [&json!("circle"), &json!("square")]);
    // The tag is inline (with the trait's doc comment): a `components.tags` entry would be unused.
    assert!(doc["components"].get("tags").is_none(), "{}", doc["components"]);
}

/// Params in an order tools would otherwise get wrong.
#[rpc(namespace = "order")]
pub trait Order {
    /// Lines `from` to `to`: `from` may be `null`, but it must be sent, since `to` follows it
    /// in the array; `step` may be left out.
    async fn window(&self, from: Option<u32>, to: u32, step: Option<u32>) -> Vec<u32>;
}

#[test]
fn an_option_before_a_required_positional_param_is_required_and_one_paragraph_has_no_summary() {
    let doc = Document::new("order", "1.0.0").service::<OrderApi>().to_value();
    let window = method(&doc, "order/window");
    let required: Vec<(&str, bool)> = window["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["required"].as_bool().unwrap()))
        .collect();
    assert_eq!(required, [("from", true), ("to", true), ("step", false)]);
    // The schema still says `null` is fine.
    assert_eq!(window["params"][0]["schema"]["type"], json!(["integer", "null"]));
    // One paragraph (wrapped): a description and no summary repeating it.
    assert!(window.get("summary").is_none(), "{window:#}");
    assert!(window["description"].as_str().unwrap().starts_with("Lines `from` to `to`"));
}

#[test]
fn rendering_is_stable() {
    assert_eq!(shapes_document().to_json_string(), shapes_document().to_json_string());
    let ts = || Module::new().client::<ShapesApi>().server::<ShapesApi>().render();
    assert_eq!(ts(), ts());
    // The pretty JSON lists members in the specification's order.
    let text = shapes_document().to_json_string();
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} missing"));
    assert!(
        at("\"openrpc\"") < at("\"info\"")
            && at("\"info\"") < at("\"methods\"")
            && at("\"methods\"") < at("\"components\"")
    );
    assert!(text.ends_with("}\n"));
}

#[test]
fn typescript_says_what_each_shape_takes_and_returns() {
    let ts = Module::new().client::<ShapesApi>().server::<ShapesApi>().render();
    for expected in [
        "// Typed `unknown` (no JSON Schema: derive schemars::JsonSchema for them): Opaque.",
        "export type Kind = \"circle\" | \"square\";",
        "export type Percent = number;",
        "export interface Point {",
        "export class OutOfRangeError extends ResponseError<ShapeError> {\n  static readonly code = -32050;",
        "export class GoneError extends ResponseError {\n  static readonly code = -32051;",
        " * Nothing is left.",
        "export class ShapesClient {",
        "  positional(text: string, count?: number | null, token?: CancellationToken): Promise<string[]> {",
        "  named(params: { type: Kind; default?: boolean | null }, token?: CancellationToken): Promise<Point> {",
        "\"shapes/named\", ParameterStructures.byName, [params]",
        "  object(point: Point, token?: CancellationToken): Promise<void> {",
        "new RpcCall(this.connection, token, [OutOfRangeError, GoneError])",
        "  ping(): Promise<void> {\n    return this.connection.sendNotification(\"shapes/ping\");",
        "  items(n: number, token?: CancellationToken): AsyncGenerator<Point, void, undefined> {",
        "  upload(params: {\n    chunks: AsyncIterable<number[]> | Iterable<number[]>;\n    progress?: (report: Percent) => void;\n  }, token?: CancellationToken): Promise<number> {",
        "[{ ...params, chunks: call.stream(params.chunks), progress: call.progress(params.progress) }]",
        "  opaque(value: unknown, token?: CancellationToken): Promise<unknown> {",
        "  whoami(token?: CancellationToken): Promise<string> {",
        "export interface Shapes {",
        "  named(params: { type: Kind; default?: boolean | null }, token: CancellationToken): Point | Promise<Point>;",
        "  ping(): void | Promise<void>;",
        "    chunks: AsyncGenerator<number[], void, undefined>;\n    progress: (report: Percent) => void;",
        "export function serveShapes(connection: MessageConnection, service: Shapes): Disposable {",
        "  handlers.push(connection.onRequest(\"shapes/named_alias\", onNamed));",
        "  handlers.push(connection.onNotification(\"shapes/ping\", onPing));",
        " * The request `shapes/named` with params by name (also answered as `shapes/named_alias`,\n   * `shapes/old`).",
        "  positional(text: string, count: number | null | undefined, token: CancellationToken): string[] | Promise<string[]>;",
    ] {
        assert!(ts.contains(expected), "missing:\n{expected}\n\nin:\n{ts}");
    }
}

#[test]
fn the_committed_files_are_what_the_traits_generate() {
    for (path, contents) in generate::outputs() {
        if let Err(e) = write_or_check(&path, &contents, true) {
            panic!("{e}\nregenerate with: cargo run --features openrpc --example files_codegen");
        }
    }
}

#[test]
fn a_stale_or_missing_file_is_reported_and_rewritten() {
    let dir = scratch_dir("stale");
    let path = dir.join("nested").join("out.ts");
    let _ = std::fs::remove_dir_all(dir.join("nested"));
    let missing = write_or_check(&path, "new\n", true).unwrap_err().to_string();
    assert!(missing.contains("is missing"), "{missing}");
    assert!(write_or_check(&path, "new\n", false).unwrap(), "written");
    assert!(!write_or_check(&path, "new\n", true).unwrap(), "up to date");
    assert!(!write_or_check(&path, "new\n", false).unwrap(), "not rewritten");
    let stale = write_or_check(&path, "newer\n", true).unwrap_err().to_string();
    assert!(stale.contains("is stale"), "{stale}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n", "a check writes nothing");
}

#[tokio::test]
async fn rpc_discover_answers_the_document() {
    let doc = Document::new("files", "0.1.0").service::<protocol::FilesApi>();
    let expected = doc.to_value();
    let (client, _server) = memory::pair(Connection::builder(), Connection::builder().serve(doc.discover()));
    let answer: Value = client.handle().request("rpc.discover", ()).await.unwrap();
    assert_eq!(answer, expected);
    let answer: Value = client.handle().request("rpc.discover", json!([])).await.unwrap();
    assert_eq!(answer["methods"][0]["name"], "files/readTextFile");
}

#[tokio::test]
async fn documents_validate_against_the_openrpc_meta_schema() {
    let dir = interop::npm_ready("openrpc", &["ajv", "@open-rpc/meta-schema", "@json-schema-tools/meta-schema"]);
    let shapes = scratch_dir("validate").join("shapes.openrpc.json");
    std::fs::write(&shapes, shapes_document().to_json_string()).unwrap();
    let files = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/files/openrpc.json");
    let summary = node(&dir, &["validate.js".as_ref(), shapes.as_os_str(), files.as_os_str()]).await;
    assert_eq!(summary["documents"], 2);
}

/// The OpenRPC project's own tools, at their defaults (`tests/interop/openrpc/tools.js`):
/// `@open-rpc/schema-utils-js`'s `MethodCallValidator` compiles every param schema with a plain
/// `new Ajv()` (an integer `format` such as `uint32` throws), and `@open-rpc/typings` names each
/// component schema's type after its `title`.
#[tokio::test]
async fn documents_work_with_the_openrpc_projects_tools_at_their_defaults() {
    let dir = interop::npm_ready("openrpc", &["@open-rpc/schema-utils-js", "@open-rpc/typings"]);
    let shapes = scratch_dir("tools").join("shapes.openrpc.json");
    std::fs::write(&shapes, shapes_document().to_json_string()).unwrap();
    let files = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/files/openrpc.json");
    let summary = node(&dir, &["tools.js".as_ref(), shapes.as_os_str(), files.as_os_str()]).await;
    assert_eq!(summary["documents"], 2);
    let types = &summary["types"][files.to_str().unwrap()];
    assert!(types.as_array().unwrap().contains(&json!("Entry")), "{types}");
    assert!(summary["types"][shapes.to_str().unwrap()].as_array().unwrap().contains(&json!("Point")), "{summary}");
}

/// Redocly CLI (`tests/interop/openrpc_lint`, its Open-RPC support) at its defaults, the
/// recommended ruleset: no errors, and no warning but one it cannot help: a component schema
/// that only our `x-` extensions refer to (`x-error-data`: an OpenRPC error's `data` has no
/// schema of its own; `x-progress`, `x-stream`, `x-params-object`) is "never used", because
/// Redocly does not follow a `$ref` inside an extension. Every such warning is checked to be one.
#[tokio::test]
async fn documents_pass_redoclys_lint_at_its_defaults() {
    let dir = interop::npm_ready("openrpc_lint", &["@redocly/cli"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shapes = scratch_dir("redocly").join("shapes.openrpc.json");
    std::fs::write(&shapes, shapes_document().license("MIT").to_json_string()).unwrap();
    for file in [shapes, root.join("examples/files/openrpc.json"), root.join("examples/sdk_bridge/openrpc.json")] {
        let output = bounded(
            "redocly lint",
            tokio::process::Command::new("node")
                .arg(dir.join("node_modules/@redocly/cli/bin/cli.js"))
                .args(["lint", "--format=json"])
                .arg(&file)
                .env("REDOCLY_TELEMETRY", "off")
                .env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true")
                .current_dir(&dir),
            Duration::from_secs(120),
        )
        .await;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "redocly lint {} printed no JSON ({e}):\n{stdout}\n{}",
                file.display(),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        assert!(output.status.success(), "redocly lint {} failed:\n{report:#}", file.display());
        assert_eq!(report["totals"]["errors"], 0, "{}: {report:#}", file.display());
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let (mut outside, mut inside) = (Vec::new(), Vec::new());
        refs(&doc, false, &mut outside, &mut inside);
        for problem in report["problems"].as_array().unwrap() {
            let pointer = problem["location"][0]["pointer"].as_str().unwrap_or_default();
            let name = pointer.strip_prefix("#/components/schemas/").unwrap_or_default();
            assert!(
                problem["ruleId"] == "no-unused-components"
                    && inside.iter().any(|r| r.ends_with(&format!("/{name}")))
                    && !outside.iter().any(|r| r.ends_with(&format!("/{name}"))),
                "{}: {problem:#}",
                file.display()
            );
        }
    }
}

/// `Order`, served: at most 64 lines of the window.
#[cfg(feature = "http")]
struct Lines;

#[cfg(feature = "http")]
impl Order for Lines {
    async fn window(&self, from: Option<u32>, to: u32, step: Option<u32>) -> Vec<u32> {
        let step = step.unwrap_or(1).max(1) as usize;
        (from.unwrap_or(0)..=to).step_by(step).take(64).collect()
    }
}

/// Serve `dispatcher` over HTTP on loopback and run `@open-rpc/test-coverage` at its defaults
/// (its rules, its HTTP transport, its JSON reporter; `tests/interop/openrpc_coverage/coverage.js`,
/// which says why not its CLI) against `doc` (the `Order` document when `None`), its `servers`
/// naming the server, the methods of `skip` left out (as its `--skip` does). Answers the calls
/// of its JSON report.
#[cfg(feature = "http")]
async fn test_coverage(
    name: &str,
    doc: Option<Document>,
    skip: &[&str],
    dispatcher: impl Into<jsonrpc_duplex::Router>,
) -> Vec<Value> {
    let dir = interop::npm_ready("openrpc_coverage", &["@open-rpc/test-coverage"]);
    let server = jsonrpc_duplex::server::ServerBuilder::new(Connection::builder().serve(dispatcher))
        .bind_http("127.0.0.1:0")
        .await
        .expect("bind");
    let doc = doc
        .unwrap_or_else(|| Document::new("order", "1.0.0").service::<OrderApi>())
        .server("loopback", format!("http://{}/", server.local_addr()))
        .to_value();
    let file = scratch_dir("test-coverage").join(format!("{name}.openrpc.json"));
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg("coverage.js").arg(&file).current_dir(&dir);
    for method in skip {
        command.args(["--skip", method]);
    }
    let output = bounded("open-rpc-test-coverage", &mut command, Duration::from_secs(60)).await;
    server.shutdown(Duration::from_secs(5)).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "test-coverage failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    match serde_json::from_str::<Value>(&stdout) {
        Ok(Value::Array(calls)) => calls,
        other => panic!("test-coverage printed no JSON report ({other:?}):\n{stdout}"),
    }
}

/// The OpenRPC project's `@open-rpc/test-coverage`, at its defaults, against a live server of
/// ours over HTTP (`bind_http`): it calls every method with params faked from the document's
/// schemas (`JsonSchemaFakerRule`, 10 calls a method; `ExamplesRule` has no examples to call)
/// and checks each answer against the result schema with a plain `new Ajv()`. Every call is
/// judged valid; and the check is no rubber stamp: a server whose answer has the wrong type
/// fails every call. (The tool throws on a method without `result`, i.e. on any notification:
/// a trait with notifications needs its `--skip`.)
#[cfg(feature = "http")]
#[tokio::test]
async fn test_coverage_judges_every_call_to_our_http_server_valid() {
    let calls = test_coverage("order", None, &[], OrderServer::new(Lines)).await;
    assert!(!calls.is_empty(), "test-coverage made no call");
    for call in &calls {
        assert_eq!(call["methodName"], "order/window", "{call:#}");
        assert_eq!(call["valid"], true, "judged invalid: {call:#}");
        assert!(call.get("error").is_none_or(Value::is_null), "{call:#}");
        assert!(call["result"].is_array(), "{call:#}");
    }
    // The same document, a server that answers a string where a list of integers is promised.
    let wrong = jsonrpc_duplex::Router::new()
        .method("order/window", |_: Value, _| async move { Ok::<_, ErrorObject>("not a list") });
    let calls = test_coverage("wrong", None, &[], wrong).await;
    assert!(!calls.is_empty(), "test-coverage made no call");
    for call in &calls {
        assert_eq!(call["valid"], false, "a wrong result type judged valid: {call:#}");
        assert_eq!(call["result"], "not a list", "{call:#}");
        assert!(call["reason"].as_str().is_some_and(|r| r.contains("array")), "{call:#}");
    }
}

/// `examples/sdk_bridge`'s `Session`, served over HTTP for `@open-rpc/test-coverage`: the CLI
/// itself speaks stdio and TCP only, and its turn calls back the SDK's tool, which an HTTP client
/// cannot serve; so this answers each method as the CLI does, with what a one-shot peer can have
/// (a turn without the tool's call, a long task of any length at once, the history of one turn).
#[cfg(feature = "http")]
struct BridgeSession;

#[cfg(feature = "http")]
impl bridge_protocol::Session for BridgeSession {
    async fn ping(&self) -> String {
        "pong".to_owned()
    }

    async fn turn(
        &self,
        prompt: String,
        _tools: bridge_protocol::ToolsClient,
    ) -> Result<bridge_protocol::TurnSummary, bridge_protocol::BridgeError> {
        let events = 2 + prompt.split_whitespace().count() as u32;
        Ok(bridge_protocol::TurnSummary { turn: 1, events, tool_output: prompt.to_uppercase() })
    }

    async fn long_task(&self, steps: u32, _progress: Progress<bridge_protocol::Step>) -> u32 {
        steps
    }

    fn history(&self) -> impl Stream<Item = bridge_protocol::TurnEvent> + Send {
        use bridge_protocol::TurnEvent;
        futures::stream::iter([
            TurnEvent::Started { turn: 1 },
            TurnEvent::Text { text: "hello".into() },
            TurnEvent::ToolOutput { name: "echo".into(), output: "HELLO".into() },
            TurnEvent::Finished { turn: 1 },
        ])
    }

    async fn fail(&self, tool: String) -> Result<(), bridge_protocol::BridgeError> {
        Err(bridge_protocol::BridgeError { tool, reason: "it was asked to fail".into() })
    }

    async fn add(&self, a: i64, b: i64) -> Result<i64, bridge_protocol::BridgeError> {
        a.checked_add(b)
            .ok_or(bridge_protocol::BridgeError { tool: "add".into(), reason: format!("{a} + {b} overflows i64") })
    }
}

/// `examples/sdk_bridge`'s `Tools`, as its drive programs serve it.
#[cfg(feature = "http")]
struct BridgeTools;

#[cfg(feature = "http")]
impl bridge_protocol::Tools for BridgeTools {
    async fn call_tool(&self, _name: String, input: String) -> String {
        input.to_uppercase()
    }

    async fn event(&self, _event: bridge_protocol::TurnEvent) {}
}

/// `@open-rpc/test-coverage` at its defaults on both traits of `examples/sdk_bridge`: the
/// committed document of `Session` (what the CLI publishes) and a document of `Tools` (what each
/// SDK serves), each served over HTTP. Every method is called; every call is judged valid but
/// `session/fail`'s, which always answers its typed error (`-32050` with its data: no result to
/// judge, so the tool judges it invalid), and `session/history`'s: a stream is pulled on the
/// connection that offered it, which an HTTP exchange is not, so it is answered `-32603` there
/// with `NO_STREAMS`
/// (over stdio and TCP the drive programs pull it). `tools/event` is skipped: a notification has
/// no `result`, on which the tool throws.
#[cfg(feature = "http")]
#[tokio::test]
async fn test_coverage_judges_every_call_to_the_sdk_bridge_traits_valid() {
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sdk_bridge/openrpc.json"))
            .expect("examples/sdk_bridge/openrpc.json"),
    )
    .expect("the committed document is JSON");
    let session =
        Document::new("sdk_bridge", "0.1.0").license("MIT OR Apache-2.0").service::<bridge_protocol::SessionApi>();
    assert_eq!(session.to_value()["methods"], committed["methods"], "the committed document is stale");
    let tools = Document::new("sdk_bridge tools", "0.1.0").service::<bridge_protocol::ToolsApi>();
    let cases = [
        ("sdk-bridge-session", session, &[][..], bridge_protocol::SessionServer::new(BridgeSession).into_router()),
        ("sdk-bridge-tools", tools, &["tools/event"][..], bridge_protocol::ToolsServer::new(BridgeTools).into_router()),
    ];
    for (name, doc, skip, router) in cases {
        let methods: Vec<String> = doc.to_value()["methods"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["name"].as_str().map(str::to_owned))
            .filter(|m| !skip.contains(&m.as_str()))
            .collect();
        let calls = test_coverage(name, Some(doc), skip, router).await;
        for method in &methods {
            assert!(
                calls.iter().any(|c| c["methodName"] == method.as_str()),
                "{name}: no call of {method}: {calls:#?}"
            );
        }
        for call in &calls {
            if call["methodName"] == "session/fail" {
                assert_eq!(call["valid"], false, "{call:#}");
                assert_eq!(call["error"]["code"], -32050, "{call:#}");
                assert_eq!(call["error"]["data"]["tool"], call["params"]["tool"], "{call:#}");
                continue;
            }
            if call["methodName"] == "session/history" {
                // A stream is pulled on the connection that offered it; an HTTP exchange ends
                // with its answer, so a stream is refused there, saying why.
                assert_eq!(call["valid"], false, "{call:#}");
                assert_eq!(call["error"]["code"], -32603, "{call:#}");
                let message = call["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains(jsonrpc_duplex::transport::http::server::NO_STREAMS), "{call:#}");
                continue;
            }
            assert_eq!(call["valid"], true, "{name}: judged invalid: {call:#}");
            assert!(call.get("error").is_none_or(Value::is_null), "{call:#}");
        }
    }
}

/// The `$ref`s of `value`: those outside any `x-` member, and those inside one.
fn refs(value: &Value, in_extension: bool, outside: &mut Vec<String>, inside: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                match (key.as_str(), inner) {
                    ("$ref", Value::String(r)) if in_extension => inside.push(r.clone()),
                    ("$ref", Value::String(r)) => outside.push(r.clone()),
                    _ => refs(inner, in_extension || key.starts_with("x-"), outside, inside),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, in_extension, outside, inside)),
        _ => {}
    }
}

/// The generated modules under the tsconfig a new user has: the one `tsc --init` writes
/// (TypeScript 5.9: `module: nodenext`, `verbatimModuleSyntax`, `exactOptionalPropertyTypes`,
/// `noUncheckedIndexedAccess`), in an ES module package; then the spawn runtime beside them.
#[cfg(unix)]
#[tokio::test]
async fn typescript_modules_compile_under_the_tsconfig_tsc_init_writes() {
    let ts_dir = files_ts_ready();
    let dir = scratch_dir("tsc-init");
    let _ = std::fs::remove_file(dir.join("tsconfig.json"));
    let _ = std::fs::remove_file(dir.join(jsonrpc_duplex::typescript::SPAWN_RUNTIME_FILE));
    // What the last step adds (a run before left them: the first steps compile every file here).
    for file in ["bridge.ts", "readme.ts"] {
        let _ = std::fs::remove_file(dir.join(file));
    }
    let tsc_js = ts_dir.join("node_modules/typescript/bin/tsc");
    let init = bounded(
        "tsc --init",
        tokio::process::Command::new("node").arg(&tsc_js).arg("--init").current_dir(&dir),
        Duration::from_secs(60),
    )
    .await;
    assert!(init.status.success(), "tsc --init failed: {}", String::from_utf8_lossy(&init.stdout));
    let config = std::fs::read_to_string(dir.join("tsconfig.json")).unwrap();
    assert!(config.contains("\"verbatimModuleSyntax\": true"), "{config}");
    std::fs::write(dir.join("package.json"), r#"{"type": "module", "private": true}"#).unwrap();
    // vscode-jsonrpc (and @types/node) from the example's install.
    let modules = dir.join("node_modules");
    if !modules.exists() {
        // A link left dangling (a target/ copied from another checkout) is replaced.
        let _ = std::fs::remove_file(&modules);
        std::os::unix::fs::symlink(ts_dir.join("node_modules"), &modules).unwrap();
    }
    std::fs::write(dir.join("shapes.ts"), Module::new().client::<ShapesApi>().server::<ShapesApi>().render()).unwrap();
    std::fs::copy(ts_dir.join("files.ts"), dir.join("files.ts")).unwrap();
    tsc(&ts_dir, &dir, &["--noEmit"]).await;
    // The spawn runtime too, with the one line a Node user adds to that tsconfig: `"types": ["node"]`
    // (it imports `node:child_process` and `node:net`).
    let node_types = config.replace("\"types\": []", "\"types\": [\"node\"]");
    assert_ne!(node_types, config, "tsc --init no longer writes `\"types\": []`: {config}");
    std::fs::write(dir.join("tsconfig.json"), node_types).unwrap();
    std::fs::write(dir.join(jsonrpc_duplex::typescript::SPAWN_RUNTIME_FILE), jsonrpc_duplex::typescript::SPAWN_RUNTIME)
        .unwrap();
    // And the README's TypeScript block as a user's program has it, on the bridge example's
    // generated module (`examples/sdk_bridge/ts/readme.ts`, which tests/interop/sdk_bridge.rs
    // checks is the README's).
    let bridge = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sdk_bridge/ts");
    for file in ["bridge.ts", "readme.ts"] {
        std::fs::copy(bridge.join(file), dir.join(file)).unwrap();
    }
    tsc(&ts_dir, &dir, &["--noEmit"]).await;
}

#[tokio::test]
async fn a_broken_document_fails_validation() {
    // The validator is no rubber stamp: a bad schema type and a `$ref` to nothing both fail.
    let dir = interop::npm_ready("openrpc", &["ajv", "@open-rpc/meta-schema", "@json-schema-tools/meta-schema"]);
    for (what, breaks) in [
        ("a schema type that is no type", json!({"type": 5})),
        ("a $ref to nothing", json!({"$ref": "#/components/schemas/Nothing"})),
    ] {
        let mut doc = shapes_document().to_value();
        doc["methods"][0]["params"][0]["schema"] = breaks;
        let path = scratch_dir("validate").join("broken.openrpc.json");
        std::fs::write(&path, doc.to_string()).unwrap();
        let output = tokio::process::Command::new("node")
            .args(["validate.js".as_ref(), path.as_os_str()])
            .current_dir(&dir)
            .output()
            .await
            .unwrap();
        assert!(!output.status.success(), "{what}: validated\n{}", String::from_utf8_lossy(&output.stdout));
    }
}

#[tokio::test]
async fn typescript_modules_compile_with_tsc_strict() {
    let ts_dir = files_ts_ready();
    // The shapes module beside a tsconfig that extends the example's (strict, noUnused*).
    let dir = scratch_dir("tsc");
    std::fs::write(dir.join("shapes.ts"), Module::new().client::<ShapesApi>().server::<ShapesApi>().render()).unwrap();
    std::fs::write(dir.join("clients.ts"), Module::new().client::<ShapesApi>().render()).unwrap();
    std::fs::write(dir.join("servers.ts"), Module::new().server::<ShapesApi>().render()).unwrap();
    let config = json!({
        "extends": ts_dir.join("tsconfig.json"),
        "compilerOptions": {
            "noEmit": true,
            "types": [],
            "typeRoots": [ts_dir.join("node_modules/@types")],
            "paths": { "vscode-jsonrpc": [ts_dir.join("node_modules/vscode-jsonrpc/lib/common/api")] }
        },
        "files": ["shapes.ts", "clients.ts", "servers.ts"]
    });
    std::fs::write(dir.join("tsconfig.json"), config.to_string()).unwrap();
    tsc(&ts_dir, &dir, &[]).await;
    // The example's own module and program (emitted by the test that runs it).
    tsc(&ts_dir, &ts_dir, &["--noEmit"]).await;
}

#[tokio::test]
async fn a_typescript_client_talks_both_ways_to_the_rust_service() {
    let ts_dir = files_ts_ready();
    tsc(&ts_dir, &ts_dir, &[]).await;
    let server = files_server();
    let summary = node(&ts_dir, &["out/client.js".as_ref(), server.as_os_str()]).await;
    let checks: Vec<&str> = summary["checks"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(
        checks,
        [
            "rpc.discover answers the OpenRPC document",
            "a call: readTextFile",
            "a typed error: FileNotFoundError with its code and data",
            "a call back into TypeScript: writeTextFile asks editor/confirm",
            "a refusal from TypeScript comes back as DeniedError",
            "a notification each way: files/log, then editor/showMessage",
            "progress: index reports every file before its answer",
            "a stream: list is pulled with $/enumerator/next",
            "a stream left early is aborted with $/enumerator/abort",
            "a stream argument: append pulls the lines from TypeScript",
            "a synchronous stream argument is pulled in batches",
            "a stream served by TypeScript: saveAll pulls editor/openDocuments",
            "exit 0 on EOF",
        ]
    );
}

/// `examples/files/ts` with its packages installed (`npm ci` from its lockfile when missing).
fn files_ts_ready() -> PathBuf {
    // `npm_ready` takes a folder under `tests/interop/`; the example's lives beside its Rust side.
    interop::npm_ready("../../examples/files/ts", &["vscode-jsonrpc", "typescript", "@types/node"])
}

/// `tsc -p <project> args..` with the example's TypeScript, at most 120 s.
async fn tsc(ts_dir: &Path, project: &Path, args: &[&str]) {
    let tsc = ts_dir.join("node_modules/typescript/bin/tsc");
    let output = bounded(
        "tsc",
        tokio::process::Command::new("node").arg(tsc).arg("-p").arg(project).args(args).current_dir(project),
        Duration::from_secs(120),
    )
    .await;
    assert!(
        output.status.success(),
        "tsc -p {} failed:\n{}{}",
        project.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Run `node args..` in `dir`; its last line must be a JSON summary with `"ok": true`.
async fn node(dir: &Path, args: &[&std::ffi::OsStr]) -> Value {
    let output =
        bounded("node", tokio::process::Command::new("node").args(args).current_dir(dir), Duration::from_secs(60))
            .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let summary: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("no JSON summary from node {args:?} ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    assert!(
        output.status.success() && summary["ok"] == json!(true),
        "node {args:?} failed ({}):\n{summary:#}\nstderr:\n{stderr}",
        output.status
    );
    summary
}

async fn bounded(what: &str, cmd: &mut tokio::process::Command, limit: Duration) -> std::process::Output {
    cmd.stdin(Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(limit, cmd.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => panic!("{what} could not be run: {e}"),
        Err(_) => panic!("{what} did not finish within {limit:?}"),
    }
}

/// The `files_server` example: the one `cargo test` built beside this test, else built now with
/// this test's features (so that it serves `rpc.discover`).
fn files_server() -> PathBuf {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let path =
            interop::profile_dir().join("examples").join(format!("files_server{}", std::env::consts::EXE_SUFFIX));
        if path.is_file() {
            return Ok(path);
        }
        let mut features = vec!["openrpc"];
        if cfg!(feature = "websocket") {
            features.push("websocket");
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build.args(["build", "--example", "files_server", "--features", &features.join(",")]);
        interop::run_bounded(
            build.current_dir(env!("CARGO_MANIFEST_DIR")),
            "building the files_server example",
            Duration::from_secs(600),
        )?;
        if path.is_file() { Ok(path) } else { Err(format!("files_server is not at {}", path.display())) }
    });
    built.clone().unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh folder under `target/` for this test's files.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = interop::profile_dir().join("openrpc-tests").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
