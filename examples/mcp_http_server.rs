//! An MCP server over Streamable HTTP with what the official conformance suite's server
//! scenarios call (`@modelcontextprotocol/conformance server --url http://127.0.0.1:PORT/mcp`):
//! tools returning each kind of content, a tool that logs, one that reports progress, tools that
//! call the client back (sampling, elicitation), resources (text, binary, a template,
//! subscriptions), prompts, `logging/setLevel`, `completion/complete`.
//!
//! ```text
//! cargo run --features mcp-http --example mcp_http_server -- 127.0.0.1:3000
//! ```
//!
//! It prints `listening on http://ADDR/mcp` on stdout once it accepts. The wire is one line:
//! `Connection::builder().profile(Profile::mcp())` per session, given to
//! `McpHttpServer::new(…)`; the transport (`bind`) is chosen apart from it.
//!
//! `MCP_BEARER_TOKEN=…` makes every request need `Authorization: Bearer …` (the auth hook);
//! the tool `whoami` then tells the session's principal.

#[path = "mcp/protocol.rs"]
mod protocol;

use jsonrpc_duplex::transport::mcp_http::{
    AuthRejection, McpHttpServer, STATELESS_VERSIONS, SUPPORTED_VERSIONS, SessionInfo,
};
use jsonrpc_duplex::{Connection, ErrorObject, Profile, RequestContext, Router};
use serde_json::{Value, json};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn text(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

fn result(content: Vec<Value>) -> Value {
    json!({ "content": content })
}

fn tools() -> Value {
    let none = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: &Value| json!({"name": name, "description": description, "inputSchema": schema});
    json!({"tools": [
        tool("test_simple_text", "Returns one text content", &none),
        tool("test_image_content", "Returns an image content", &none),
        tool("test_audio_content", "Returns an audio content", &none),
        tool("test_embedded_resource", "Returns an embedded resource", &none),
        tool("test_multiple_content_types", "Returns text, an image and a resource", &none),
        tool("test_tool_with_logging", "Sends three log messages while it runs", &none),
        tool("test_tool_with_progress", "Reports progress three times while it runs", &none),
        tool("test_error_handling", "Always fails (a tool error, isError)", &none),
        tool("test_sampling", "Asks the client's model (sampling/createMessage)",
            &json!({"type": "object", "properties": {"prompt": {"type": "string", "description": "The prompt"}}, "required": ["prompt"]})),
        tool("test_elicitation", "Asks the client's user (elicitation/create)",
            &json!({"type": "object", "properties": {"message": {"type": "string", "description": "What to ask"}}, "required": ["message"]})),
        tool("test_elicitation_sep1034_defaults", "Elicitation whose fields have defaults (SEP-1034)", &none),
        tool("test_elicitation_sep1330_enums", "Elicitation with each kind of enum field (SEP-1330)", &none),
        tool("json_schema_2020_12_tool", "Its input schema uses JSON Schema 2020-12 ($schema, $defs)", &json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": false
        })),
        tool("whoami", "The principal the session was authenticated as", &none),
    ]})
}

