//! Signals for `tap`: passed on to the server, and the server's own death by a signal passed on
//! to whoever started the tap (so an editor sees the same exit either way).

use std::process::ExitStatus;

/// ` (SIGTERM)` for a known signal number, nothing otherwise.
pub(crate) fn name(signal: i32) -> String {
    #[cfg(unix)]
    if let Some(name) = signal_hook::low_level::signal_name(signal) {
        return format!(" ({name})");
    }
    let _ = signal;
    String::new()
}

/// Leave this process the way the server left: with its exit code, or killed by its signal.
pub(crate) fn exit_like(status: ExitStatus) -> ! {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            // The default action of the signal (handlers installed for forwarding are bypassed);
            // a signal whose default is not to terminate falls through to the shell convention.
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    }
    std::process::exit(status.code().unwrap_or(1))
}

#[cfg(unix)]
pub(crate) use unix::forward_to;

#[cfg(unix)]
mod unix {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use nix::sys::signal::{Signal, kill};
    use nix::unistd::{Pid, getpgrp, tcgetpgrp};
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
    use signal_hook::iterator::Signals;

    /// From now on, pass SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 on to `pid`, and SIGINT and SIGQUIT
    /// unless they came from our terminal (Ctrl-C and Ctrl-\ reach every process of the
    /// terminal's foreground group, the server included: passing them on would deliver them
    /// twice). This process no longer dies of them: it exits when the server does. Once
    /// `reaped` is set the server's process id may belong to another process: nothing is sent.
    pub(crate) fn forward_to(pid: u32, reaped: Arc<AtomicBool>) -> std::io::Result<()> {
        let mut signals = Signals::new([SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT])?;
        let pid = i32::try_from(pid).map_err(|_| std::io::Error::other(format!("process id {pid} out of range")))?;
        let pid = Pid::from_raw(pid);
        std::thread::Builder::new().name("jrpc-signals".into()).spawn(move || {
            for signal in signals.forever() {
                if reaped.load(Ordering::Acquire) || matches!(signal, SIGINT | SIGQUIT) && in_terminal_foreground() {
                    continue;
                }
                if let Ok(signal) = Signal::try_from(signal) {
                    // The server may be gone already; then there is nobody left to tell.
                    let _ = kill(pid, signal);
                }
            }
        })?;
        Ok(())
    }

    /// Whether this process belongs to the foreground process group of its controlling
    /// terminal (the group a terminal's Ctrl-C goes to).
    fn in_terminal_foreground() -> bool {
        std::fs::File::open("/dev/tty")
            .ok()
            .and_then(|tty| tcgetpgrp(&tty).ok())
            .is_some_and(|group| group == getpgrp())
    }
}
