//! The protocol of `examples/sdk_bridge/`: an agent-like session that a Rust CLI serves, and a
//! `Tools` that the SDK serves (its tools, and the sink for a turn's events), which the CLI calls
//! back. `sdk_bridge_codegen` writes the Python, TypeScript (and OpenRPC) files from these traits.
//!
//! The types derive `schemars::JsonSchema` only with the `openrpc` feature.

// Each example uses part of this module.
#![allow(dead_code, unreachable_pub)]

use futures::Stream;
use jsonrpc_duplex::{ErrorObject, Progress, RpcErrorType, rpc};
use serde::{Deserialize, Serialize};

/// A session of the CLI, served by the Rust side.
#[rpc(namespace = "session", rename_all = "camelCase")]
pub trait Session {
    /// Answers `"pong"` (for latency measurements).
    async fn ping(&self) -> String;

    /// Run one turn on `prompt`: the CLI streams its events (`tools/event`), calls the SDK's
    /// tool `echo` once, and answers with a summary once every event is sent.
    #[method(params = "named")]
    async fn turn(&self, prompt: String, #[context] tools: ToolsClient) -> Result<TurnSummary, BridgeError>;

    /// A long task of `steps` steps of 10 ms each, reporting each one; cancel it to stop it
    /// (answered `-32800`).
    #[method(params = "named")]
    async fn long_task(&self, steps: u32, progress: Progress<Step>) -> u32;

    /// The events of the last turn, pulled as the caller consumes them.
    #[method(params = "named")]
    fn history(&self) -> impl Stream<Item = TurnEvent> + Send;

    /// Always fails with `ToolFailed` carrying `tool` and a reason.
    #[method(params = "named")]
    async fn fail(&self, tool: String) -> Result<(), BridgeError>;

    /// `a + b`, checked: 64-bit integers travel whole (`9007199254740993` stays odd).
    async fn add(&self, a: i64, b: i64) -> Result<i64, BridgeError>;
}

/// What the SDK serves: its tools, and a sink for the events of a turn.
#[rpc(namespace = "tools", rename_all = "camelCase")]
pub trait Tools {
    /// Run the tool `name` on `input`; its output.
    #[method(params = "named")]
    async fn call_tool(&self, name: String, input: String) -> String;

    /// One event of a turn, sent before the turn's answer.
    #[notification(params = "named")]
    async fn event(&self, event: TurnEvent);
}

/// One event of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TurnEvent {
    /// The turn started.
    Started {
        /// The turn's number (from 1).
        turn: u32,
    },
    /// A piece of the answer's text.
    Text {
        /// The text.
        text: String,
    },
    /// The SDK's tool answered.
    ToolOutput {
        /// The tool.
        name: String,
        /// What it answered.
        output: String,
    },
    /// The turn ended.
    Finished {
        /// The turn's number.
        turn: u32,
    },
}

/// The answer to a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct TurnSummary {
    /// The turn's number (from 1).
    pub turn: u32,
    /// How many events were sent before this answer.
    pub events: u32,
    /// What the SDK's tool answered.
    pub tool_output: String,
}

/// One step of a long task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
pub struct Step {
    /// Steps done, this one included.
    pub done: u32,
    /// Steps in all.
    pub total: u32,
}

/// Why a session call failed; the error's `data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openrpc", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BridgeError {
    /// The tool (or operation) that failed.
    pub tool: String,
    /// Why.
    pub reason: String,
}

impl BridgeError {
    /// `-32050`: a tool failed.
    pub const TOOL_FAILED: i64 = -32050;
}

impl RpcErrorType for BridgeError {
    fn into_error_object(self) -> ErrorObject {
        ErrorObject::new(BridgeError::TOOL_FAILED, "a tool failed").with_data(&self)
    }

    fn from_error_object(error: ErrorObject) -> Result<Self, ErrorObject> {
        match (error.code, error.data_as::<BridgeError>()) {
            (BridgeError::TOOL_FAILED, Some(Ok(e))) => Ok(e),
            _ => Err(error),
        }
    }
}

/// The code and data of [`BridgeError`], for the OpenRPC document and the SDKs' error classes.
#[cfg(feature = "openrpc")]
impl jsonrpc_duplex::openrpc::DescribeErrors for BridgeError {
    fn describe_errors(
        generator: &mut jsonrpc_duplex::openrpc::SchemaGenerator,
    ) -> Vec<jsonrpc_duplex::openrpc::ErrorDoc> {
        vec![
            jsonrpc_duplex::openrpc::ErrorDoc::new("ToolFailed", BridgeError::TOOL_FAILED, "a tool failed")
                .docs("A tool failed: which one, and why.")
                .data::<BridgeError>(generator),
        ]
    }
}
