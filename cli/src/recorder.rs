//! What crossed the wire, both directions, into records: cut into messages, written to the trace
//! file and shown in the live view. Used by `tap` (fed from its forwarding threads) and by
//! `call`/`replay` (fed by the connection's transport as it reads and writes).

use std::time::Instant;

use jsonrpc_duplex_core::Framing;

use crate::trace::split::{Piece, Splitter};
use crate::trace::write::{TraceWriter, piece_record};
use crate::trace::{Record, Side, seconds};
use crate::view::LiveView;

/// The recording limit of one message: larger ones are passed on and noted, not kept.
pub(crate) const MAX_RECORDED_MESSAGE: usize = 64 * 1024 * 1024;

/// Records for a trace file and a live view.
pub(crate) struct Recorder {
    started: Instant,
    trace: Option<TraceWriter>,
    view: Option<LiveView>,
    client: Splitter,
    server: Splitter,
    pieces: Vec<Piece>,
}

impl Recorder {
    /// A recorder whose times count from `started`; `framing` fixes the framing of both
    /// directions (`None`: detected per direction).
    pub(crate) fn new(
        started: Instant,
        trace: Option<TraceWriter>,
        view: Option<LiveView>,
        framing: Option<Framing>,
    ) -> Self {
        Recorder {
            started,
            trace,
            view,
            client: Splitter::new(framing, MAX_RECORDED_MESSAGE),
            server: Splitter::new(framing, MAX_RECORDED_MESSAGE),
            pieces: Vec::new(),
        }
    }

    /// Seconds from the start to `at`.
    pub(crate) fn time(&self, at: Instant) -> f64 {
        seconds(at.saturating_duration_since(self.started))
    }

    fn splitter(&mut self, from: Side) -> &mut Splitter {
        match from {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }

    /// Bytes `from` wrote, read at `at`.
    pub(crate) fn bytes(&mut self, from: Side, at: Instant, bytes: &[u8]) {
        let mut pieces = std::mem::take(&mut self.pieces);
        self.splitter(from).push(bytes, &mut pieces);
        self.pieces_read(from, at, &mut pieces);
        self.pieces = pieces;
    }

    /// `from` closed its stream (EOF) at `at`.
    pub(crate) fn end_of_stream(&mut self, from: Side, at: Instant) {
        let mut pieces = std::mem::take(&mut self.pieces);
        self.splitter(from).finish(&mut pieces);
        self.pieces_read(from, at, &mut pieces);
        self.pieces = pieces;
        let who = match from {
            Side::Client => "the client closed its output (the server's stdin)",
            Side::Server => "the server closed its output",
        };
        self.record(Record::note(self.time(at), Some(from), who));
    }

    /// `bytes` bytes from `from` went by without being recorded.
    pub(crate) fn lost(&mut self, from: Side, at: Instant, bytes: usize) {
        self.splitter(from).lose_sync();
        let text = format!("{bytes} bytes passed on but not recorded: the trace could not keep up");
        self.record(Record::note(self.time(at), Some(from), text));
    }

    /// One whole message (a transport that delimits messages itself).
    #[cfg(feature = "websocket")]
    pub(crate) fn message(&mut self, from: Side, at: Instant, framing: crate::trace::WireFraming, body: &[u8]) {
        let t = Some(self.time(at));
        let base = Record { kind: crate::trace::Kind::Message, t, from: Some(from), ..Record::default() };
        self.record(crate::trace::write::message_record(base, framing, body));
    }

    fn pieces_read(&mut self, from: Side, at: Instant, pieces: &mut Vec<Piece>) {
        let t = self.time(at);
        for piece in pieces.drain(..) {
            self.record(piece_record(t, from, piece));
        }
    }

    /// Write a record and show it.
    pub(crate) fn record(&mut self, record: Record) {
        if let Some(trace) = &mut self.trace
            && let Err(e) = trace.write(&record)
        {
            eprintln!("jrpc: writing the trace failed ({e}); recording stops, the conversation goes on");
            self.trace = None;
        }
        if let Some(view) = &mut self.view {
            view.record(&record);
        }
    }

    /// Make what was recorded visible to readers of the trace file.
    pub(crate) fn flush(&mut self) {
        if let Some(trace) = &mut self.trace
            && let Err(e) = trace.flush()
        {
            eprintln!("jrpc: writing the trace failed ({e}); recording stops, the conversation goes on");
            self.trace = None;
        }
    }
}
