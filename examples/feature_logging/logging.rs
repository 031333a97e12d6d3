//! MCP's logging utility as a feature added through the public seam
//! ([`jsonrpc_duplex::seam`]): the feature answers `logging/setLevel` itself, before the router,
//! and drops the server's `notifications/message` logs below the level the client chose.
//!
//! The handlers never see `logging/setLevel`; they log through [`log`], which finds the
//! connection's filter with `Handle::extension`.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use jsonrpc_duplex::seam::{Extension, Feature, Link, Start};
use jsonrpc_duplex::{Error, ErrorObject, Handle, Request, Responder};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The request that sets the level, and the notification a log travels in (MCP's spellings).
pub(crate) const SET_LEVEL: &str = "logging/setLevel";
pub(crate) const MESSAGE: &str = "notifications/message";

/// The syslog severities MCP uses, least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

const LEVELS: [Level; 8] = [
    Level::Debug,
    Level::Info,
    Level::Notice,
    Level::Warning,
    Level::Error,
    Level::Critical,
    Level::Alert,
    Level::Emergency,
];

/// The feature, in the builder: the level in force until the client sets one.
#[derive(Clone, Debug)]
pub(crate) struct Logging {
    pub(crate) initial: Level,
}

impl Default for Logging {
    fn default() -> Self {
        Logging { initial: Level::Info }
    }
}

impl Feature for Logging {
    fn start(&self, _: &Start<'_>) -> Arc<dyn Extension> {
        Arc::new(LogFilter { min: AtomicU8::new(self.initial as u8) })
    }
}

/// The feature's part of one connection: the least severe level that is sent.
pub(crate) struct LogFilter {
    min: AtomicU8,
}

impl LogFilter {
    /// The level in force.
    pub(crate) fn level(&self) -> Level {
        LEVELS[usize::from(self.min.load(Ordering::Acquire))]
    }

    /// Whether a log at `level` goes out.
    pub(crate) fn passes(&self, level: Level) -> bool {
        level >= self.level()
    }
}

#[derive(Deserialize)]
struct SetLevel {
    level: Level,
}

impl Extension for LogFilter {
    fn requests(&self) -> Vec<Cow<'static, str>> {
        vec![SET_LEVEL.into()]
    }

    /// Answered at once, on the ordered lane: every request read after it logs under the new
    /// level.
    fn serve(
        self: Arc<Self>,
        _: &dyn Link,
        request: Request,
        responder: Responder,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        match request.decode_params::<SetLevel>() {
            Ok(SetLevel { level }) => {
                self.min.store(level as u8, Ordering::Release);
                responder.ok(json!({}));
            }
            Err(error) => {
                responder.err(error);
            }
        }
        Box::pin(async {})
    }

    fn shadows(&self) -> Option<&'static str> {
        Some("the `Logging` feature answers it (drop the route, or the feature)")
    }
}

/// Send the peer a log at `level` unless its filter drops it; `Ok(false)` when dropped (or when
/// the connection has no `Logging` feature).
pub(crate) async fn log(peer: &Handle, level: Level, logger: &str, data: impl Serialize) -> Result<bool, Error> {
    let Some(filter) = peer.extension::<LogFilter>() else { return Ok(false) };
    if !filter.passes(level) {
        return Ok(false);
    }
    peer.notify(MESSAGE, json!({ "level": level, "logger": logger, "data": data })).await?;
    Ok(true)
}

/// What a handler answers when logging fails (the connection is gone).
pub(crate) fn log_failed(e: Error) -> ErrorObject {
    ErrorObject::internal_error(e)
}
