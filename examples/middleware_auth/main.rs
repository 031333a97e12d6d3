//! An auth layer that refuses a call before its handler runs, by the peer's identity: Unix peer
//! credentials (the kernel's word for who the peer process runs as) or a loopback TCP address.
//!
//! ```text
//! cargo run --example middleware_auth
//! ```
//!
//! It serves `whoami` on a Unix socket (this user allowed) and on loopback TCP (refused: the
//! layer allows no TCP peer), calls both, and prints what each was answered.

mod auth;

use jsonrpc_duplex::transport::Listener;
use jsonrpc_duplex::{Builder, Connection, ErrorObject, RequestContext, Router};

use auth::{Allow, Identity};

fn serving(allow: Allow) -> Builder {
    Connection::builder().layer(allow).serve(Router::new().method("whoami", |(): (), ctx: RequestContext| async move {
        Ok::<_, ErrorObject>(format!("{:?}", ctx.extensions().get::<Identity>()))
    }))
}

/// Serve every peer of `listener` with `builder` (until the process ends).
fn serve_all<L: Listener>(mut listener: L, builder: Builder) {
    tokio::spawn(async move {
        while let Ok((conn, _peer)) = listener.accept_connection(builder.clone()).await {
            tokio::spawn(async move { conn.closed().await });
        }
    });
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // This process's own user: the one user the Unix socket lets in.
    let me = std::fs::metadata("/proc/self")?;
    let uid = std::os::unix::fs::MetadataExt::uid(&me);
    let allow = Allow { uids: vec![uid], loopback: false };

    let dir = std::env::temp_dir().join(format!("jsonrpc-duplex-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("auth.sock");
    let _ = std::fs::remove_file(&path);
    serve_all(tokio::net::UnixListener::bind(&path)?, serving(allow.clone()));
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = tcp.local_addr()?;
    serve_all(tcp, serving(allow));

    let unix = Connection::builder().connect_unix(&path).await?;
    println!("unix: {:?}", unix.handle().request::<String>("whoami", ()).await);
    let tcp = Connection::builder().connect_tcp(addr).await?;
    match tcp.handle().request::<String>("whoami", ()).await {
        Err(e) => println!("tcp: refused: {e}"),
        Ok(who) => println!("tcp: unexpectedly allowed as {who}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
