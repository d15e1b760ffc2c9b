// SPDX-License-Identifier: Apache-2.0
//! `Session.serve_flight_sql`: an Arrow Flight SQL server over a session,
//! in this process (`qlink_session::flight_sql`, the server `qlink serve`
//! runs), so the wheel needs no `qlink` binary to serve.
//!
//! The server answers on the process's Tokio runtime. It plans every query
//! in the session's DataFusion context as it is when the query arrives:
//! tables and schemas registered later are seen; a planner installed later
//! is not (it makes a new context). Queries read the session's tables with
//! the GIL released (plugin code, not Python, serves them).

use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use datafusion::error::DataFusionError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use qlink_datafusion::distributed::Secret;
use qlink_datafusion::QlinkSession;
use qlink_session::flight_sql::{self, ServeOptions};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::errors::to_py;
use crate::runtime::runtime;

/// A running Flight SQL server. Thread-safe. `shutdown()` (also when the
/// object is collected) stops it: it stops accepting calls, gives the calls
/// in flight a grace period, and releases the port.
#[pyclass(module = "qlink._qlink", name = "FlightSqlServer", frozen)]
pub struct PyFlightSqlServer {
    bound: SocketAddr,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    task: Mutex<Option<JoinHandle<Result<(), DataFusionError>>>>,
}

/// Starts a server over `ctx`'s session on `host`:`port` (0: a free port).
/// `secret` (at least 32 printable bytes) is required unless `host` is a
/// loopback address. Errors: ValueError for a bad host, secret or a public
/// host without a secret; RuntimeError when the port cannot be bound.
pub fn start(py: Python<'_>, session: QlinkSession, host: &str, port: u16, secret: Option<&str>) -> PyResult<PyFlightSqlServer> {
    let ip: IpAddr = match host {
        "localhost" => IpAddr::from([127, 0, 0, 1]),
        "" => IpAddr::from([0, 0, 0, 0]),
        h => h.parse().map_err(|_| PyValueError::new_err(format!("host {h:?} is not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)")))?,
    };
    let secret = secret.map(|s| Secret::new(s, "secret")).transpose().map_err(PyValueError::new_err)?;
    flight_sql::check_bind_as(&ip, &secret, "host", "a secret (secret=..., at least 32 printable bytes, e.g. secrets.token_hex(32))")
        .map_err(PyValueError::new_err)?;
    let opts = ServeOptions { host: ip, port, secret };
    let listener = py
        .detach(|| runtime().block_on(flight_sql::bind(&opts)))
        .map_err(|e| PyRuntimeError::new_err(qlink_session::message::one_line(&e)))?;
    let bound = listener.local_addr().map_err(|e| PyRuntimeError::new_err(format!("cannot read the bound address: {e}")))?;
    let (tx, rx) = oneshot::channel::<()>();
    let task = runtime().spawn(flight_sql::serve_on(listener, session, opts.secret, async move {
        let _ = rx.await;
    }));
    Ok(PyFlightSqlServer { bound, stop: Mutex::new(Some(tx)), task: Mutex::new(Some(task)) })
}

#[pymethods]
impl PyFlightSqlServer {
    /// The port the server listens on.
    #[getter]
    fn port(&self) -> u16 {
        self.bound.port()
    }

    /// The address it is bound to (`127.0.0.1`, `::1`, `0.0.0.0`).
    #[getter]
    fn host(&self) -> String {
        self.bound.ip().to_string()
    }

    /// `grpc://HOST:PORT` (an IPv6 host in brackets).
    #[getter]
    fn url(&self) -> String {
        flight_sql::url(&self.bound)
    }

    /// Whether it still serves (False after `shutdown`, or when it stopped
    /// on an error, which `shutdown` then raises).
    #[getter]
    fn is_running(&self) -> bool {
        self.task.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops the server: it accepts no new call, and the calls in flight
    /// get `timeout` seconds (default 5) to finish before they are cut off
    /// (a client that never reads its result cannot hold the server). Waits
    /// with the GIL released. Idempotent. RuntimeError when the server had
    /// stopped on an error.
    #[pyo3(signature = (timeout=5.0))]
    fn shutdown(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        if let Some(tx) = self.stop.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(());
        }
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut task) = task else { return Ok(()) };
        let grace = std::time::Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(std::time::Duration::MAX);
        let joined = py.detach(|| {
            runtime().block_on(async {
                match tokio::time::timeout(grace, &mut task).await {
                    Ok(joined) => joined,
                    Err(_) => {
                        task.abort();
                        task.await
                    }
                }
            })
        });
        match joined {
            Ok(result) => result.map_err(to_py),
            Err(e) if e.is_cancelled() => Ok(()),
            Err(e) => Err(PyRuntimeError::new_err(format!("the Flight SQL server's task failed: {e}"))),
        }
    }

    fn __repr__(&self) -> String {
        format!("FlightSqlServer({}, {})", self.url(), if self.is_running() { "running" } else { "stopped" })
    }
}

impl Drop for PyFlightSqlServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(());
        }
    }
}
