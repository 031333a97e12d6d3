//! `show --summary`: per method, how often, how many errors, how fast, how many bytes.

use std::collections::BTreeMap;

use super::Filter;
use crate::conversation::{Conversation, EventKind};
use crate::time::format_latency;
use crate::trace::Side;
use crate::trace::read::Trace;

#[derive(Default)]
struct Requests {
    count: u64,
    errors: u64,
    cancelled: u64,
    latencies: Vec<f64>,
    bytes: u64,
}

#[derive(Default)]
struct Notifications {
    count: u64,
    bytes: u64,
}

/// The rows of a summary, keyed by (who sent the request or notification, method).
#[derive(Default)]
struct Summary {
    requests: BTreeMap<(Side, String), Requests>,
    notifications: BTreeMap<(Side, String), Notifications>,
    unparsed: u64,
}

fn summarize(trace: &Trace, filter: &Filter) -> Summary {
    let mut conversation = Conversation::new();
    let mut summary = Summary::default();
    for record in &trace.records {
        for event in conversation.feed(record) {
            if !filter.method_matches(&event) {
                continue;
            }
            let (Some(from), Some(method)) = (event.from, event.method.clone()) else {
                summary.unparsed += u64::from(event.kind == EventKind::Unparsed);
                continue;
            };
            match event.kind {
                EventKind::Request => {
                    let row = summary.requests.entry((from, method)).or_default();
                    row.count += 1;
                    row.bytes += event.size;
                }
                EventKind::Result | EventKind::Error => {
                    let row = summary.requests.entry((from.peer(), method)).or_default();
                    row.bytes += event.size;
                    row.errors += u64::from(event.kind == EventKind::Error);
                    row.cancelled += u64::from(event.cancelled);
                    row.latencies.extend(event.latency);
                }
                EventKind::Notification => {
                    let row = summary.notifications.entry((from, method)).or_default();
                    row.count += 1;
                    row.bytes += event.size;
                }
                _ => {}
            }
        }
    }
    summary
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

fn bytes(n: u64) -> String {
    match n {
        n if n < 10 * 1024 => format!("{n} B"),
        n if n < 10 * 1024 * 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0)),
    }
}

fn from(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

/// The summary as text.
fn render(summary: Summary) -> String {
    let mut lines = Vec::new();
    let width = summary.requests.keys().chain(summary.notifications.keys()).map(|(_, m)| m.len()).max().unwrap_or(0);
    let width = width.max(13);
    if !summary.requests.is_empty() {
        lines.push(format!(
            "{:<width$}  {:<6}  {:>5}  {:>6}  {:>9}  {:>10}  {:>9}  {:>9}  {:>10}",
            "REQUESTS", "from", "count", "errors", "cancelled", "unanswered", "p50", "p99", "bytes"
        ));
        for ((side, method), mut row) in summary.requests {
            row.latencies.sort_by(f64::total_cmp);
            let latency = |p| percentile(&row.latencies, p).map(format_latency).unwrap_or_else(|| "-".into());
            let unanswered = row.count.saturating_sub(row.latencies.len() as u64);
            lines.push(format!(
                "{method:<width$}  {:<6}  {:>5}  {:>6}  {:>9}  {unanswered:>10}  {:>9}  {:>9}  {:>10}",
                from(side),
                row.count,
                row.errors,
                row.cancelled,
                latency(0.5),
                latency(0.99),
                bytes(row.bytes)
            ));
        }
    }
    if !summary.notifications.is_empty() {
        if !lines.is_empty() {
            lines.push(String::new());
        }
        lines.push(format!("{:<width$}  {:<6}  {:>5}  {:>10}", "NOTIFICATIONS", "from", "count", "bytes"));
        for ((side, method), row) in summary.notifications {
            lines.push(format!("{method:<width$}  {:<6}  {:>5}  {:>10}", from(side), row.count, bytes(row.bytes)));
        }
    }
    if summary.unparsed > 0 {
        lines.push(String::new());
        lines.push(format!("{} messages are not JSON-RPC (`jrpc show --errors` lists them)", summary.unparsed));
    }
    if lines.is_empty() {
        lines.push("no messages".into());
    }
    lines.join("\n")
}

/// Print the summary of `trace`.
pub(crate) fn print(trace: &Trace, filter: &Filter) {
    println!("{}", render(summarize(trace, filter)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), Some(50.0));
        assert_eq!(percentile(&values, 0.99), Some(99.0));
        assert_eq!(percentile(&[3.0], 0.99), Some(3.0));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
