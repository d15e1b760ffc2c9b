// SPDX-License-Identifier: Apache-2.0
//! `qlink-worker`: one worker of distributed qlink queries, a
//! datafusion-distributed worker (gRPC) whose sessions carry qlink's
//! runtime environment (HTTP(S) and bucket object stores, memory limit) and
//! rebuild the qlink scans a coordinator (`qlink sql --workers ...`,
//! `qlink.Session(workers=...)`) sends, with this machine's copy of each
//! plugin.
//!
//!   qlink-worker --port N [--host ADDR] [--plugin-dir DIR] [--secret-file FILE] [--memory-limit SIZE]
//!
//! Every call must carry the shared secret (`--secret-file`, or the
//! `QLINK_SECRET` environment variable; the worker does not start without
//! one): a call without it is refused as UNAUTHENTICATED before any of it
//! runs. Plugins: a scan's plugin is DIR/<file name the coordinator
//! loaded>, never a path from the request; without --plugin-dir the
//! worker loads none. The file must be the coordinator's build: its digest
//! is checked on the opened file before it is loaded, then its name,
//! version and ABI.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use datafusion_distributed::{Worker, WorkerQueryContext};
use qlink_datafusion::distributed::{worker_state, PluginLoader, RequireSecret, Secret, SECRET_ENV};
use qlink_session::builder::{parse_size, runtime_env};
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;

const USAGE: &str = "usage: qlink-worker --port N [--host ADDR] [--plugin-dir DIR] [--secret-file FILE] [--memory-limit SIZE]
  --port N             the TCP port to serve on (coordinators use http://HOST:N)
  --host ADDR          the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --plugin-dir DIR     where this machine keeps the plugins queries may use (none without it)
  --secret-file FILE   the secret every call must carry, its first line (default: the
                       QLINK_SECRET environment variable; one of the two is required)
  --memory-limit SIZE  the memory pool limit of each query's session, e.g. 512M, 2G";

struct Args {
    port: u16,
    host: IpAddr,
    plugin_dir: Option<PathBuf>,
    secret: Secret,
    memory_limit: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut port = None;
    let mut secret_file: Option<PathBuf> = None;
    let mut host = IpAddr::from([127, 0, 0, 1]);
    let mut plugin_dir = None;
    let mut memory_limit = None;
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| inline.clone().or_else(|| it.next()).ok_or_else(|| format!("{name} needs a value"));
        match key.as_str() {
            "--port" => {
                let v = value("--port")?;
                port = Some(
                    v.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| format!("--port wants a port from 1 to 65535, got '{v}'"))?,
                );
            }
            "--host" => {
                let v = value("--host")?;
                host = v.parse().map_err(|_| format!("--host wants an IP address (e.g. 0.0.0.0), got '{v}'"))?;
            }
            "--plugin-dir" => {
                let d = PathBuf::from(value("--plugin-dir")?);
                if !d.is_dir() {
                    return Err(format!("--plugin-dir {} is not a directory", d.display()));
                }
                plugin_dir = Some(d);
            }
            "--secret-file" => secret_file = Some(PathBuf::from(value("--secret-file")?)),
            "--memory-limit" => memory_limit = Some(parse_size(&value("--memory-limit")?).map_err(|e| format!("--memory-limit: {e}"))?),
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument '{arg}'\n{USAGE}")),
        }
    }
    let port = port.ok_or_else(|| format!("--port is required\n{USAGE}"))?;
    let secret = Secret::from_file_or_env(secret_file.as_deref())?.ok_or_else(|| {
        format!("a worker needs the secret its coordinators send: --secret-file FILE or {SECRET_ENV} (e.g. `openssl rand -hex 32 > FILE`)")
    })?;
    Ok(Args { port, host, plugin_dir, secret, memory_limit })
}

fn main() {
    let a = parse_args().unwrap_or_else(|e| {
        eprintln!("qlink-worker: error: {e}");
        std::process::exit(2);
    });
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| {
        eprintln!("qlink-worker: error: {e}");
        std::process::exit(1);
    });
    if let Err(e) = rt.block_on(serve(a)) {
        eprintln!("qlink-worker: error: {}", e.to_string().replace('\n', " "));
        std::process::exit(1);
    }
}

async fn serve(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let loader = Arc::new(PluginLoader::new(a.plugin_dir.clone()));
    let secret = a.secret.clone();
    let worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let loader = Arc::clone(&loader);
        let secret = secret.clone();
        async move { worker_state(ctx, loader, secret) }
    })
    .with_runtime_env(runtime_env(a.memory_limit)?);
    let addr = SocketAddr::new(a.host, a.port);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    // One line once the port is open, so scripts and tests can wait for it.
    println!("qlink-worker: serving on http://{addr}");
    // No Nagle delay: plans and small result messages would otherwise wait
    // on the peer's delayed ACK (about 40 ms a query on loopback).
    // The secret is checked before a call reaches the worker service (no
    // session is built, no plugin named in the call is looked at).
    Server::builder()
        .layer(tonic::service::InterceptorLayer::new(RequireSecret(a.secret.clone())))
        .add_service(worker.into_worker_server())
        .serve_with_incoming(TcpIncoming::from(listener).with_nodelay(Some(true)))
        .await?;
    Ok(())
}
