//! Progress reports: StreamJsonRpc's `IProgress<T>` and LSP's `$/progress`.
//!
//! The caller puts a token where the progress argument goes (an integer from a per-connection
//! counter: [`Handle::progress`](crate::Handle::progress)); the callee reports with the
//! notification `$/progress` `{"token": t, "value": v}` ([`Progress::report`]), all before it
//! answers. Reports for tokens this side issued are taken off the wire by the reader itself, in
//! order, before the answer that follows them is delivered: a caller sees every report before its
//! call returns ([`ProgressReceiver::drive`]). Reports for other tokens (say an LSP server's own,
//! created with `window/workDoneProgress/create`) go to the router like any notification.
//!
//! ```text
//! --> {"jsonrpc":"2.0","id":0,"method":"withProgress","params":{"steps":2,"progressToken":0}}
//! <-- {"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":{"step":1}}}
//! <-- {"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":{"step":2}}}
//! <-- {"jsonrpc":"2.0","id":0,"result":2}
//! ```
//!
//! Inbound, positional params `[t, v]` (StreamJsonRpc's default) are accepted too. The method and
//! member names are a connection setting ([`ProgressProtocol`]; MCP's `notifications/progress`
//! puts the value's members next to `progressToken`).

mod feature;
mod in_params;
mod receiver;
mod registry;
mod reporter;
mod token;

use std::borrow::Cow;

pub(crate) use feature::{ProgressFeature, ProgressState};
pub use in_params::TokenInParams;
pub use receiver::ProgressReceiver;
pub use reporter::Progress;
pub use token::ProgressToken;

use jsonrpc_duplex_names as names;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// How a protocol spells progress notifications.
///
/// | preset | method | params |
/// |---|---|---|
/// | [`ProgressProtocol::lsp`] (default; StreamJsonRpc, vscode-jsonrpc) | `$/progress` | `{"token": t, "value": v}` (inbound also `[t, v]`) |
/// | [`ProgressProtocol::mcp`] | `notifications/progress` | `{"progressToken": t, ...v}` (the value's members beside the token) |
///
/// [`request_token`](ProgressProtocol::request_token) says where a request carries its own
/// token when its params are one object: MCP's `_meta.progressToken`, LSP's `workDoneToken`
/// ([`Profile::mcp`](crate::Profile::mcp), [`Profile::lsp`](crate::Profile::lsp) set it). A
/// `Progress<T>` argument of an `#[rpc]` method with `params = "object"`, and
/// [`Request::progress_token`](crate::Request::progress_token) on the server and [`Handle::request_with_progress`](crate::Handle::request_with_progress)
/// on the client, put the token there and find it there.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProgressProtocol {
    /// The notification's method name.
    pub method: Cow<'static, str>,
    /// The member that carries the token.
    pub token_member: Cow<'static, str>,
    /// The member that carries the value; `None` when the value is an object whose members sit
    /// beside the token in the params.
    pub value_member: Option<Cow<'static, str>>,
    /// Where a params object carries the request's progress token: member names separated by
    /// `.` (`"_meta.progressToken"`); `None` when the protocol has no such place.
    pub request_token: Option<Cow<'static, str>>,
}

impl ProgressProtocol {
    /// LSP / StreamJsonRpc / vscode-jsonrpc: `$/progress {"token", "value"}`.
    pub fn lsp() -> Self {
        ProgressProtocol {
            method: names::progress::LSP.into(),
            token_member: names::progress::LSP_TOKEN.into(),
            value_member: Some(names::progress::LSP_VALUE.into()),
            request_token: None,
        }
    }
    /// MCP: `notifications/progress {"progressToken", "progress", "total"?, "message"?}`, the
    /// request's token in `_meta.progressToken`.
    pub fn mcp() -> Self {
        ProgressProtocol {
            method: names::progress::MCP.into(),
            token_member: names::progress::MCP_TOKEN.into(),
            value_member: None,
            request_token: Some(names::progress::MCP_REQUEST_TOKEN.into()),
        }
    }

    /// The same, with a request's own token at `path` in its params object (see
    /// [`request_token`](ProgressProtocol::request_token)).
    #[must_use]
    pub fn with_request_token(mut self, path: impl Into<Cow<'static, str>>) -> Self {
        self.request_token = Some(path.into());
        self
    }
}

impl Default for ProgressProtocol {
    fn default() -> Self {
        Self::lsp()
    }
}

/// The members of a JSON object in their order, values raw.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// `(token, value)` out of progress params, in either shape.
pub(crate) fn split_params<'a>(
    params: &'a RawValue,
    protocol: &ProgressProtocol,
) -> Option<(&'a RawValue, Cow<'a, RawValue>)> {
    let text = params.get();
    if text.trim_start().starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
        let token = *items.first()?;
        let value = items.get(1).copied().map_or_else(null, Cow::Borrowed);
        return Some((token, value));
    }
    let Members(members) = serde_json::from_str(text).ok()?;
    let token = members.iter().find(|(k, _)| *k == protocol.token_member)?.1;
    let value = match &protocol.value_member {
        Some(name) => members.iter().find(|(k, _)| k == name).map_or_else(null, |(_, v)| Cow::Borrowed(*v)),
        None => {
            let mut object = String::from("{");
            for (k, v) in members.iter().filter(|(k, _)| *k != protocol.token_member) {
                if object.len() > 1 {
                    object.push(',');
                }
                object.push_str(&serde_json::to_string(k).ok()?);
                object.push(':');
                object.push_str(v.get());
            }
            object.push('}');
            Cow::Owned(RawValue::from_string(object).ok()?)
        }
    };
    Some((token, value))
}

fn null<'a>() -> Cow<'a, RawValue> {
    Cow::Borrowed(RawValue::NULL)
}

/// What a report held for its receiver counts against the read-ahead.
pub(crate) fn report_bytes(value: &RawValue) -> usize {
    crate::connection::HELD_OVERHEAD + value.get().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(params: &str, protocol: ProgressProtocol) -> Option<(String, String)> {
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        split_params(&raw, &protocol).map(|(t, v)| (t.get().to_owned(), v.get().to_owned()))
    }

    #[test]
    fn both_shapes_and_the_flattened_one() {
        let want = Some(("3".to_owned(), r#"{"percent":40}"#.to_owned()));
        assert_eq!(split(r#"{"token":3,"value":{"percent":40}}"#, ProgressProtocol::lsp()), want);
        assert_eq!(split(r#"[3,{"percent":40}]"#, ProgressProtocol::lsp()), want);
        assert_eq!(
            split(r#"{"progress":5,"progressToken":"a","total":10}"#, ProgressProtocol::mcp()),
            Some(("\"a\"".to_owned(), r#"{"progress":5,"total":10}"#.to_owned()))
        );
        assert_eq!(split(r#"{"value":1}"#, ProgressProtocol::lsp()), None);
        assert_eq!(split(r#"{"token":1}"#, ProgressProtocol::lsp()), Some(("1".to_owned(), "null".to_owned())));
    }
}
