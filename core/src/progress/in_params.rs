//! A request's own progress token inside its params object, where the protocol carries it
//! (MCP's `_meta.progressToken`, LSP's `workDoneToken`; [`ProgressProtocol::request_token`](crate::ProgressProtocol::request_token)).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::ProgressToken;
use crate::connection::{CallOptions, Error, Handle};
use crate::handler::Request;

/// Params with a progress token put where the connection's [`ProgressProtocol`](crate::ProgressProtocol) says a request
/// carries its own ([`ProgressToken::in_params`]).
pub struct TokenInParams<'a, P: ?Sized> {
    params: &'a P,
    token: &'a ProgressToken,
}

impl<P: ?Sized> fmt::Debug for TokenInParams<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenInParams").field("token", self.token).finish_non_exhaustive()
    }
}

impl ProgressToken {
    /// `params` (an object) with this token where the connection's profile puts a request's
    /// progress token: `{"_meta": {"progressToken": t}, ..}` under [`Profile::mcp`](crate::Profile::mcp),
    /// `{"workDoneToken": t, ..}` under [`Profile::lsp`](crate::Profile::lsp). Members the params
    /// have already stay (a `_meta` object gains the token; a token already there is replaced).
    ///
    /// For a token made by [`Handle::progress`]; encoding fails for another, for params that are
    /// not an object, and on a connection whose progress protocol has no such place
    /// ([`ProgressProtocol::request_token`](crate::ProgressProtocol::request_token) is `None`, as with plain JSON-RPC).
    /// [`Handle::request_with_progress`] does the whole call.
    pub fn in_params<'a, P: Serialize + ?Sized>(&'a self, params: &'a P) -> TokenInParams<'a, P> {
        TokenInParams { params, token: self }
    }
}

impl<P: Serialize + ?Sized> Serialize for TokenInParams<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(binding) = self.token.binding() else {
            return Err(S::Error::custom(
                "a progress token put in params must come from `Handle::progress` (it knows where its connection \
                 carries it)",
            ));
        };
        let protocol = &binding.state.protocol;
        let Some(path) = protocol.request_token.as_deref() else {
            return Err(S::Error::custom(format_args!(
                "this connection's progress protocol ({}) has no place for a request's token inside its params \
                 object; use `Profile::mcp()` or `Profile::lsp()`, set `ProgressProtocol::request_token`, or pass \
                 the progress as a param of its own (params = \"positional\" or \"named\")",
                protocol.method
            )));
        };
        // Progress calls only: the params go through a `Value` once to make room for the token.
        let mut value = serde_json::to_value(self.params).map_err(S::Error::custom)?;
        insert(&mut value, path, Value::Null).map_err(S::Error::custom)?;
        // The token itself is written by the serializer of the request, which binds it to the call.
        let path: Vec<&str> = path.split('.').collect();
        WithToken { value: &value, path: &path, token: self.token }.serialize(serializer)
    }
}

/// `value` with `token` at `path` (whose objects exist: see [`insert`]).
struct WithToken<'a> {
    value: &'a Value,
    path: &'a [&'a str],
    token: &'a ProgressToken,
}

impl Serialize for WithToken<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (Some((first, rest)), Value::Object(map)) = (self.path.split_first(), self.value) else {
            return self.token.serialize(serializer);
        };
        let mut out = serializer.serialize_map(Some(map.len()))?;
        for (key, value) in map {
            if key == first {
                out.serialize_entry(key, &WithToken { value, path: rest, token: self.token })?;
            } else {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }
}

/// Put `token` at `path` (members separated by `.`) in `params`, making the objects on the way.
fn insert(params: &mut Value, path: &str, token: Value) -> Result<(), String> {
    if params.is_null() {
        *params = Value::Object(Map::new());
    }
    let mut at = match params {
        Value::Object(map) => map,
        other => return Err(format!("a request with a progress token in its params needs an object, not {other}")),
    };
    let mut members = path.split('.').peekable();
    while let Some(member) = members.next() {
        if members.peek().is_none() {
            at.insert(member.to_owned(), token);
            return Ok(());
        }
        let next = at.entry(member.to_owned()).or_insert_with(|| Value::Object(Map::new()));
        if next.is_null() {
            *next = Value::Object(Map::new());
        }
        at = match next {
            Value::Object(map) => map,
            other => {
                return Err(format!(
                    "the params' `{member}` is {other}, not an object that can carry the progress token"
                ));
            }
        };
    }
    Err("an empty path for the progress token".into())
}

/// The token at `path` in `params`, if it is there and not `null`.
pub(crate) fn token_at(params: &RawValue, path: &str) -> Option<ProgressToken> {
    let mut at: Cow<'_, RawValue> = Cow::Borrowed(params);
    for member in path.split('.') {
        let next: &RawValue = {
            let map: HashMap<Cow<'_, str>, &RawValue> = serde_json::from_str(at.get()).ok()?;
            map.get(member)?
        };
        at = Cow::Owned(next.to_owned());
    }
    serde_json::from_str::<Option<ProgressToken>>(at.get()).ok().flatten()
}

