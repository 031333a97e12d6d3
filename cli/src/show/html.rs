//! `show --html`: one self-contained page (no network fetches: the script, the styles and the
//! trace are all inline) with a timeline of both sides, each request a span from its sending to
//! its answer and each notification a tick, a message's JSON on click, and a filter box.
//!
//! The pairing is done here, by the same [`Conversation`] as the text views; the page's script
//! (`page.js`) only draws.

use crate::error::CliError;
use std::path::Path;

use serde::Serialize;

use crate::conversation::{Conversation, EventKind};
use crate::trace::Side;
use crate::trace::read::Trace;

const TEMPLATE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// What the page draws.
#[derive(Serialize)]
struct Page {
    title: String,
    started: Option<String>,
    command: Option<Vec<String>>,
    tool: Option<String>,
    /// Seconds from the first record to the last.
    duration: f64,
    messages: Vec<Message>,
    spans: Vec<Span>,
}

/// One event.
#[derive(Serialize)]
struct Message {
    t: f64,
    from: Option<Side>,
    /// `request`, `notification`, `result`, `error`, `unparsed`, `stderr`, `note`, `exit`.
    kind: &'static str,
    id: Option<String>,
    method: Option<String>,
    size: u64,
    text: String,
    note: Option<String>,
    latency: Option<f64>,
    error: Option<String>,
    /// The span this message starts or ends.
    span: Option<usize>,
}

/// One request, from its sending to its answer.
#[derive(Serialize)]
struct Span {
    /// Who sent the request.
    from: Side,
    id: String,
    method: String,
    start: f64,
    /// `None`: never answered.
    end: Option<f64>,
    /// `ok`, `error`, `cancelled` or `open`.
    status: &'static str,
    request: usize,
    answer: Option<usize>,
}

fn kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Request => "request",
        EventKind::Notification => "notification",
        EventKind::Result => "result",
        EventKind::Error => "error",
        EventKind::Unparsed => "unparsed",
        EventKind::Stderr => "stderr",
        EventKind::Note => "note",
        EventKind::Exit => "exit",
    }
}

fn page(name: &str, trace: &Trace) -> Page {
    let header = trace.header();
    let mut conversation = Conversation::new();
    let mut messages: Vec<Message> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    // Message index of a request → its span.
    let mut span_of: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut duration: f64 = 0.0;
    for record in &trace.records {
        for event in conversation.feed(record) {
            duration = duration.max(event.t);
            let index = messages.len();
            let mut span = None;
            match (event.kind, event.from) {
                (EventKind::Request, Some(from)) => {
                    span = Some(spans.len());
                    span_of.insert(event.index, spans.len());
                    spans.push(Span {
                        from,
                        id: event.id.clone().unwrap_or_default(),
                        method: event.method.clone().unwrap_or_default(),
                        start: event.t,
                        end: None,
                        status: "open",
                        request: index,
                        answer: None,
                    });
                }
                (EventKind::Result | EventKind::Error, _) => {
                    if let Some(&s) = event.request.and_then(|r| span_of.get(&r)) {
                        span = Some(s);
                        let answered = &mut spans[s];
                        answered.end = Some(event.t);
                        answered.answer = Some(index);
                        answered.status = match (event.cancelled, event.kind) {
                            (true, _) => "cancelled",
                            (false, EventKind::Error) => "error",
                            _ => "ok",
                        };
                    }
                }
                _ => {}
            }
            messages.push(Message {
                t: event.t,
                from: event.from,
                kind: kind_name(event.kind),
                id: event.id,
                method: event.method,
                size: event.size,
                text: event.text,
                note: event.note,
                latency: event.latency,
                error: event.error.map(|e| format!("{} {}", e.code, e.message)),
                span,
            });
        }
    }
    Page {
        title: name.to_owned(),
        started: header.and_then(|h| h.started.clone()),
        command: header.and_then(|h| h.command.clone()),
        tool: header.and_then(|h| h.tool.clone()),
        duration,
        messages,
        spans,
    }
}

/// The page for `trace` (read from `source`) as HTML text.
fn render(source: &Path, trace: &Trace) -> Result<String, CliError> {
    let name = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let data = serde_json::to_string(&page(&name, trace)).map_err(CliError::EncodePage)?;
    // `<` only occurs inside JSON strings, where `\u003c` means the same; this way no text of a
    // message can end the script element (`</script>`) or open a comment in it.
    let data = data.replace('<', "\\u003c");
    Ok(TEMPLATE
        .replace("{{TITLE}}", &escape_html(&name))
        .replace("{{STYLE}}", STYLE)
        .replace("{{SCRIPT}}", SCRIPT)
        .replace("{{DATA}}", &data))
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Write the page for `trace` (read from `source`) to `out`.
pub(crate) fn write(source: &Path, trace: &Trace, out: &Path) -> Result<(), CliError> {
    let html = render(source, trace)?;
    std::fs::write(out, html).map_err(|source| CliError::WriteFile { path: out.to_owned(), source })?;
    eprintln!("jrpc show: wrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Kind, Record};
    use serde_json::value::RawValue;

    fn msg(t: f64, from: Side, json: &str) -> Record {
        Record {
            kind: Kind::Message,
            t: Some(t),
            from: Some(from),
            message: Some(RawValue::from_string(json.to_owned()).unwrap()),
            ..Record::default()
        }
    }

    #[test]
    fn message_text_cannot_close_the_script_element() {
        let trace = Trace {
            records: vec![
                msg(
                    0.0,
                    Side::Client,
                    r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["</script><script>alert(1)</script>"]}"#,
                ),
                msg(0.5, Side::Server, r#"{"jsonrpc":"2.0","id":1,"result":"<!-- x"}"#),
            ],
        };
        let html = render(Path::new("a<b>.jsonl"), &trace).unwrap();
        assert_eq!(html.matches("</script>").count(), 2, "the page's own two script elements only");
        assert!(!html.contains("<!-- x"));
        assert!(html.contains("<title>jrpc: a&lt;b&gt;.jsonl</title>"));
        let page = page("t", &trace);
        assert_eq!(page.spans.len(), 1);
        assert_eq!((page.spans[0].start, page.spans[0].end, page.spans[0].status), (0.0, Some(0.5), "ok"));
        assert_eq!(page.messages[1].span, Some(0));
    }
}
