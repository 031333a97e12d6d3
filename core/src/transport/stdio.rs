use crate::{Builder, Connection};

impl Builder {
    /// Start over this process's stdin and stdout (a server launched by its client, an agent
    /// launched by its editor). Nothing else may write to stdout: log to stderr.
    pub fn stdio(self) -> Connection {
        self.connect(tokio::io::stdin(), tokio::io::stdout())
    }
}
