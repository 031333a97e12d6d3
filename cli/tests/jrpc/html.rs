//! `jrpc show --html` in a real browser: Debian's headless chromium (installed with `apt-get` when
//! missing), driven by playwright-core (`cli/tests/browser`, `npm ci` from its lockfile). The page
//! of a recorded conversation with the reference peer must load without a single request beyond
//! its own file, draw a span per request (answered, error, cancelled) and ticks for
//! notifications, show a message's JSON on click, and filter. The screenshot is kept at
//! `target/jrpc-html/timeline.png` for people to look at.

use std::path::PathBuf;

use crate::support;
use crate::support::{Scratch, interop, jrpc_command, run};
use serde_json::{Value, json};

#[tokio::test]
async fn the_timeline_page_works_in_headless_chromium() {
    let chromium = interop::chromium();
    assert!(chromium.is_file());
    let browser = interop::npm_ready_at(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("browser"),
        &["playwright-core"],
    );
    let scratch = Scratch::new("html");
    let trace = scratch.path("trace.jsonl");
    support::reference_session(&["--out".as_ref(), trace.as_os_str()]).await;
    let page = scratch.path("trace.html");
    let mut show = jrpc_command();
    show.arg("show").arg("--html").arg(&page).arg(&trace);
    let out = run(show, b"").await;
    assert_eq!(out.code(), Some(0), "{out:?}");
    let html = std::fs::read_to_string(&page).expect("the page");
    for external in ["http://", "https://", "<link", "src="] {
        assert!(!html.contains(external), "the page refers to something outside it: {external}");
    }

    let shots = interop::profile_dir().parent().expect("target/").join("jrpc-html");
    std::fs::create_dir_all(&shots).expect("a directory for the screenshot");
    let screenshot = shots.join("timeline.png");
    let _ = std::fs::remove_file(&screenshot);
    let mut drive = tokio::process::Command::new("node");
    drive.arg("drive.mjs").arg(&page).arg(&screenshot).args(["callBack", "slow"]).current_dir(&browser);
    let out = run(drive, b"").await;
    assert_eq!(out.code(), Some(0), "drive.mjs failed: {out:?}");
    let seen: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"));

    let page_url = format!("file://{}", page.display());
    assert_eq!(seen["requests"], json!([page_url]), "the page fetches nothing but itself");
    assert_eq!(seen["errors"], json!([]), "no script errors");

    let spans: Vec<(String, String, String)> = seen["spans"]
        .as_array()
        .expect("spans")
        .iter()
        .map(|s| {
            (
                s["method"].as_str().unwrap().into(),
                s["from"].as_str().unwrap().into(),
                s["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    let span = |m: &str, from: &str, status: &str| (m.to_owned(), from.to_owned(), status.to_owned());
    assert_eq!(
        spans,
        [
            span("add", "client", "ok"),
            span("fail", "client", "error"),
            span("callBack", "client", "ok"),
            span("notifyMe", "client", "ok"),
            span("slow", "client", "cancelled"),
            span("client/ask", "server", "ok"),
        ]
    );
    assert!(
        seen["spans"].as_array().unwrap().iter().all(|s| s["width"].as_f64().unwrap() >= 2.0),
        "every span visible"
    );
    let ticks: Vec<&str> = seen["ticks"].as_array().unwrap().iter().filter_map(|t| t["method"].as_str()).collect();
    assert_eq!(ticks.iter().filter(|m| **m == "tick").count(), 2, "{ticks:?}");
    assert!(ticks.contains(&"$/cancelRequest"), "{ticks:?}");

    // Clicking the callBack span shows the request and its answer, and selects both rows.
    let detail = &seen["detail"];
    assert_eq!(detail["title"], "#2 callBack");
    assert!(detail["meta"].as_str().unwrap().starts_with("C→S · sent at "), "{detail}");
    let json = detail["json"].as_array().expect("the messages");
    assert_eq!(json.len(), 2, "{detail}");
    let request: Value = serde_json::from_str(json[0].as_str().unwrap()).expect("the request's JSON");
    assert_eq!(request["params"], json!({"method": "client/ask", "params": {"n": 6}}));
    let answer: Value = serde_json::from_str(json[1].as_str().unwrap()).expect("the answer's JSON");
    assert_eq!(answer["result"], json!({"answer": 6}));
    assert!(json[0].as_str().unwrap().contains("\n  \"params\": {"), "indented: {}", json[0]);
    assert_eq!(seen["selectedRows"], 2);

    // The filter leaves only the slow call (its span, and the rows of its request, the
    // cancellation and the answer).
    assert_eq!(seen["visible"], json!(["slow"]));
    assert_eq!(seen["count"], "1 of 6 requests");
    assert_eq!(seen["visibleRows"], 2, "the request and its answer");
    assert_eq!(seen["allAgain"], 6, "clearing the filter shows everything again");
    assert!(screenshot.is_file(), "no screenshot at {}", screenshot.display());
}
