//! Reading a trace back: all at once, or line by line while another process appends to it.

use crate::error::CliError;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use super::{FORMAT, Kind, Record, VERSION};

/// How often a followed trace is looked at for new lines.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// A trace file read line by line.
pub(crate) struct TraceReader {
    reader: BufReader<File>,
    /// A line read without its line end yet (the writer is in the middle of it).
    partial: String,
    line: usize,
    follow: bool,
    ended: bool,
}

/// A line that is not a record.
#[derive(Debug)]
pub(crate) struct BadLine {
    /// Its line number, from 1.
    pub(crate) line: usize,
    /// Why it is not a record.
    pub(crate) error: String,
    /// Whether the whole trace is unreadable because of it (a header of another format or a
    /// newer version), rather than this line alone.
    pub(crate) fatal: bool,
}

impl TraceReader {
    /// Open `path`; with `follow`, reading waits for more lines at the end of the file until a
    /// record says the conversation ended (the server's exit).
    pub(crate) fn open(path: &Path, follow: bool) -> io::Result<TraceReader> {
        let file = File::open(path)?;
        Ok(TraceReader { reader: BufReader::new(file), partial: String::new(), line: 0, follow, ended: false })
    }

    /// The next record with its line number (from 1), or the line that is not one; `None` at the
    /// end (when following: once the exit record has been read).
    pub(crate) fn next_record(&mut self) -> io::Result<Option<(usize, Result<Record, BadLine>)>> {
        loop {
            if self.ended {
                return Ok(None);
            }
            self.reader.read_line(&mut self.partial)?;
            if !self.partial.ends_with('\n') {
                // The end of the file, for now.
                if self.follow {
                    std::thread::sleep(FOLLOW_POLL);
                    continue;
                }
                if self.partial.is_empty() {
                    return Ok(None);
                }
                // A last line without its line end: read as it is.
            }
            let text = std::mem::take(&mut self.partial);
            self.line += 1;
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            let parsed = serde_json::from_str::<Record>(text)
                .map_err(|e| BadLine { line: self.line, error: e.to_string(), fatal: false })
                .and_then(|record| check_header(self.line, record));
            if let Ok(record) = &parsed {
                self.ended = self.follow && record.kind == Kind::Exit;
            }
            return Ok(Some((self.line, parsed)));
        }
    }
}

/// A header of another format, or of a newer version, is refused with a reason.
fn check_header(line: usize, record: Record) -> Result<Record, BadLine> {
    if record.kind != Kind::Header {
        return Ok(record);
    }
    if record.format.as_deref() != Some(FORMAT) {
        return Err(BadLine { line, error: format!("not a {FORMAT} header: format {:?}", record.format), fatal: true });
    }
    match record.version {
        Some(v) if v > VERSION => Err(BadLine {
            line,
            error: format!("trace format version {v} is newer than this jrpc reads ({VERSION}); update jrpc"),
            fatal: true,
        }),
        _ => Ok(record),
    }
}

/// A whole trace in memory.
pub(crate) struct Trace {
    /// Every record, the header included, in file order.
    pub(crate) records: Vec<Record>,
}

impl Trace {
    /// Read `path`; a line that is not a record is an error naming it (a last line cut short by a
    /// writer that died is skipped with a warning on stderr).
    pub(crate) fn read(path: &Path) -> Result<Trace, CliError> {
        let unreadable = |source| CliError::TraceRead { path: path.to_owned(), source };
        let not_a_record =
            |bad: BadLine| CliError::TraceLine { path: path.to_owned(), line: bad.line, reason: bad.error };
        let mut reader = TraceReader::open(path, false).map_err(unreadable)?;
        let mut records = Vec::new();
        let mut last_bad: Option<BadLine> = None;
        while let Some((_, parsed)) = reader.next_record().map_err(unreadable)? {
            if let Some(bad) = last_bad.take() {
                return Err(not_a_record(bad));
            }
            match parsed {
                Ok(record) => records.push(record),
                Err(bad) if bad.fatal => return Err(not_a_record(bad)),
                Err(bad) => last_bad = Some(bad),
            }
        }
        if let Some(bad) = last_bad {
            eprintln!("jrpc: {}:{}: the last line is not a record, skipped ({})", path.display(), bad.line, bad.error);
        }
        Ok(Trace { records })
    }

    /// The header record, when the trace has one.
    pub(crate) fn header(&self) -> Option<&Record> {
        self.records.first().filter(|r| r.kind == Kind::Header)
    }
}
