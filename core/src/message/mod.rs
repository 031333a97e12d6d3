//! Wire types: ids, error objects, and the one-pass parse and encode of JSON-RPC 2.0 messages.

pub(crate) mod bind;
mod encode;
mod error;
mod id;
mod parse;
mod scan;

pub use error::{ErrorObject, codes};
pub use id::{Id, IdNumber, NotANumber};

pub(crate) use encode::{encode_notification, encode_request, encode_response, encode_response_json};
#[cfg(fuzzing)]
pub(crate) use parse::parse_frame;
pub(crate) use parse::{Incoming, ParsedMessage, TraceMembers, member, owned_params, parse_frame_keeping};
