//! What the machine offers the tests: fresh Unix socket paths, the open-files limit, the
//! process's resident memory.

/// A fresh path for a Unix socket, unique per test and process.
pub(crate) fn socket_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("jsonrpc-duplex-net-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join(format!("{name}.sock"));
    let _ = std::fs::remove_file(&path);
    path
}

/// The soft limit on open files of this process (from /proc; `None` where unavailable).
pub(crate) fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line.split_whitespace().nth(3)?;
    if soft == "unlimited" { Some(u64::MAX) } else { soft.parse().ok() }
}

/// This process's resident set size in KiB (from /proc; `None` where unavailable).
pub(crate) fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