/// `tools/call`.
async fn call_tool(params: Value, ctx: RequestContext, session: SessionInfo) -> Result<Value, ErrorObject> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
    let args = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
    let peer = ctx.peer();
    let failed = |what: &str, e: &dyn std::fmt::Display| Ok(result(vec![text(format!("{what} failed: {e}"))]));
    match name {
        "test_simple_text" => Ok(result(vec![text("This is a simple text response for testing.")])),
        "test_image_content" => Ok(result(vec![json!({"type": "image", "data": PNG, "mimeType": "image/png"})])),
        "test_audio_content" => Ok(result(vec![json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"})])),
        "test_embedded_resource" => Ok(result(vec![json!({"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."
        }})])),
        "test_multiple_content_types" => Ok(result(vec![
            text("Multiple content types test:"),
            json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"
            }}),
        ])),
        "test_tool_with_logging" => {
            for line in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                let log = json!({"level": "info", "logger": "conformance", "data": line});
                peer.notify("notifications/message", log).await.map_err(ErrorObject::internal_error)?;
            }
            Ok(result(vec![text("Tool with logging executed successfully")]))
        }
        "test_tool_with_progress" => {
            let token = params.get("_meta").and_then(|m| m.get("progressToken")).cloned().unwrap_or(json!(0));
            for step in [0, 50, 100] {
                let update = json!({"progressToken": token, "progress": step, "total": 100, "message": format!("Completed step {step} of 100")});
                peer.notify("notifications/progress", update).await.map_err(ErrorObject::internal_error)?;
            }
            Ok(result(vec![text(token.to_string())]))
        }
        "test_error_handling" => Ok(json!({
            "content": [text("This tool intentionally returns an error for testing")],
            "isError": true
        })),
        "test_sampling" => {
            let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or_default();
            let request = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 100
            });
            match peer.request::<Value>("sampling/createMessage", request).await {
                Ok(answer) => {
                    let said = answer.pointer("/content/text").and_then(Value::as_str).unwrap_or("No response");
                    Ok(result(vec![text(format!("LLM response: {said}"))]))
                }
                Err(e) => failed("sampling", &e),
            }
        }
        "test_elicitation" => {
            let message = args.get("message").and_then(Value::as_str).unwrap_or_default();
            let schema = json!({"type": "object", "properties": {"response": {"type": "string", "description": "User's response"}}, "required": ["response"]});
            elicit(&peer, message, schema, "User response").await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            }, "required": []});
            elicit(&peer, "Please review and update the form fields with defaults", schema, "Elicitation completed")
                .await
        }
        "test_elicitation_sep1330_enums" => {
            let schema = json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                    {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}
                ]},
                "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
                    "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}
                    ]}}
            }, "required": []});
            elicit(&peer, "Please select options from the enum fields", schema, "Elicitation completed").await
        }
        "json_schema_2020_12_tool" => Ok(result(vec![text(format!("JSON Schema 2020-12 tool called with: {args}"))])),
        "whoami" => Ok(result(vec![text(session.principal.unwrap_or_else(|| "(anonymous)".into()))])),
        other => Err(ErrorObject::invalid_params(format!("unknown tool {other:?}"))),
    }
}

async fn elicit(peer: &jsonrpc_duplex::Handle, message: &str, schema: Value, said: &str) -> Result<Value, ErrorObject> {
    let request = json!({"message": message, "requestedSchema": schema});
    match peer.request::<Value>("elicitation/create", request).await {
        Ok(answer) => {
            let action = answer.get("action").and_then(Value::as_str).unwrap_or("?");
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            Ok(result(vec![text(format!("{said}: action={action}, content={content}"))]))
        }
        Err(e) => Ok(result(vec![text(format!("elicitation failed: {e}"))])),
    }
}

fn read_resource(params: Value) -> Result<Value, ErrorObject> {
    let uri = params.get("uri").and_then(Value::as_str).unwrap_or_default();
    let one = |content: Value| Ok(json!({ "contents": [content] }));
    match uri {
        "test://static-text" => one(
            json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."}),
        ),
        "test://static-binary" => one(json!({"uri": uri, "mimeType": "image/png", "blob": PNG})),
        "test://watched-resource" => {
            one(json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"}))
        }
        _ => {
            match uri.strip_prefix("test://template/").and_then(|rest| rest.strip_suffix("/data")) {
                Some(id) if !id.is_empty() && !id.contains('/') => one(json!({
                    "uri": uri, "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()
                })),
                _ => Err(ErrorObject::new(protocol::RESOURCE_NOT_FOUND, "Resource not found")
                    .with_data(json!({ "uri": uri }))),
            }
        }
    }
}

fn get_prompt(params: Value) -> Result<Value, ErrorObject> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
    let arg = |key: &str| params.pointer(&format!("/arguments/{key}")).and_then(Value::as_str).map(str::to_owned);
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match name {
        "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => {
            let (Some(a), Some(b)) = (arg("arg1"), arg("arg2")) else {
                return Err(ErrorObject::invalid_params("arg1 and arg2 are required"));
            };
            vec![user(text(format!("Prompt with arguments: arg1='{a}', arg2='{b}'")))]
        }
        "test_prompt_with_embedded_resource" => {
            let Some(uri) = arg("resourceUri") else {
                return Err(ErrorObject::invalid_params("resourceUri is required"));
            };
            vec![
                user(
                    json!({"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}),
                ),
                user(text("Please process the embedded resource above.")),
            ]
        }
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            user(text("Please analyze the image above.")),
        ],
        other => return Err(ErrorObject::invalid_params(format!("unknown prompt {other:?}"))),
    };
    Ok(json!({ "messages": messages }))
}

