//! Durations on the command line (`100ms`, `2s`) and in views, and RFC 3339 timestamps.
//!
//! Timestamps are `humantime`'s. The parser stays ours: `humantime::parse_duration` takes no
//! fraction (`1.5s`) and no bare number (`2`, seconds), which `--timeout` has always accepted.

use std::time::{Duration, SystemTime};

use crate::error::CliError;

/// Parse `250ms`, `2s`, `1.5s`, `500us`, `1m`, `1h` (a bare number is seconds).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, CliError> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| CliError::NotADuration { text: text.to_owned() })?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(CliError::UnknownUnit { text: text.to_owned(), unit: other.to_owned() }),
    };
    Duration::try_from_secs_f64(value * scale)
        .map_err(|source| CliError::DurationRange { text: text.to_owned(), source })
}

/// A latency for people: `0.42ms`, `153.2ms`, `2.35s`.
pub(crate) fn format_latency(seconds: f64) -> String {
    let ms = seconds * 1e3;
    if ms < 10.0 {
        format!("{ms:.2}ms")
    } else if ms < 1000.0 {
        format!("{ms:.1}ms")
    } else {
        format!("{seconds:.2}s")
    }
}

/// `2026-11-01T00:47:54.123456Z`.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_micros(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(matches!(parse_duration("fast"), Err(CliError::NotADuration { .. })));
        assert!(matches!(parse_duration("3 weeks"), Err(CliError::UnknownUnit { unit, .. }) if unit == "weeks"));
        assert!(matches!(parse_duration(&"9".repeat(400)), Err(CliError::DurationRange { .. })));
    }

    #[test]
    fn latencies_read_well() {
        assert_eq!(format_latency(0.00042), "0.42ms");
        assert_eq!(format_latency(0.1532), "153.2ms");
        assert_eq!(format_latency(2.345), "2.35s");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        use std::time::UNIX_EPOCH;
        let at = UNIX_EPOCH + Duration::from_micros(1_793_494_074_123_456);
        assert_eq!(rfc3339(at), "2026-11-01T00:47:54.123456Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000000Z");
    }
}
