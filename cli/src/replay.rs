//! `jrpc replay TRACE`: the client's side of a trace, sent to a fresh server in the same order;
//! the server's own requests answered as the client answered them in the trace; and a report of
//! every answer that differs from the recorded one.
//!
//! Order is kept without guessing at timing: a client message is sent only after every answer
//! the trace shows arriving before it has arrived again (an LSP client's `initialized` waits for
//! the `initialize` result), and not before the messages ahead of it were queued. Cancellations in
//! the trace cancel the replayed call (the connection sends them in the protocol's spelling,
//! with this connection's ids).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use jsonrpc_duplex_core::{
    CallOptions, CancelProtocol, CancellationToken, Connection, Error, ErrorObject, Profile, Router,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::call::AnswerRule;
use crate::conversation::{Conversation, EventKind};
use crate::diff::{Difference, Ignored, differences};
use crate::exit;
use crate::target::{self, Target, TargetArgs};
use crate::trace::read::Trace;
use crate::trace::{Side, WireFraming};
use crate::view::Shown;

/// `jrpc replay`.
#[derive(clap::Args, Debug)]
#[command(after_help = "The server is the trace's own command (from tap) unless a target is given. \
Exit status: 0 every answer the same, 1 some differ (or are missing), 2 a bad command line or trace, \
3 the server could not be started or reached.")]
pub(crate) struct ReplayArgs {
    /// The trace to replay (from `jrpc tap --out` or `jrpc call --trace`).
    #[arg(value_name = "TRACE")]
    recorded: PathBuf,
    #[command(flatten)]
    target: TargetArgs,
    /// Leave these members out of the comparison: names at any depth (`id`, `timestamp`) or
    /// paths from the top (`result.serverInfo.version`); repeat it or separate with commas.
    #[arg(long, value_name = "NAME")]
    ignore: Vec<String>,
    /// How to answer the server's requests that the trace's client never answered: `null`,
    /// `error` (-32601), or a JSON file as for `jrpc call --answer`.
    #[arg(long, value_name = "null|error|FILE", default_value = "null")]
    answer: String,
    /// How long to wait for each answer.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::time::parse_duration)]
    timeout: Duration,
    /// Show the replayed conversation on stderr as it happens, and list the answers that match.
    #[arg(long, short)]
    verbose: bool,
}

/// A client message of the trace.
enum Step {
    Request {
        id: String,
        method: String,
        params: Option<Box<RawValue>>,
        recorded: Option<Recorded>,
    },
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A cancellation of an earlier request step.
    Cancel {
        request: usize,
    },
}

/// An answer as the trace has it.
#[derive(Clone)]
enum Recorded {
    Result(Value),
    Error(Value),
}

/// What to send, and what the client answered to the server's requests.
struct Plan {
    steps: Vec<Step>,
    /// Before step i, the answers to these earlier request steps must have arrived.
    wait_before: Vec<Vec<usize>>,
    /// Method → the client's answers to the server's requests for it, in order.
    answers: HashMap<String, VecDeque<Result<Box<RawValue>, ErrorObject>>>,
    framing: Option<WireFraming>,
    cancel: CancelProtocol,
    skipped: Vec<String>,
}

