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

/// Parse one frame exactly as the connection does and return how many messages it held (`None`
/// for a parse error, answered `-32700`). An entry point for fuzzing; not a stable API.
#[doc(hidden)]
pub fn __fuzz_parse(frame: &[u8]) -> Option<usize> {
    match parse_frame(frame, crate::connection::DEFAULT_MAX_BATCH_LEN) {
        Ok(ParsedMessage::Single(_)) => Some(1),
        Ok(ParsedMessage::Batch(items)) => Some(items.len()),
        Err(_) => None,
    }
}
