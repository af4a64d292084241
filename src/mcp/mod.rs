//! `git crew mcp`: the commands as an MCP server, a front end beside `cli`. Its tools are
//! the CLI's operations through the same `ops` functions, returning the JSON the CLI's
//! `--json` prints (`view::output`) and refusing with the same error codes; the runs are
//! resources a client may subscribe to. It speaks over stdio (the protocol on private
//! copies of the standard streams, which are pointed at `/dev/null` and stderr, so that
//! nothing this process or its children write can reach the protocol), or over
//! Streamable HTTP on a loopback address. It imports `ops`, `view`, `state`, `sys`,
//! `core` and `error`, never `cli`, and prints nothing: what it has to say goes to the
//! client, as log messages.

mod resources;
mod schema;
mod server;
mod tools;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::ServiceExt;

use crate::error::{CrewError, ErrorCode, Result};

pub use tools::WAIT_AT_MOST;

/// Where the server speaks.
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    /// Its standard input and output, for a client that starts it.
    Stdio,
    /// Streamable HTTP on a loopback address.
    Http(SocketAddr),
}

/// Serves the repository around `cwd` until the client goes (stdio) or the process is
/// stopped (HTTP); `listening` is told the address an HTTP server listens on. Exit 2
/// outside a repository; exit 74 when the transport cannot be had.
pub fn serve(cwd: PathBuf, transport: Transport, listening: impl FnOnce(SocketAddr)) -> Result<()> {
    let ctx = crate::ops::Context::new(cwd.clone());
    let store = crate::ops::runs::open(&ctx)?;
    if let Transport::Http(addr) = transport
        && !addr.ip().is_loopback()
    {
        return Err(CrewError::new(
            ErrorCode::Usage,
            format!("--http {addr}: the server listens on a loopback address only"),
        )
        .hinted("give 127.0.0.1:PORT (port 0 picks a free one)"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CrewError::from)?;
    let served = runtime.block_on(async move {
        let shared = Arc::new(server::Shared {
            cwd,
            tools: tools::all(),
            moved: watch::start(store),
        });
        match transport {
            Transport::Stdio => stdio(shared).await,
            Transport::Http(addr) => http(shared, addr, listening).await,
        }
    });
    // An operation still running (a wait) is not waited for: the client has gone.
    runtime.shutdown_background();
    served
}

/// The protocol on private copies of stdin and stdout; fd 0 then reads `/dev/null` and
/// fd 1 writes to stderr, for everything else this process and its children do.
async fn stdio(shared: Arc<server::Shared>) -> Result<()> {
    let (input, output) = crate::sys::stdio::take().map_err(|e| {
        CrewError::new(
            ErrorCode::IoError,
            format!("cannot take the standard streams for the protocol: {e}"),
        )
    })?;
    let input = tokio::fs::File::from_std(std::fs::File::from(input));
    let output = tokio::fs::File::from_std(std::fs::File::from(output));
    let session = server::Session::new(shared);
    let running = session.serve((input, output)).await.map_err(|e| {
        CrewError::new(
            ErrorCode::IoError,
            format!("the MCP session did not start: {e}"),
        )
    })?;
    running
        .waiting()
        .await
        .map_err(|e| CrewError::internal(format!("the MCP session failed: {e}")))?;
    Ok(())
}

/// Streamable HTTP on `addr` (loopback only), one session per client.
async fn http(
    shared: Arc<server::Shared>,
    addr: SocketAddr,
    listening: impl FnOnce(SocketAddr),
) -> Result<()> {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CrewError::new(ErrorCode::IoError, format!("cannot listen on {addr}: {e}")))?;
    listening(listener.local_addr().map_err(CrewError::from)?);
    let service = TowerToHyperService::new(StreamableHttpService::new(
        move || Ok(server::Session::new(shared.clone())),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    ));
    loop {
        let (stream, _) = listener.accept().await.map_err(CrewError::from)?;
        let service = service.clone();
        tokio::spawn(async move {
            // A connection that breaks ends its own requests only.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
