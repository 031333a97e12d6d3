//! A feature a user adds through the public seam: MCP's `logging/setLevel` filter.
//!
//! ```text
//! cargo run --example feature_logging
//! ```
//!
//! A server with the `Logging` feature serves `work`, whose handler logs at three levels; the
//! client sets the level to `warning`, calls `work`, and prints the logs it was sent (only the
//! warning and the error) and the answer.

mod logging;

use jsonrpc_duplex::transport::memory;
use jsonrpc_duplex::{Connection, ErrorObject, Profile, RequestContext, Router};
use serde_json::{Value, json};

use logging::{Level, Logging, log, log_failed};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let work = Router::new().method("work", |(): (), ctx: RequestContext| async move {
        let peer = ctx.peer();
        log(&peer, Level::Debug, "work", "starting").await.map_err(log_failed)?;
        log(&peer, Level::Warning, "work", "the disk is almost full").await.map_err(log_failed)?;
        log(&peer, Level::Error, "work", json!({ "step": 2, "failed": "write" })).await.map_err(log_failed)?;
        Ok::<_, ErrorObject>("done")
    });
    let server = Connection::builder().profile(Profile::mcp()).feature(Logging::default()).serve(work);

    let (seen, mut logs) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let client = Connection::builder().profile(Profile::mcp()).serve(Router::new().notification(
        logging::MESSAGE,
        move |log: Value, _| {
            let _ = seen.send(log);
            async {}
        },
    ));
    let (client, _server) = memory::pair(client, server);

    let peer = client.handle();
    let _: Value = peer.request(logging::SET_LEVEL, json!({ "level": "warning" })).await?;
    let answer: String =
        peer.request_with("work", (), jsonrpc_duplex::CallOptions::new().after_notifications()).await?;
    while let Ok(log) = logs.try_recv() {
        println!("log: {log}");
    }
    println!("work: {answer}");
    Ok(())
}