impl Request {
    /// The progress token this request carries in its params object, where the connection's
    /// profile says ([`ProgressProtocol::request_token`](crate::ProgressProtocol::request_token): MCP's `_meta.progressToken`, LSP's
    /// `workDoneToken`); `None` when it carries none. Hand it to [`Progress::for_request`](super::Progress::for_request).
    pub fn progress_token(&self) -> Option<ProgressToken> {
        request_token(&self.peer(), self.params())
    }
}

impl crate::handler::RequestStart<'_> {
    /// [`Request::progress_token`], read before the handler's future is made.
    pub fn progress_token(&self) -> Option<ProgressToken> {
        request_token(&self.peer(), self.params())
    }
}

/// The progress token in a request's `params`, where the profile of the connection `peer` says.
fn request_token(peer: &Handle, params: Option<&RawValue>) -> Option<ProgressToken> {
    let state = peer.builtin::<super::ProgressState>();
    let path = state.protocol.request_token.as_deref()?;
    token_at(params?, path)
}

impl Handle {
    /// Call `method` with a progress token in its params object, where the connection's profile
    /// carries it (MCP's `_meta.progressToken`, LSP's `workDoneToken`), and hand each report to
    /// `on_report` (decoded into `T`); every report read before the answer is handed over
    /// before this returns.
    ///
    /// ```
    /// use jsonrpc_duplex_core::{CallOptions, Connection, ErrorObject, Profile, Progress, Request, Responder, Router, transport::memory};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Step { progress: u32, total: u32 }
    ///
    /// let server = Router::new().request_raw("tools/call", |request: Request, reply: Responder| async move {
    ///     // The token the caller put in `_meta.progressToken`.
    ///     let progress = Progress::<Step>::for_request(&request.context(), request.progress_token());
    ///     for step in 1..=3 {
    ///         let _ = progress.report(Step { progress: step, total: 3 }).await;
    ///     }
    ///     reply.ok("done");
    /// });
    /// let (client, _server) = memory::pair(
    ///     Connection::builder().profile(Profile::mcp()),
    ///     Connection::builder().profile(Profile::mcp()).serve(server),
    /// );
    /// let mut seen = Vec::new();
    /// let params = serde_json::json!({ "name": "index" });
    /// let answer: String = client
    ///     .handle()
    ///     .request_with_progress("tools/call", &params, CallOptions::new(), |s: Step| seen.push(s.progress))
    ///     .await?;
    /// assert_eq!((answer.as_str(), seen), ("done", vec![1, 2, 3]));
    /// # Ok(()) }
    /// ```
    pub async fn request_with_progress<R, T, P>(
        &self,
        method: &str,
        params: &P,
        options: CallOptions,
        on_report: impl FnMut(T),
    ) -> Result<R, Error>
    where
        R: DeserializeOwned,
        T: DeserializeOwned,
        P: Serialize + ?Sized,
    {
        let (token, receiver) = self.progress::<T>();
        let params = token.in_params(params);
        let call = self.request_raw(method, &params, options);
        let raw = receiver.drive(call, on_report).await?;
        serde_json::from_str(raw.get()).map_err(Error::Deserialize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_where_the_path_says_keeping_what_is_there() {
        let mut params = serde_json::json!({"name": "x", "_meta": {"other": 1}});
        insert(&mut params, "_meta.progressToken", Value::from(7)).unwrap();
        assert_eq!(params, serde_json::json!({"name": "x", "_meta": {"other": 1, "progressToken": 7}}));
        let mut params = serde_json::json!({"_meta": null});
        insert(&mut params, "_meta.progressToken", Value::from(1)).unwrap();
        assert_eq!(params, serde_json::json!({"_meta": {"progressToken": 1}}));
        let mut params = Value::Null;
        insert(&mut params, "workDoneToken", Value::from(2)).unwrap();
        assert_eq!(params, serde_json::json!({"workDoneToken": 2}));
        assert!(insert(&mut serde_json::json!([1]), "workDoneToken", Value::from(2)).is_err());
        assert!(insert(&mut serde_json::json!({"_meta": 3}), "_meta.progressToken", Value::from(2)).is_err());
    }

    #[test]
    fn the_token_is_read_back_at_the_path() {
        let raw = RawValue::from_string(r#"{"name":"x","_meta":{"progressToken":"abc"}}"#.into()).unwrap();
        assert_eq!(token_at(&raw, "_meta.progressToken"), Some(ProgressToken::from("abc")));
        let raw = RawValue::from_string(r#"{"_meta":{"progressToken":null}}"#.into()).unwrap();
        assert_eq!(token_at(&raw, "_meta.progressToken"), None);
        let raw = RawValue::from_string(r#"{"workDoneToken":5}"#.into()).unwrap();
        assert_eq!(token_at(&raw, "workDoneToken"), Some(ProgressToken::from(5u64)));
        assert_eq!(token_at(&raw, "_meta.progressToken"), None);
    }
}
