//! Wire types: ids, error objects, and the one-pass parse and encode of JSON-RPC 2.0 messages.

mod encode;
mod error;
mod id;
pub(crate) mod names;
mod parse;

pub use error::{ErrorObject, codes};
pub use id::{Id, IdNumber, NotANumber};

pub(crate) use encode::{encode_notification, encode_request, encode_response, encode_response_json};
pub(crate) use parse::{Incoming, ParsedMessage, member, parse_frame};
