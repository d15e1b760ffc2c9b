// SPDX-License-Identifier: Apache-2.0
//! A plugin's Arrow C stream read as a DataFusion stream. The plugin's
//! blocking `get_next` never runs on an async worker thread as such: in
//! place under `block_in_place` on a multi-thread runtime, else on a
//! blocking thread feeding a channel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow::array::{Array, RecordBatch, StructArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::ffi::from_ffi_and_data_type;
use datafusion::common::internal_err;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::metrics::{BaselineMetrics, Time};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

use super::handle::PlanHandle;
use crate::error::{cstr, status_error, Result};
use crate::ffi::*;
use crate::services::TaskView;

/// Sets the task's cancellation flag when the consumer drops the stream.
struct CancelOnDrop(Arc<AtomicBool>);
impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Reads a plugin stream on a blocking thread and feeds the channel.
pub(super) struct Pump {
    pub(super) stream: ArrowArrayStream,
    pub(super) task: Box<TaskView>,
    pub(super) handle: Arc<PlanHandle>,
    pub(super) schema: SchemaRef,
    pub(super) batch_type: DataType,
    pub(super) name: String,
    /// Time spent in the plugin's get_next and the import (elapsed_compute).
    pub(super) elapsed: Time,
}

// SAFETY: the stream is used by one thread at a time (moved into the pump).
unsafe impl Send for Pump {}

impl Pump {
    /// The plan's batches as a DataFusion stream: read in place on a
    /// multi-thread runtime, else by a blocking thread feeding a channel
    /// (see [`stream_mode`]); the task is cancelled when the consumer drops
    /// the stream.
    pub(super) fn into_stream(self, baseline: BaselineMetrics) -> SendableRecordBatchStream {
        let pump = self;
        let schema = Arc::clone(&pump.schema);
        let cancelled = Arc::clone(&pump.task.cancelled);
        let handle = tokio::runtime::Handle::try_current().ok();
        let mode = stream_mode(handle.as_ref());
        if mode != StreamMode::Channel {
            // Direct (forced, for measurement): get_next runs right here on
            // the async worker.
            // InPlace (multi-thread runtime): each get_next runs in
            // block_in_place, which hands this worker's other tasks to
            // another thread first, so a blocking plugin stalls no async
            // worker, with no thread hop on the batch's way to the consumer.
            let direct = mode == StreamMode::Direct;
            let guard = CancelOnDrop(cancelled);
            let s = futures::stream::unfold(Some((pump, guard, baseline)), move |state| async move {
                let (mut pump, guard, baseline) = state?;
                // block_in_place only inside a runtime task (a worker hands
                // its other tasks away first). A thread blocked in
                // Runtime::block_on (no task id: a Python caller, a CLI
                // main) reads directly: block_in_place there drops the
                // cooperative budget for the rest of the poll and tokio
                // never restores it off a worker, so the query would never
                // yield (no Ctrl-C check until it ends).
                let item = if direct || tokio::task::try_id().is_none() {
                    pump.next_guarded()
                } else {
                    tokio::task::block_in_place(|| pump.next_guarded())
                };
                let item = match item {
                    Ok(Some(b)) => b,
                    Ok(None) => {
                        pump.finish();
                        return None;
                    }
                    Err(e) => {
                        pump.finish();
                        return Some((Err(e), None));
                    }
                };
                match baseline.record_poll(std::task::Poll::Ready(Some(Ok(item)))) {
                    std::task::Poll::Ready(Some(v)) => Some((v, Some((pump, guard, baseline)))),
                    _ => None,
                }
            });
            return make_cooperative(Box::pin(RecordBatchStreamAdapter::new(schema, s)));
        }
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(2);
        let spawn = move || pump.run(tx);
        match handle {
            Some(h) => {
                h.spawn_blocking(spawn);
            }
            None => {
                std::thread::spawn(spawn);
            }
        }
        let guard = CancelOnDrop(cancelled);
        let s = futures::stream::unfold((rx, guard, baseline), |(mut rx, guard, baseline)| async move {
            let item = rx.recv().await?;
            let item = baseline.record_poll(std::task::Poll::Ready(Some(item)));
            match item {
                std::task::Poll::Ready(Some(v)) => Some((v, (rx, guard, baseline))),
                _ => None,
            }
        });
        make_cooperative(Box::pin(RecordBatchStreamAdapter::new(schema, s)))
    }

