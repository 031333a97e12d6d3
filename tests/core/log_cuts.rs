//! A peer cannot write log lines of its choosing or length: every line that quotes its input (an
//! id, a method name, params, an error that quotes them) is cut at the trace limit and passes
//! the trace redactor.

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router};
use serde_json::json;
use support::logs::capture_logs;
use support::raw_peer::pair;

const MEGABYTE: usize = 1 << 20;

fn server() -> jsonrpc_duplex::Builder {
    Connection::builder()
        .serve(
            Router::new()
                .method("add", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a + b) })
                .notification("note", |(_n,): (u32,), _ctx| async {}),
        )
        .trace_redactor(|_, text| text.replace("secret", "[redacted]"))
}

/// The longest line logged, and the whole log.
fn longest_line(logs: &support::logs::Logs) -> (usize, String) {
    let text = logs.text();
    (text.lines().map(str::len).max().unwrap_or(0), text)
}

#[tokio::test]
async fn megabytes_of_peer_input_make_lines_of_a_few_kilobytes_and_pass_the_redactor() {
    let (_guard, logs) = capture_logs();
    let (_conn, mut peer) = pair(server(), Framing::ContentLength);
    let big = format!("secret{}", "x".repeat(MEGABYTE));
    for message in [
        // An answer to an id we never sent.
        json!({"jsonrpc":"2.0","id":big,"result":1}),
        // A cancellation without a usable id.
        json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":[big]}}),
        // An id that is no id, and a method that is no string.
        json!({"jsonrpc":"2.0","id":{"a":big},"method":"add"}),
        // An unknown method, and a notification whose params do not decode (serde quotes them).
        json!({"jsonrpc":"2.0","id":1,"method":big}),
        json!({"jsonrpc":"2.0","method":"note","params":[big]}),
        json!({"jsonrpc":"2.0","method":big}),
        // A stream abort without a usable token.
        json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[big]}),
    ] {
        peer.send_json(message).await;
    }
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"add","params":[1,2]}"#).await;
    // Answers: -32601 for the unknown method, then 3.
    let mut answers = Vec::new();
    while answers.len() < 3 {
        answers.push(peer.recv().await);
    }
    assert_eq!(answers.last(), Some(&json!({"jsonrpc":"2.0","id":2,"result":3})), "{answers:?}");
    peer.expect_silence(Duration::from_millis(20)).await;
    let (longest, text) = longest_line(&logs);
    assert!(longest < 4096 + 512, "a log line of {longest} bytes");
    for expected in ["answer to an id we never sent", "cancellation without a usable id", "invalid message"] {
        assert!(text.contains(expected), "no {expected:?} in the log:\n{}", &text[..text.len().min(20_000)]);
    }
    assert!(!text.contains("secret"), "the redactor saw every quote");
    assert!(text.contains("[redacted]"), "quotes are there, redacted");
    assert!(text.contains("more bytes)"), "a cut says how much was left out");
}
