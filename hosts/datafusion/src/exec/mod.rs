// SPDX-License-Identifier: Apache-2.0
//! Execution plans both ways.
//! - `QlinkExec` (plugin_plan.rs): a plugin's `ql_execution_plan` as a
//!   DataFusion `ExecutionPlan`. Streams cross through Arrow's C Stream
//!   Interface (stream.rs); the plugin's blocking `get_next` runs on
//!   Tokio's blocking pool, never on an async worker thread.
//! - `export_host_plan` (host_plan.rs): a DataFusion plan as a
//!   `ql_execution_plan` handle (planner answers and `with_new_children`),
//!   zero-copy: its batches cross as Arrow C arrays referencing
//!   DataFusion's buffers.
//! - handle.rs: the owned or borrowed plugin plan; cache.rs: values kept
//!   per partition; metrics.rs: plugin metrics as DataFusion's.

use std::sync::Arc;

use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;

use crate::ffi::ql_execution_plan;

mod cache;
mod handle;
mod host_plan;
mod metrics;
mod plugin_plan;
mod stream;

pub use cache::PartitionCache;
pub use handle::{import_schema, PlanHandle};
pub use host_plan::unwrap as unwrap_host_plan;
pub use plugin_plan::{import_owned, QlinkExec};

/// Export a DataFusion plan as a qlink execution plan (owned by the caller).
/// `task`: the context to execute with when the caller's is not ours.
pub fn export_host_plan(plan: Arc<dyn ExecutionPlan>, task: Option<Arc<TaskContext>>) -> ql_execution_plan {
    host_plan::export(plan, task, import_owned)
}
