//! The JSON-RPC error object and the codes this crate uses.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Well-known error codes.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error (also: a handler panicked or dropped its reply unanswered).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Generic application failure (StreamJsonRpc's `InvocationError`).
    pub const SERVER_ERROR: i64 = -32000;
    /// An enumerator (stream) token, or another marshaled object, that this side does not know
    /// (StreamJsonRpc's `NoMarshaledObjectFound`; LSP's `UnknownErrorCode` has the same number).
    pub const NO_MARSHALED_OBJECT: i64 = -32001;
    /// The server refused a request because too many are in flight.
    pub const SERVER_BUSY: i64 = -32005;
    /// The request was cancelled (LSP `RequestCancelled`, StreamJsonRpc `RequestCanceled`).
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// A call this side made on the request's behalf got no answer in time (the MCP SDKs'
    /// `RequestTimeout`). The same number as [`NO_MARSHALED_OBJECT`], which only answers to
    /// `$/enumerator/*` requests carry.
    pub const REQUEST_TIMEOUT: i64 = -32001;
    /// The connection a call this side made on the request's behalf was lost (the MCP SDKs'
    /// `ConnectionClosed`; the generic [`SERVER_ERROR`]).
    pub const CONNECTION_CLOSED: i64 = -32000;
}

/// A JSON-RPC error object: `{"code", "message", "data"?}`.
///
/// `data` stays raw JSON; decode it with [`ErrorObject::data_as`]. It decodes from a JSON object
/// only (an array such as `[-32050, "x"]` is not an error object), with `code` and `message`
/// present once each; other members are ignored.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional structured detail; `"data": null` is data (the raw `null`, sent on as it came),
    /// not an absent member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl<'de> Deserialize<'de> for ErrorObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = ErrorObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an error object {\"code\", \"message\", \"data\"?}")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<ErrorObject, M::Error> {
                use serde::de::Error;
                let (mut code, mut message, mut data) = (None, None, None);
                while let Some(key) = map.next_key::<Member>()? {
                    match key {
                        Member::Code if code.is_some() => return Err(M::Error::duplicate_field("code")),
                        Member::Message if message.is_some() => return Err(M::Error::duplicate_field("message")),
                        Member::Data if data.is_some() => return Err(M::Error::duplicate_field("data")),
                        Member::Code => code = Some(map.next_value()?),
                        Member::Message => message = Some(map.next_value()?),
                        Member::Data => data = Some(map.next_value()?),
                        Member::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(ErrorObject {
                    code: code.ok_or_else(|| M::Error::missing_field("code"))?,
                    message: message.ok_or_else(|| M::Error::missing_field("message"))?,
                    data,
                })
            }
        }
        d.deserialize_map(Fields)
    }
}

/// A member name of an error object.
enum Member {
    Code,
    Message,
    Data,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Member, E> {
                Ok(match v {
                    "code" => Member::Code,
                    "message" => Member::Message,
                    "data" => Member::Data,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl ErrorObject {
    /// An error with a code and a message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// Attach `data` (serialized now). Data that fails to serialize is left out and the failure
    /// noted in the message, so building an error never fails.
    #[must_use]
    pub fn with_data(mut self, data: impl Serialize) -> Self {
        match serde_json::value::to_raw_value(&data) {
            Ok(raw) => self.data = Some(raw),
            Err(e) => self.message = format!("{} (error data could not be serialized: {e})", self.message),
        }
        self
    }

    /// Attach raw JSON `data`.
    #[must_use]
    pub fn with_raw_data(mut self, data: Box<RawValue>) -> Self {
        self.data = Some(data);
        self
    }

    /// Decode `data` into a type.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.data.as_ref().map(|d| serde_json::from_str(d.get()))
    }

    /// `-32700`.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(codes::PARSE_ERROR, format!("Parse error: {detail}"))
    }
    /// `-32600`.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(codes::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }
    /// `-32601`, naming the method (its first 256 bytes: the name is the peer's).
    pub fn method_not_found(method: &str) -> Self {
        Self::new(codes::METHOD_NOT_FOUND, format!("Method not found: {}", crate::quote::cut(method, 256)))
    }
    /// `-32602`, with what was wrong.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(codes::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }
    /// `-32603`.
    pub fn internal_error(detail: impl fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }
    /// `-32001` "This remote object no longer exists." (StreamJsonRpc's words): a stream token
    /// that is unknown, finished or aborted.
    pub fn no_marshaled_object() -> Self {
        Self::new(codes::NO_MARSHALED_OBJECT, "This remote object no longer exists.")
    }
    /// `-32800`.
    pub fn request_cancelled() -> Self {
        Self::new(codes::REQUEST_CANCELLED, "Request cancelled")
    }
    /// `-32001`, saying what timed out.
    pub fn request_timeout(detail: impl fmt::Display) -> Self {
        Self::new(codes::REQUEST_TIMEOUT, format!("Request timed out: {detail}"))
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)?;
        if let Some(d) = &self.data {
            write!(f, ", data: {}", d.get())?;
        }
        Ok(())
    }
}

impl std::error::Error for ErrorObject {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_object_is_an_object_and_nothing_else() {
        let e: ErrorObject = serde_json::from_str(r#"{"message":"m","code":-1,"data":null,"x":[1]}"#).unwrap();
        assert_eq!((e.code, e.message.as_str(), e.data.as_ref().map(|d| d.get())), (-1, "m", Some("null")));
        let e: ErrorObject = serde_json::from_str(r#"{"code":-2,"message":"m"}"#).unwrap();
        assert!(e.data.is_none());
        for bad in [
            r#"[-32050,"x"]"#,
            r#"[-32050,"x",null]"#,
            r#"{"code":-1}"#,
            r#"{"message":"m"}"#,
            r#"{"code":-1,"message":"m","code":-2}"#,
            r#"{"code":"-1","message":"m"}"#,
            r#""error""#,
        ] {
            assert!(serde_json::from_str::<ErrorObject>(bad).is_err(), "{bad}");
        }
        let from_value: ErrorObject = serde_json::from_value(serde_json::json!({"code": 5, "message": "v"})).unwrap();
        assert_eq!(from_value, ErrorObject::new(5, "v"));
    }
}
