// SPDX-License-Identifier: Apache-2.0
//! A host's `ql_execution_plan` as a DataFusion `ExecutionPlan` inside the
//! plugin: what a planner's `plan_physical` returns ([`crate::planner`]),
//! so the plugin's own operators (DataFusion's `SortExec`, a join, a custom
//! node) run over subtrees the host planned, by reference: nothing is
//! serialized and no batch is copied.
//!
//! Each partition is executed with the host's task context of the plugin
//! plan that holds it ([`HostTask`], put into every task context the SDK
//! makes), so the host's memory pool and cancellation reach the subtree.
//! A host stream is read with a blocking call; on one of the plugin's
//! Tokio workers it is made inside `block_in_place`, so the other workers
//! keep running and a plugin stream under the host's subtree may wait on
//! the plugin's runtime itself.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use futures::Stream;
use qlink_sys::*;

use crate::error::{take_error, Error, Result};

/// The host's task context of the partition the plugin is executing, kept
/// in the `TaskContext`'s config extensions so a [`HostExec`] below can
/// hand it on. Valid until the plugin's stream for that partition is
/// released, which outlives every stream of the host's made under it.
#[derive(Debug)]
pub struct HostTask(pub *const ql_task_context);

// SAFETY: the ABI makes a task context readable from any thread while it is
// valid (above).
unsafe impl Send for HostTask {}
unsafe impl Sync for HostTask {}

/// An owned host plan (released on drop) and what DataFusion needs of it.
pub struct HostExec {
    raw: ql_execution_plan,
    name: String,
    display: String,
    schema: SchemaRef,
    props: Arc<PlanProperties>,
}

// SAFETY: every member of a ql_execution_plan is thread-safe (qlink/table.h).
unsafe impl Send for HostExec {}
unsafe impl Sync for HostExec {}

impl Drop for HostExec {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            // SAFETY: owned; released once.
            unsafe { r(&mut self.raw) };
        }
    }
}

fn text(f: Option<unsafe extern "C" fn(*const ql_execution_plan) -> *const std::os::raw::c_char>, p: &ql_execution_plan) -> String {
    // SAFETY: borrowed for the plan's lifetime (qlink/table.h).
    f.map(|f| qlink_convert::cstr(unsafe { f(p) })).unwrap_or_default()
}

impl HostExec {
    /// Take ownership of `raw` (released here on failure too): its schema
    /// and partition count are read once.
    pub fn import(raw: ql_execution_plan) -> Result<HostExec> {
        let name = text(raw.name, &raw);
        // From here `raw` is owned by the value: every error path drops it.
        let mut exec = HostExec {
            raw,
            name: if name.is_empty() { "HostExec".into() } else { name },
            display: String::new(),
            schema: Arc::new(Schema::empty()),
            props: Arc::new(PlanProperties::new(
                EquivalenceProperties::new(Arc::new(Schema::empty())),
                Partitioning::UnknownPartitioning(1),
                EmissionType::Incremental,
                Boundedness::Bounded,
            )),
        };
        exec.display = text(exec.raw.display, &exec.raw);
        let (Some(get_schema), Some(get_props), Some(_)) = (exec.raw.get_schema, exec.raw.get_properties, exec.raw.execute) else {
            return Err(Error::invalid(format!("the host's plan {} lacks get_schema, get_properties or execute", exec.name)));
        };
        let mut err: ql_error = zeroed();
        let mut schema = FFI_ArrowSchema::empty();
        // SAFETY: the plan is ours; `schema` is written by the callee.
        let rc = unsafe { get_schema(&exec.raw, (&mut schema as *mut FFI_ArrowSchema).cast(), &mut err) };
        if rc != QL_OK {
            return Err(take_error(rc, &mut err));
        }
        exec.schema = Arc::new(Schema::try_from(&schema)?);
        let mut p: ql_plan_properties = zeroed();
        // SAFETY: as above.
        let rc = unsafe { get_props(&exec.raw, &mut p, &mut err) };
        if rc != QL_OK {
            return Err(take_error(rc, &mut err));
        }
        if p.partition_count < 1 || p.partition_count > i32::MAX as i64 {
            return Err(Error::invalid(format!("the host's plan {} has {} partitions", exec.name, p.partition_count)));
        }
        let bounded =
            if p.boundedness == QL_UNBOUNDED { Boundedness::Unbounded { requires_infinite_memory: false } } else { Boundedness::Bounded };
        exec.props = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(exec.schema.clone()),
            Partitioning::UnknownPartitioning(p.partition_count as usize),
            EmissionType::Incremental,
            bounded,
        ));
        Ok(exec)
    }

    /// The host's plan (borrowed while this value lives).
    pub fn raw(&self) -> *const ql_execution_plan {
        &self.raw
    }
}

impl fmt::Debug for HostExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostExec({})", self.name)
    }
}

impl DisplayAs for HostExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "HostExec: {}", if self.display.is_empty() { &self.name } else { &self.display })
    }
}

impl ExecutionPlan for HostExec {
    fn name(&self) -> &str {
        "HostExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }
    fn apply_expressions(&self, _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> DFResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            return Ok(self);
        }
        Err(DataFusionError::Internal("a host plan is a leaf in the plugin's plan".into()))
    }
    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> DFResult<SendableRecordBatchStream> {
        let ctx = context.session_config().get_extension::<HostTask>().map_or(std::ptr::null(), |t| t.0);
        let execute = self.raw.execute.ok_or_else(|| DataFusionError::Internal("host plan without execute".into()))?;
        let mut stream = FFI_ArrowArrayStream::empty();
        let mut err: ql_error = zeroed();
        // SAFETY: the plan is ours; ctx is the host's, valid as HostTask says.
        let rc = unsafe { execute(&self.raw, partition as i64, ctx, &mut stream, &mut err) };
        if rc != QL_OK {
            return Err(take_error(rc, &mut err).into());
        }
        let reader = ArrowArrayStreamReader::try_new(stream)?;
        Ok(Box::pin(HostStream { schema: self.schema.clone(), reader: Some(reader) }))
    }
}

/// A host partition's batches, read with blocking calls.
struct HostStream {
    schema: SchemaRef,
    reader: Option<ArrowArrayStreamReader>,
}

impl HostStream {
    fn next_batch(&mut self) -> Option<DFResult<RecordBatch>> {
        let reader = self.reader.as_mut()?;
        let on_worker =
            tokio::runtime::Handle::try_current().is_ok_and(|h| matches!(h.runtime_flavor(), tokio::runtime::RuntimeFlavor::MultiThread));
        let next = if on_worker { tokio::task::block_in_place(|| reader.next()) } else { reader.next() };
        match next {
            None => {
                self.reader = None;
                None
            }
            Some(r) => Some(r.map_err(DataFusionError::from)),
        }
    }
}

impl Stream for HostStream {
    type Item = DFResult<RecordBatch>;
    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.get_mut().next_batch())
    }
}

impl RecordBatchStream for HostStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
