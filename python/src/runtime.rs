// SPDX-License-Identifier: Apache-2.0
//! The Tokio runtime DataFusion work started from Python runs on, and how a
//! query runs with the GIL released while Ctrl-C still interrupts it.
//! Used by the session, the capsules and the codecs; uses nothing of the
//! package but its errors.

use std::sync::{Mutex, OnceLock};

use datafusion::error::DataFusionError;
use pyo3::prelude::*;

use crate::errors::to_py;

/// The process's Tokio runtime for DataFusion work started from Python.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("qlink-py")
            .enable_all()
            .build()
            .expect("qlink: cannot start a Tokio runtime")
    })
}

/// How often a running query lets Python look at pending signals.
const SIGNAL_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// Run `fut` to completion with the GIL released and return its result;
/// every 100 ms Python looks at its signals: Ctrl-C (KeyboardInterrupt)
/// drops the query's future, which cancels it, and raises in the caller.
///
/// The query is polled on the calling thread (`Runtime::block_on`, as
/// datafusion-python does): no cross-thread wake-ups per query. The host
/// reads plugin streams directly on such a thread (`block_in_place` only
/// inside runtime tasks), so the query yields between batches and the
/// signal check runs. `QLINK_PY_RUN=worker` runs it as a task on a runtime
/// worker while this thread waits (`run_on_worker`) instead.
pub fn run_interruptible<T: Send + 'static>(
    py: Python<'_>,
    fut: impl std::future::Future<Output = Result<T, DataFusionError>> + Send + 'static,
) -> PyResult<T> {
    if !run_inline() || tokio::runtime::Handle::try_current().is_ok() {
        return run_on_worker(py, fut);
    }
    let outcome = py.detach(|| {
        let run = || {
            runtime().block_on(async move {
                let mut fut = std::pin::pin!(fut);
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + SIGNAL_CHECK, SIGNAL_CHECK);
                loop {
                    tokio::select! {
                        r = &mut fut => return Ok(r),
                        _ = tick.tick() => {
                            if let Err(e) = Python::attach(|py| py.check_signals()) {
                                return Err(e);
                            }
                        }
                    }
                }
            })
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
    });
    match outcome {
        Ok(r) => r?.map_err(to_py),
        Err(_) => Err(crate::errors::ExecutionError::new_err("the query panicked (a bug in qlink or DataFusion)")),
    }
}

/// Queries run on the calling thread (as datafusion-python's do) unless
/// `QLINK_PY_RUN=worker` (read once): see `run_interruptible`.
fn run_inline() -> bool {
    static INLINE: OnceLock<bool> = OnceLock::new();
    *INLINE.get_or_init(|| std::env::var("QLINK_PY_RUN").as_deref() != Ok("worker"))
}

/// The query as a task on the qlink runtime; this thread waits for its
/// result, looking at Python's signals every 100 ms.
fn run_on_worker<T: Send + 'static>(
    py: Python<'_>,
    fut: impl std::future::Future<Output = Result<T, DataFusionError>> + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let task = runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    // Receiver is Send but not Sync; the closure below borrows it.
    let rx = Mutex::new(rx);
    loop {
        let got = py.detach(|| rx.lock().unwrap_or_else(|p| p.into_inner()).recv_timeout(SIGNAL_CHECK));
        match got {
            Ok(result) => return result.map_err(to_py),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    task.abort();
                    return Err(e);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                // The task ended without sending: it panicked.
                return Err(crate::errors::ExecutionError::new_err("the query's task panicked (a bug in qlink or DataFusion)"));
            }
        }
    }
}