#[derive(Deserialize)]
struct Members {
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

fn plan(trace: &Trace) -> Plan {
    let mut conversation = Conversation::new();
    let mut plan = Plan {
        steps: Vec::new(),
        wait_before: Vec::new(),
        answers: HashMap::new(),
        framing: None,
        cancel: CancelProtocol::lsp(),
        skipped: Vec::new(),
    };
    // Event index of a client request → its step; event index of a server request → its method.
    let mut request_steps: HashMap<usize, usize> = HashMap::new();
    let mut server_requests: HashMap<usize, String> = HashMap::new();
    let mut answered: Vec<usize> = Vec::new();
    for record in &trace.records {
        if record.from == Some(Side::Client) && plan.framing.is_none() && record.message.is_some() {
            plan.framing = record.framing;
        }
        for event in conversation.feed(record) {
            let members = serde_json::from_str::<Members>(&event.text).ok();
            let params = members.as_ref().and_then(|m| m.params.clone());
            match (event.from, event.kind) {
                (Some(Side::Client), EventKind::Request) => {
                    request_steps.insert(event.index, plan.steps.len());
                    plan.wait_before.push(std::mem::take(&mut answered));
                    plan.steps.push(Step::Request {
                        id: event.id.clone().unwrap_or_default(),
                        method: event.method.clone().unwrap_or_default(),
                        params,
                        recorded: None,
                    });
                }
                (Some(Side::Client), EventKind::Notification) => {
                    let method = event.method.clone().unwrap_or_default();
                    if let Some(cancel) = cancel_protocol(&method) {
                        plan.cancel = cancel;
                        let target =
                            cancelled_id(&method, params.as_deref()).and_then(|id| find_request(&plan.steps, &id));
                        if let Some(request) = target {
                            plan.wait_before.push(std::mem::take(&mut answered));
                            plan.steps.push(Step::Cancel { request });
                        }
                        continue;
                    }
                    plan.wait_before.push(std::mem::take(&mut answered));
                    plan.steps.push(Step::Notification { method, params });
                }
                (Some(Side::Server), EventKind::Result | EventKind::Error) => {
                    let Some(step) = event.request.and_then(|r| request_steps.get(&r)).copied() else { continue };
                    let recorded = members.map(|m| match (m.error, m.result) {
                        (Some(error), _) => Recorded::Error(error),
                        (None, result) => Recorded::Result(result.unwrap_or(Value::Null)),
                    });
                    if let Some(Step::Request { recorded: slot, .. }) = plan.steps.get_mut(step) {
                        *slot = recorded;
                    }
                    answered.push(step);
                }
                (Some(Side::Server), EventKind::Request) => {
                    server_requests.insert(event.index, event.method.clone().unwrap_or_default());
                }
                (Some(Side::Client), EventKind::Result | EventKind::Error) => {
                    let Some(method) = event.request.and_then(|r| server_requests.get(&r)) else { continue };
                    let answer = match members {
                        Some(Members { error: Some(error), .. }) => Err(serde_json::from_value::<ErrorObject>(error)
                            .unwrap_or_else(|e| ErrorObject::internal_error(format!("the recorded error: {e}")))),
                        Some(Members { result, .. }) => Ok(raw(&result.unwrap_or(Value::Null))),
                        None => continue,
                    };
                    plan.answers.entry(method.clone()).or_default().push_back(answer);
                }
                (Some(Side::Client), EventKind::Unparsed) => {
                    plan.skipped.push(format!("a client message that is not JSON-RPC at t={:.3}s (not sent)", event.t))
                }
                _ => {}
            }
        }
    }
    plan
}

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// The cancellation of the protocol the core knows (`Profile::presets`) that spells it `method`.
fn cancel_protocol(method: &str) -> Option<CancelProtocol> {
    Profile::presets().into_iter().map(|p| p.cancel).find(|cancel| cancel.method == method)
}

fn cancelled_id(method: &str, params: Option<&RawValue>) -> Option<String> {
    let params: Value = serde_json::from_str(params?.get()).ok()?;
    params.get(&*cancel_protocol(method)?.id_member).map(Value::to_string)
}

fn find_request(steps: &[Step], wanted: &str) -> Option<usize> {
    steps.iter().rposition(|s| matches!(s, Step::Request { id, .. } if id == wanted))
}

/// Run `replay`; the exit code.
pub(crate) async fn run(args: ReplayArgs) -> u8 {
    let trace = match Trace::read(&args.recorded) {
        Ok(trace) => trace,
        Err(e) => {
            eprintln!("jrpc replay: {e}");
            return e.exit_code();
        }
    };
    let plan = plan(&trace);
    let target = match args.target.target() {
        Ok(Some(target)) => target,
        Ok(None) => match trace.header().and_then(|h| h.command.clone()).filter(|c| !c.is_empty()) {
            Some(command) => Target::Spawn(command),
            None => {
                eprintln!(
                    "jrpc replay: the trace names no server command; say where the server is (--spawn, --tcp, --unix, --ws)"
                );
                return exit::USAGE;
            }
        },
        Err(e) => {
            eprintln!("jrpc replay: {e}");
            return e.exit_code();
        }
    };
    let framing = match (args.target.framing, plan.framing) {
        (Some(framing), _) => framing.into(),
        (None, Some(WireFraming::Newline)) => jsonrpc_duplex_core::Framing::NewlineDelimited,
        _ => jsonrpc_duplex_core::Framing::ContentLength,
    };
    let recorder = match crate::call::recorder(args.target.trace.as_ref(), &target, args.verbose.then_some(Shown::All))
    {
        Ok(recorder) => Arc::new(Mutex::new(recorder)),
        Err(e) => {
            eprintln!("jrpc replay: {e}");
            return e.exit_code();
        }
    };
    let fallback = match AnswerRule::parse(&args.answer) {
        Ok(rule) => rule,
        Err(e) => {
            eprintln!("jrpc replay: {e}");
            return e.exit_code();
        }
    };
    let unexpected = Arc::new(Mutex::new(Vec::new()));
    let router = answers_router(plan.answers.clone(), fallback, unexpected.clone());
    let builder = Connection::builder().framing(framing).cancel_protocol(plan.cancel.clone()).serve(router);
    let session = match target::connect(&target, builder, recorder).await {
        Ok(session) => session,
        Err(e) => {
            eprintln!("jrpc replay: {e}");
            return e.exit_code();
        }
    };
    let outcomes = send(&plan, &session.conn, args.timeout).await;
    let (_, server_exit) = session.finish().await;
    let unexpected = std::mem::take(&mut *unexpected.lock().unwrap_or_else(|p| p.into_inner()));
    report(&args, &target, &plan, outcomes, &unexpected, server_exit)
}

/// Answers the server's requests as the trace's client did, in order per method; the last
/// answer again when the server asks more often; by the `--answer` rule (and a note) for methods
/// the trace never saw answered.
fn answers_router(
    answers: HashMap<String, VecDeque<Result<Box<RawValue>, ErrorObject>>>,
    fallback: AnswerRule,
    unexpected: Arc<Mutex<Vec<String>>>,
) -> Router {
    let answers = Arc::new(Mutex::new(answers));
    Router::new().fallback(move |request, reply| {
        let method = request.method().to_owned();
        let answer = {
            let mut answers = answers.lock().unwrap_or_else(|p| p.into_inner());
            match answers.get_mut(&method) {
                Some(queue) if queue.len() > 1 => queue.pop_front(),
                Some(queue) => queue.front().cloned(),
                None => None,
            }
        };
        let answer = answer.unwrap_or_else(|| {
            unexpected.lock().unwrap_or_else(|p| p.into_inner()).push(method.clone());
            fallback.answer(&method)
        });
        async move {
            reply.respond(answer);
        }
    })
}

type Outcome = Result<Box<RawValue>, Error>;

/// Send every step in order; the replayed outcome of each request step.
async fn send(plan: &Plan, conn: &Connection, timeout: Duration) -> HashMap<usize, Outcome> {
    let peer = conn.handle();
    let mut inflight: FuturesUnordered<BoxFuture<'static, (usize, Outcome)>> = FuturesUnordered::new();
    let mut done: HashMap<usize, Outcome> = HashMap::new();
    let mut tokens: HashMap<usize, CancellationToken> = HashMap::new();
    for (i, step) in plan.steps.iter().enumerate() {
        for wanted in &plan.wait_before[i] {
            while !done.contains_key(wanted) && !inflight.is_empty() {
                if let Some((step, outcome)) = inflight.next().await {
                    done.insert(step, outcome);
                }
            }
        }
        match step {
            Step::Request { method, params, .. } => {
                let token = CancellationToken::new();
                tokens.insert(i, token.clone());
                let (peer, method, params) = (peer.clone(), method.clone(), params.clone());
                let options = CallOptions::new().timeout(timeout).cancel(token);
                inflight.push(Box::pin(async move { (i, peer.request_raw(&method, &params, options).await) }));
                // One poll queues the request, so that the next step goes out after it.
                if let Some(Some((step, outcome))) = futures::FutureExt::now_or_never(inflight.next()) {
                    done.insert(step, outcome);
                }
            }
            Step::Notification { method, params } => {
                if let Err(e) = peer.notify(method, params).await {
                    eprintln!("jrpc replay: the notification {method} was not sent: {e}");
                }
            }
            Step::Cancel { request } => {
                if let Some(token) = tokens.get(request) {
                    token.cancel();
                }
            }
        }
    }
    while let Some((step, outcome)) = inflight.next().await {
        done.insert(step, outcome);
    }
    done
}

fn report(
    args: &ReplayArgs,
    target: &Target,
    plan: &Plan,
    mut outcomes: HashMap<usize, Outcome>,
    unexpected: &[String],
    server_exit: Option<String>,
) -> u8 {
    let ignored = Ignored::new(&args.ignore);
    let requests = plan.steps.iter().filter(|s| matches!(s, Step::Request { .. })).count();
    let notifications = plan.steps.len() - requests;
    println!(
        "replayed {} against {}: {requests} requests, {notifications} notifications",
        args.recorded.display(),
        target.describe()
    );
    let (mut same, mut differ, mut unchecked) = (0, 0, 0);
    for (i, step) in plan.steps.iter().enumerate() {
        let Step::Request { id, method, recorded, .. } = step else { continue };
        let outcome = outcomes.remove(&i);
        let cancelled = plan.steps.iter().any(|s| matches!(s, Step::Cancel { request } if *request == i));
        let verdict = compare(recorded.as_ref(), outcome, cancelled, &ignored);
        match verdict {
            Verdict::Same => {
                same += 1;
                if args.verbose {
                    println!("#{id} {method}: same");
                }
            }
            Verdict::Unchecked(why) => {
                unchecked += 1;
                println!("#{id} {method}: not compared ({why})");
            }
            Verdict::Differs(found) => {
                differ += 1;
                println!("#{id} {method}: differs");
                for d in found.iter().take(20) {
                    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
                    println!("    {}: {} → {}", d.path, show(&d.recorded), show(&d.replayed));
                }
                if found.len() > 20 {
                    println!("    … and {} more", found.len() - 20);
                }
            }
        }
    }
    let mut asked: Vec<(&String, usize)> = Vec::new();
    for method in unexpected {
        match asked.iter_mut().find(|(m, _)| *m == method) {
            Some((_, n)) => *n += 1,
            None => asked.push((method, 1)),
        }
    }
    for (method, times) in asked {
        let times = if times == 1 { String::new() } else { format!(" ({times} times)") };
        println!(
            "note: the server asked {method}{times}, which the trace's client never answered; answered by --answer {}",
            args.answer
        );
    }
    for skipped in &plan.skipped {
        println!("note: {skipped}");
    }
    if let Some(exit) = server_exit {
        println!("{exit}");
    }
    let unchecked = if unchecked > 0 { format!(", {unchecked} not compared") } else { String::new() };
    println!("{same} of {requests} answers the same, {differ} differ{unchecked}");
    if differ > 0 { exit::ANSWERED_ERROR } else { exit::OK }
}

enum Verdict {
    Same,
    Differs(Vec<Difference>),
    Unchecked(String),
}

fn compare(recorded: Option<&Recorded>, outcome: Option<Outcome>, cancelled: bool, ignored: &Ignored) -> Verdict {
    let replayed = match outcome {
        Some(Ok(result)) => Recorded::Result(serde_json::from_str(result.get()).unwrap_or(Value::Null)),
        Some(Err(Error::Remote(error))) => Recorded::Error(serde_json::to_value(&error).unwrap_or(Value::Null)),
        Some(Err(Error::Cancelled)) if cancelled => return Verdict::Unchecked("cancelled, as in the trace".into()),
        Some(Err(e)) => {
            let recorded = recorded.map(|r| match r {
                Recorded::Result(v) | Recorded::Error(v) => v.to_string(),
            });
            return Verdict::Differs(vec![Difference {
                path: "answer".into(),
                recorded,
                replayed: Some(format!("none: {e}")),
            }]);
        }
        None => return Verdict::Unchecked("never sent".into()),
    };
    let Some(recorded) = recorded else {
        return Verdict::Unchecked("the trace has no answer to it".into());
    };
    if cancelled {
        return Verdict::Unchecked("cancelled: its answer depends on timing".into());
    }
    let found = match (recorded, &replayed) {
        (Recorded::Result(a), Recorded::Result(b)) => differences("result", a, b, ignored),
        (Recorded::Error(a), Recorded::Error(b)) => differences("error", a, b, ignored),
        (Recorded::Result(a), Recorded::Error(b)) => vec![Difference {
            path: "answer".into(),
            recorded: Some(format!("result {a}")),
            replayed: Some(format!("error {b}")),
        }],
        (Recorded::Error(a), Recorded::Result(b)) => vec![Difference {
            path: "answer".into(),
            recorded: Some(format!("error {a}")),
            replayed: Some(format!("result {b}")),
        }],
    };
    if found.is_empty() { Verdict::Same } else { Verdict::Differs(found) }
}
