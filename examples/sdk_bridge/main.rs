//! The Rust CLI of `examples/sdk_bridge/`: a session served to the one SDK that spawned it, on
//! stdio, or on TCP with `--port N` / `--listen ADDR` (it prints the address line the SDKs
//! read), with Content-Length framing or `--framing newline`. It exits when its stdin ends, so it
//! never outlives its SDK.
//!
//! ```text
//! cargo build --example sdk_bridge
//! python3 examples/sdk_bridge/python/drive.py target/debug/examples/sdk_bridge
//! ```
//!
//! It logs nothing: a CLI whose parent may be gone must not write to a stderr nobody reads
//! (`eprintln!` panics once that pipe is closed).

mod protocol;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::Stream;
use jsonrpc_duplex::{CliTransport, Connection, Framing, Progress};
use protocol::{BridgeError, Session, SessionServer, Step, ToolsClient, TurnEvent, TurnSummary};

/// The session: how many turns ran, and the events of the last one.
#[derive(Clone, Default)]
struct Agent {
    state: Arc<Mutex<(u32, Vec<TurnEvent>)>>,
}

impl Session for Agent {
    async fn ping(&self) -> String {
        "pong".to_owned()
    }

    async fn turn(&self, prompt: String, tools: ToolsClient) -> Result<TurnSummary, BridgeError> {
        let turn = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.0 += 1;
            state.1.clear();
            state.0
        };
        let failed = |e: jsonrpc_duplex::ClientError| BridgeError { tool: "echo".into(), reason: e.to_string() };
        let mut events = Vec::new();
        events.push(TurnEvent::Started { turn });
        for word in prompt.split_whitespace() {
            events.push(TurnEvent::Text { text: word.to_owned() });
        }
        for event in &events {
            tools.event(event.clone()).await.map_err(failed)?;
        }
        let output = tools.call_tool("echo".into(), prompt.clone()).await.map_err(failed)?;
        let rest =
            [TurnEvent::ToolOutput { name: "echo".into(), output: output.clone() }, TurnEvent::Finished { turn }];
        for event in rest {
            tools.event(event.clone()).await.map_err(failed)?;
            events.push(event);
        }
        let count = events.len() as u32;
        self.state.lock().unwrap_or_else(PoisonError::into_inner).1 = events;
        Ok(TurnSummary { turn, events: count, tool_output: output })
    }

    async fn long_task(&self, steps: u32, progress: Progress<Step>) -> u32 {
        for done in 1..=steps {
            // Work; a cancel drops this future at the next await.
            tokio::time::sleep(Duration::from_millis(10)).await;
            let _ = progress.report(Step { done, total: steps }).await;
        }
        steps
    }

    fn history(&self) -> impl Stream<Item = TurnEvent> + Send {
        let events = self.state.lock().unwrap_or_else(PoisonError::into_inner).1.clone();
        futures::stream::iter(events)
    }

    async fn fail(&self, tool: String) -> Result<(), BridgeError> {
        Err(BridgeError { tool, reason: "it was asked to fail".into() })
    }

    async fn add(&self, a: i64, b: i64) -> Result<i64, BridgeError> {
        a.checked_add(b).ok_or(BridgeError { tool: "add".into(), reason: format!("{a} + {b} overflows i64") })
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let (transport, rest) = match CliTransport::from_args(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "sdk_bridge: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // `--framing newline` (the SDKs speak either framing); Content-Length by default.
    let framing = match rest.as_slice() {
        [] => Framing::ContentLength,
        [flag, value] if flag == "--framing" => match value.parse::<Framing>() {
            Ok(framing) => framing,
            Err(e) => {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "sdk_bridge: --framing {value}: {e}");
                return std::process::ExitCode::from(2);
            }
        },
        _ => {
            use std::io::Write;
            let usage = "usage: sdk_bridge [--port N | --listen ADDR] [--framing content-length|newline]";
            let _ = writeln!(std::io::stderr(), "sdk_bridge: unknown arguments {rest:?} ({usage})");
            return std::process::ExitCode::from(2);
        }
    };
    let builder = Connection::builder().framing(framing).serve(SessionServer::new(Agent::default()).into_router());
    match transport.serve(builder).await {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "sdk_bridge: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
