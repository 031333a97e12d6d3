//! Writing to stderr from a stdio program.
//!
//! `eprintln!` panics when the write fails, and in a program served over stdio it will: the
//! parent that holds the other end of stderr (an editor, an agent host, an SDK) may exit, or be
//! killed, before we do, and then every write to stderr fails with `EPIPE`. A last line such as
//! "connection ended" then turns a clean exit into a panic (exit code 101), which is what an
//! orphan check sees. [`log_line!`] writes the same line and ignores a stderr nobody reads any
//! more. (tracing-subscriber's `fmt` writer already ignores write errors.)

/// `eprintln!` that ignores a failed write (a closed stderr).
macro_rules! log_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub(crate) use log_line;
