//! `jrpc show`: the conversation view of a recorded session with the reference peer, its filters
//! (`--method`, `--errors`, `--slower-than`), the per-method summary, `--follow` on a trace that
//! is still being written, and traces that are not what they should be.

use std::process::Stdio;

use crate::support;
use crate::support::{Scratch, assert_contains, frame, interop, jrpc_command, run};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

async fn show(args: &[&str], trace: &std::path::Path) -> support::Output {
    let mut command = jrpc_command();
    command.arg("show").args(args).arg(trace).env("COLUMNS", "200");
    run(command, b"").await
}

/// The lines of a view without their times (which differ from run to run).
fn untimed(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let l = l.trim_start();
            let l = l.split_once(' ').map_or(l, |(_, rest)| rest);
            // Latencies vary too.
            match (l.find(" ("), l.find("ms)")) {
                (Some(a), Some(b)) if a < b => format!("{}{}", &l[..a], &l[b + 3..]),
                _ => l.to_owned(),
            }
        })
        .collect()
}

#[tokio::test]
async fn the_conversation_and_its_filters() {
    let scratch = Scratch::new("show");
    let trace = scratch.path("trace.jsonl");
    support::reference_session(&["--out".as_ref(), trace.as_os_str()]).await;

    let all = show(&[], &trace).await;
    assert_eq!(all.code(), Some(0), "{all:?}");
    let lines = untimed(&all.stdout);
    assert_eq!(lines.len(), 18, "{}", all.stdout);
    assert_eq!(lines[0], r#"C→S req    #0 add {"jsonrpc":"2.0","id":0,"method":"add","params":{"a":2,"b":40}}"#);
    assert_eq!(lines[1], r#"S→C ok     #0 add {"jsonrpc":"2.0","id":0,"result":42}"#);
    assert_eq!(lines[3], r#"S→C ERROR  #1 fail -32001 "requested failure""#);

    let errors = show(&["--errors"], &trace).await;
    assert_eq!(
        untimed(&errors.stdout),
        [
            r#"C→S req    #1 fail {"jsonrpc":"2.0","id":1,"method":"fail","params":{"why":"testing"}}"#,
            r#"S→C ERROR  #1 fail -32001 "requested failure""#,
            r#"C→S req    #4 slow {"jsonrpc":"2.0","id":4,"method":"slow","params":{"ms":30000}}"#,
            r#"S→C ERROR  #4 slow [cancelled] -32800 "Request cancelled""#,
        ]
    );

    let methods = show(&["--method", "c*"], &trace).await;
    let methods = untimed(&methods.stdout);
    assert_eq!(methods.len(), 4, "{methods:?}");
    assert!(methods.iter().all(|l| l.contains(" #2 callBack") || l.contains(" #0 client/ask")), "{methods:?}");

    let none = show(&["--slower-than", "1h"], &trace).await;
    assert_eq!((none.code(), none.stdout.as_str()), (Some(0), ""));
    let answers = show(&["--slower-than", "0ms", "--method", "notifyMe"], &trace).await;
    assert_eq!(
        untimed(&answers.stdout),
        [
            r#"C→S req    #3 notifyMe {"jsonrpc":"2.0","id":3,"method":"notifyMe","params":{"count":2}}"#,
            r#"S→C ok     #3 notifyMe {"jsonrpc":"2.0","id":3,"result":2}"#,
        ]
    );
}

#[tokio::test]
async fn the_summary_counts_per_method() {
    let scratch = Scratch::new("summary");
    let trace = scratch.path("trace.jsonl");
    support::reference_session(&["--out".as_ref(), trace.as_os_str()]).await;
    let out = show(&["--summary"], &trace).await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    let rows: Vec<Vec<&str>> = out.stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    let row = |name: &str| rows.iter().find(|r| r.first() == Some(&name)).unwrap_or_else(|| panic!("no {name} row"));
    // method, from, count, errors, cancelled, unanswered, p50, p99, bytes
    assert_eq!(rows[0], ["REQUESTS", "from", "count", "errors", "cancelled", "unanswered", "p50", "p99", "bytes"]);
    assert_eq!(&row("add")[1..6], ["client", "1", "0", "0", "0"]);
    assert_eq!(&row("fail")[1..6], ["client", "1", "1", "0", "0"]);
    assert_eq!(&row("slow")[1..6], ["client", "1", "1", "1", "0"]);
    assert_eq!(&row("client/ask")[1..6], ["server", "1", "0", "0", "0"]);
    assert_eq!(row("add")[8..], ["99", "B"], "request and answer bytes");
    assert_eq!(&row("tick")[1..3], ["server", "2"]);
    assert_eq!(&row("$/cancelRequest")[1..3], ["client", "1"]);
}

/// `--follow` shows what a running tap appends, and stops by itself when the server's exit is
/// recorded.
#[tokio::test]
async fn follow_shows_a_trace_as_it_grows() {
    let scratch = Scratch::new("follow");
    let trace = scratch.path("trace.jsonl");
    let mut tap = jrpc_command()
        .arg("tap")
        .arg("--out")
        .arg(&trace)
        .arg("--")
        .arg(interop::example("conformance_peer"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("jrpc tap starts");
    let mut tap_in = tap.stdin.take().expect("piped");
    let mut tap_out = tap.stdout.take().expect("piped");
    // The tap writes the header before it starts the server.
    tokio::time::timeout(support::RUN, async {
        while !std::fs::read_to_string(&trace).is_ok_and(|t| t.ends_with('\n')) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the trace's header appears");
    let mut follow = jrpc_command()
        .arg("show")
        .arg("--follow")
        .arg(&trace)
        .stdout(Stdio::piped())
        .spawn()
        .expect("jrpc show --follow starts");
    let mut lines = BufReader::new(follow.stdout.take().expect("piped")).lines();

    tap_in.write_all(&frame(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#)).await.expect("request");
    let answer = frame(r#"{"jsonrpc":"2.0","id":1,"result":3}"#);
    let mut got = vec![0u8; answer.len()];
    tokio::time::timeout(support::RUN, tap_out.read_exact(&mut got)).await.expect("an answer in time").expect("read");
    assert_eq!(got, answer);
    let seen = tokio::time::timeout(support::RUN, async {
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await.expect("show's output") {
            let done = line.contains("S→C ok     #1 add");
            seen.push(line);
            if done {
                return seen;
            }
        }
        panic!("show --follow ended early: {seen:?}");
    })
    .await
    .expect("show --follow shows the answer while the tap runs");
    assert!(
        seen[0].contains(r#"C→S req    #1 add {"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#),
        "{seen:?}"
    );

    // The client goes away, the peer exits, the tap records it, and show stops.
    drop(tap_in);
    let status = tokio::time::timeout(support::RUN, tap.wait()).await.expect("tap exits").expect("wait");
    assert_eq!(status.code(), Some(0));
    let rest = tokio::time::timeout(support::RUN, async {
        let mut rest = Vec::new();
        while let Some(line) = lines.next_line().await.expect("show's output") {
            rest.push(line);
        }
        rest
    })
    .await
    .expect("show --follow ends after the exit record");
    assert!(rest.last().is_some_and(|l| l.ends_with("exit   the server exited with code 0")), "{rest:?}");
    let status = tokio::time::timeout(support::RUN, follow.wait()).await.expect("show exits").expect("wait");
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn traces_that_are_not_traces_are_refused_with_their_line() {
    let scratch = Scratch::new("bad-traces");
    let not_json = scratch.path("not-json.jsonl");
    std::fs::write(&not_json, "{\"type\":\"header\",\"format\":\"jsonrpc-trace\",\"version\":1}\nnonsense\n{\"type\":\"note\",\"t\":1,\"text\":\"x\"}\n").expect("write");
    let out = show(&["--summary"], &not_json).await;
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(out.stderr.contains("not-json.jsonl:2: "), "{}", out.stderr);

    let newer = scratch.path("newer.jsonl");
    std::fs::write(&newer, "{\"type\":\"header\",\"format\":\"jsonrpc-trace\",\"version\":2}\n").expect("write");
    let out = show(&["--summary"], &newer).await;
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(out.stderr.contains("trace format version 2 is newer than this jrpc reads (1)"), "{}", out.stderr);

    // A tap killed while writing leaves half a line: the rest is still read.
    let cut = scratch.path("cut.jsonl");
    std::fs::write(
        &cut,
        "{\"type\":\"header\",\"format\":\"jsonrpc-trace\",\"version\":1}\n{\"type\":\"message\",\"t\":0.5,\"from\":\"client\",\"size\":40,\"framing\":\"newline\",\"message\":{\"jsonrpc\":\"2.0\",\"method\":\"hi\"}}\n{\"type\":\"mess",
    )
    .expect("write");
    let out = show(&["--summary"], &cut).await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_contains(&out.stderr, &["cut.jsonl:3: the last line is not a record, skipped"]);
    assert_contains(&out.stdout, &["NOTIFICATIONS", "hi "]);

    let out = show(&[], &scratch.path("missing.jsonl")).await;
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("missing.jsonl: No such file"), "{}", out.stderr);
}
