//! Entry points for the fuzz targets (`fuzz/`), compiled only under `--cfg fuzzing` (which
//! cargo-fuzz sets): not a public API, and not covered by semver.

use crate::message::{ParsedMessage, parse_frame};

/// Parse one frame exactly as the connection does and return how many messages it held (`None`
/// for a parse error, answered `-32700`).
pub fn parse(frame: &[u8]) -> Option<usize> {
    match parse_frame(frame, crate::connection::DEFAULT_MAX_BATCH_LEN) {
        Ok(ParsedMessage::Single(_)) => Some(1),
        Ok(ParsedMessage::Batch(items)) => Some(items.len()),
        Err(_) => None,
    }
}