    fn next(&mut self) -> Result<Option<RecordBatch>> {
        let _timer = self.elapsed.timer();
        let Some(get_next) = self.stream.get_next else {
            return internal_err!("{}: stream without get_next", self.name);
        };
        let mut array = ArrowArray::empty();
        let code = {
            let _g = self.handle.enter();
            // SAFETY: a live stream; `array` is ours.
            unsafe { get_next(&mut self.stream, &mut array) }
        };
        if code != 0 {
            let msg = match self.stream.get_last_error {
                Some(f) => {
                    let _g = self.handle.enter();
                    cstr(unsafe { f(&mut self.stream) })
                }
                None => String::new(),
            };
            // SAFETY: errno-style code from the stream.
            let status = unsafe { ql_status_from_errno(code) };
            let msg = if msg.is_empty() { format!("{}: stream failed with code {code}", self.name) } else { msg };
            return Err(status_error(status, &msg, &self.name));
        }
        if array.is_released() {
            return Ok(None);
        }
        // SAFETY: a valid array of the plan's struct type; ownership moves into Arrow.
        if let Some(p) = &self.handle.plugin {
            crate::plugin::keep_loaded(&mut array, p);
        }
        let data = unsafe { from_ffi_and_data_type(array, self.batch_type.clone()) }
            .map_err(|e| DataFusionError::Execution(format!("{}: {e}", self.name)))?;
        let sa = StructArray::from(data);
        let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(sa.len()));
        let batch = RecordBatch::try_new_with_options(Arc::clone(&self.schema), sa.columns().to_vec(), &opts)
            .map_err(|e| DataFusionError::Execution(format!("{}: batch does not match the plan's schema: {e}", self.name)))?;
        Ok(Some(batch))
    }

    fn next_guarded(&mut self) -> Result<Option<RecordBatch>> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.next()))
            .unwrap_or_else(|_| Err(DataFusionError::Internal(format!("{}: panic while reading the stream", self.name))))
    }

    /// Release the stream (inside the plugin's hooks) before the task context.
    fn finish(&mut self) {
        if let Some(r) = self.stream.release.take() {
            let _g = self.handle.enter();
            let mut s = std::mem::replace(&mut self.stream, ArrowArrayStream::empty());
            s.release = Some(r);
            unsafe { r(&mut s) };
        }
    }

    fn run(mut self, tx: tokio::sync::mpsc::Sender<Result<RecordBatch>>) {
        loop {
            let item = self.next_guarded();
            let stop = !matches!(item, Ok(Some(_)));
            let send = match item {
                Ok(None) => break,
                Ok(Some(b)) => Ok(b),
                Err(e) => Err(e),
            };
            if tx.blocking_send(send).is_err() || stop {
                break;
            }
            if self.task.cancelled.load(Ordering::Relaxed) {
                break;
            }
        }
        self.finish();
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        self.finish();
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum StreamMode {
    Direct,
    InPlace,
    Channel,
}

/// How plugin streams are read: "inplace" (block_in_place on a multi-thread
/// runtime) or "channel" (a blocking-pool thread feeding a channel; always
/// used on a current-thread runtime, where block_in_place is not allowed).
/// QLINK_DF_STREAM=inplace|channel|direct overrides the choice; "direct"
/// calls get_next on the async worker itself and exists for measurement
/// only (a blocking plugin would stall the worker). Measured on the
/// 1,040-row in-memory scan, direct and inplace cost the same.
fn stream_mode(handle: Option<&tokio::runtime::Handle>) -> StreamMode {
    static FORCED: std::sync::OnceLock<Option<StreamMode>> = std::sync::OnceLock::new();
    let forced = *FORCED.get_or_init(|| match std::env::var("QLINK_DF_STREAM").as_deref() {
        Ok("direct") => Some(StreamMode::Direct),
        Ok("inplace") => Some(StreamMode::InPlace),
        Ok("channel") => Some(StreamMode::Channel),
        _ => None,
    });
    let multi = handle.is_some_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    match forced {
        Some(StreamMode::Direct) if handle.is_some() => StreamMode::Direct,
        Some(StreamMode::Channel) => StreamMode::Channel,
        _ if multi => StreamMode::InPlace,
        _ => StreamMode::Channel,
    }
}