fn router(session: SessionInfo) -> Router {
    let prompt_arg =
        |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
    Router::new()
        .method("initialize", |params: Value, _| async move {
            let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
            let version = SUPPORTED_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&SUPPORTED_VERSIONS[0]);
            Ok::<_, ErrorObject>(json!({
                "protocolVersion": version,
                "capabilities": {
                    "tools": {"listChanged": true},
                    "resources": {"subscribe": true, "listChanged": true},
                    "prompts": {"listChanged": true},
                    "logging": {},
                    "completions": {}
                },
                "serverInfo": {"name": "jsonrpc-duplex-mcp-http-server", "version": env!("CARGO_PKG_VERSION")}
            }))
        })
        // Revision 2026-07-28 (stateless): what `initialize` told, asked for at any time.
        .method("server/discover", |_: Value, _| async {
            let versions: Vec<&str> = STATELESS_VERSIONS.iter().chain(SUPPORTED_VERSIONS).copied().collect();
            Ok::<_, ErrorObject>(json!({
                "resultType": "complete",
                "supportedVersions": versions,
                "capabilities": {"tools": {"listChanged": true}, "resources": {}, "prompts": {}, "completions": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo":
                    {"name": "jsonrpc-duplex-mcp-http-server", "version": env!("CARGO_PKG_VERSION")}},
                "ttlMs": 60000,
                "cacheScope": "public"
            }))
        })
        .notification("notifications/initialized", |_: Value, _| async {})
        .method("ping", |_: Value, _| async { Ok::<_, ErrorObject>(json!({})) })
        .method("tools/list", |_: Value, _| async { Ok::<_, ErrorObject>(tools()) })
        .method("tools/call", move |params: Value, ctx| call_tool(params, ctx, session.clone()))
        .method("resources/list", |_: Value, _| async {
            let resource = |uri: &str, name: &str, description: &str, mime: &str| {
                json!({"uri": uri, "name": name, "description": description, "mimeType": mime})
            };
            Ok::<_, ErrorObject>(json!({"resources": [
                resource("test://static-text", "static-text", "A static text resource", "text/plain"),
                resource("test://static-binary", "static-binary", "A static binary resource (a PNG)", "image/png"),
                resource("test://watched-resource", "watched-resource", "A resource to subscribe to", "text/plain"),
            ]}))
        })
        .method("resources/templates/list", |_: Value, _| async {
            Ok::<_, ErrorObject>(json!({"resourceTemplates": [{
                "uriTemplate": "test://template/{id}/data", "name": "template",
                "description": "A resource template with parameter substitution", "mimeType": "application/json"
            }]}))
        })
        .method("resources/read", |params: Value, _| async move { read_resource(params) })
        .method("resources/subscribe", |_: Value, _| async { Ok::<_, ErrorObject>(json!({})) })
        .method("resources/unsubscribe", |_: Value, _| async { Ok::<_, ErrorObject>(json!({})) })
        .method("prompts/list", move |_: Value, _| {
            let list = json!({"prompts": [
                {"name": "test_simple_prompt", "description": "A prompt without arguments"},
                {"name": "test_prompt_with_arguments", "description": "A prompt with two required arguments",
                    "arguments": [prompt_arg("arg1", "First test argument"), prompt_arg("arg2", "Second test argument")]},
                {"name": "test_prompt_with_embedded_resource", "description": "A prompt with an embedded resource",
                    "arguments": [prompt_arg("resourceUri", "URI of the resource to embed")]},
                {"name": "test_prompt_with_image", "description": "A prompt with an image"},
            ]});
            async move { Ok::<_, ErrorObject>(list) }
        })
        .method("prompts/get", |params: Value, _| async move { get_prompt(params) })
        .method("logging/setLevel", |_: Value, _| async { Ok::<_, ErrorObject>(json!({})) })
        .method("completion/complete", |_: Value, _| async {
            Ok::<_, ErrorObject>(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
        })
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".into());
    let mut server =
        McpHttpServer::new(|session| Connection::builder().profile(Profile::mcp()).serve(router(session.clone())));
    if let Ok(token) = std::env::var("MCP_BEARER_TOKEN") {
        let expected = format!("Bearer {token}");
        server =
            server.authorize(move |request| match request.headers.get("authorization").and_then(|v| v.to_str().ok()) {
                Some(given) if given == expected => Ok(Some("bearer-user".to_owned())),
                _ => Err(AuthRejection::bearer("this server needs Authorization: Bearer <token>")),
            });
    }
    let bound = server.bind(addr).await?;
    println!("listening on http://{}/mcp", bound.local_addr());
    tokio::signal::ctrl_c().await?;
    bound.shutdown().await;
    Ok(())
}
