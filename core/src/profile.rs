//! Protocol profiles: the wire conventions of LSP, ACP, MCP and plain JSON-RPC in one call. A
//! profile spans layers (framing and cancellation are the connection's, progress is a feature's),
//! so it lives at the top, where the layers are put together.

use crate::connection::{Builder, CancelProtocol};
use crate::framing::Framing;
use crate::progress::ProgressProtocol;

/// The wire conventions of one protocol, set with one call: [`Builder::profile`](crate::Builder::profile).
///
/// | profile | framing | cancellation | progress | a request's own progress token |
/// |---|---|---|---|---|
/// | [`Profile::lsp`] | `Content-Length` | `$/cancelRequest {"id"}` | `$/progress {"token", "value"}` | `workDoneToken` in the params |
/// | [`Profile::acp`] | newline | `$/cancel_request {"requestId"}` | `$/progress {"token", "value"}` | none |
/// | [`Profile::mcp`] | newline | `notifications/cancelled {"requestId", "reason"}`, never answered | `notifications/progress {"progressToken", ...value}` | `_meta.progressToken` in the params |
/// | [`Profile::json_rpc`] (the defaults) | `Content-Length` | `$/cancelRequest {"id"}` | `$/progress {"token", "value"}` | none (a progress argument travels as a param of its own) |
///
/// The plain JSON-RPC profile is what StreamJsonRpc and vscode-jsonrpc speak, and what a
/// connection speaks without a profile. A single setting ([`Builder::framing`](crate::Builder::framing),
/// [`Builder::cancel_protocol`](crate::Builder::cancel_protocol),
/// [`Builder::progress_protocol`](crate::Builder::progress_protocol)) overrides its part of a
/// profile whether it is given before or after it.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, Framing, Profile};
/// // MCP over stdio: newline framing, `notifications/cancelled`, `notifications/progress`.
/// let mcp = Connection::builder().profile(Profile::mcp());
/// // LSP conventions over a newline-framed pipe.
/// let mixed = Connection::builder().framing(Framing::NewlineDelimited).profile(Profile::lsp());
/// # drop((mcp, mixed));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    name: &'static str,
    framing: Framing,
    cancel: CancelProtocol,
    progress: ProgressProtocol,
}

impl Profile {
    /// The Language Server Protocol: `Content-Length` framing, `$/cancelRequest`, `$/progress`,
    /// a request's work-done token in its `workDoneToken` member.
    pub fn lsp() -> Self {
        Profile {
            name: "LSP",
            framing: Framing::ContentLength,
            cancel: CancelProtocol::lsp(),
            progress: ProgressProtocol::lsp().with_request_token("workDoneToken"),
        }
    }

    /// The Agent Client Protocol: newline framing and `$/cancel_request {"requestId"}`.
    pub fn acp() -> Self {
        Profile {
            name: "ACP",
            framing: Framing::NewlineDelimited,
            cancel: CancelProtocol::acp(),
            progress: ProgressProtocol::lsp(),
        }
    }

    /// The Model Context Protocol over stdio: newline framing, `notifications/cancelled` (a
    /// cancelled request is not answered), `notifications/progress` with the token in a request's
    /// `_meta.progressToken`.
    pub fn mcp() -> Self {
        Profile {
            name: "MCP",
            framing: Framing::NewlineDelimited,
            cancel: CancelProtocol::mcp(),
            progress: ProgressProtocol::mcp(),
        }
    }

    /// Plain JSON-RPC 2.0 as StreamJsonRpc and vscode-jsonrpc speak it (the defaults):
    /// `Content-Length` framing, `$/cancelRequest`, `$/progress`.
    pub fn json_rpc() -> Self {
        Profile {
            name: "JSON-RPC",
            framing: Framing::ContentLength,
            cancel: CancelProtocol::lsp(),
            progress: ProgressProtocol::lsp(),
        }
    }

    /// The protocol's name, as messages about it say it (`"MCP"`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The framing this profile uses on byte streams.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// How this profile spells cancellation.
    pub fn cancel_protocol(&self) -> &CancelProtocol {
        &self.cancel
    }

    /// How this profile spells progress.
    pub fn progress_protocol(&self) -> &ProgressProtocol {
        &self.progress
    }
}

impl Default for Profile {
    fn default() -> Self {
        Self::json_rpc()
    }
}

impl Builder {
    /// Speak a protocol: its framing, cancellation and progress conventions in one call (see
    /// [`Profile`]). Settings given one by one override their part of it, before or after.
    pub fn profile(self, profile: Profile) -> Self {
        let Profile { name, framing, cancel, progress } = profile;
        self.apply_profile(name, framing, cancel).with_profile_progress(progress)
    }
}
