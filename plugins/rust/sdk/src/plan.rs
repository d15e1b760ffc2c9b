// SPDX-License-Identifier: Apache-2.0
//! A DataFusion `ExecutionPlan` as a `ql_execution_plan` (qlink/table.h):
//! the physical plan a table provider's `scan` made, run partition by
//! partition on the plugin's runtime, its record batches handed to the host
//! as Arrow C streams without copies.
//!
//! The plugin's own nodes are its business, as a C plugin's are: the host
//! sees as children only the host plans a planner's answer runs over
//! ([`HostExec`] leaves), and may replace them (`with_new_children`). Each
//! `execute` gets a TaskContext over the host's memory pool and object
//! stores; the stream keeps the plan, the session and that context alive,
//! so it may outlive the plan object.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::execution_plan::Boundedness;
use datafusion::physical_plan::{displayable, ExecutionPlan, ExecutionPlanProperties};
use futures::StreamExt;
use qlink_sys::*;

use crate::error::{guard, guard_value, Error, Result};
use crate::host_exec::HostExec;
use crate::services::memory_pool::HostPool;
use crate::services::object_store::with_registry;
use crate::session::{task_context, PluginSession};

struct PlanState {
    plan: Arc<dyn ExecutionPlan>,
    session: Arc<PluginSession>,
    consumer: String,
    name: CString,
    display: CString,
    /// The host plans among the plan's leaves, in pre-order (borrowed from
    /// the [`HostExec`]s the plan holds).
    children: Vec<*const ql_execution_plan>,
}

fn state(p: *const ql_execution_plan) -> &'static PlanState {
    // SAFETY: private_data is the PlanState this module boxed.
    unsafe { crate::private::borrow((*p).private_data) }
}

/// Write a schema to a caller-owned `out`.
pub fn export_schema(schema: &arrow::datatypes::Schema, out: *mut ArrowSchema) -> Result<()> {
    let s = FFI_ArrowSchema::try_from(schema)?;
    // SAFETY: the caller owns `out`; arrow-rs's FFI_ArrowSchema is the C struct.
    unsafe { std::ptr::write(out, s) };
    Ok(())
}

/// A plan as a `ql_execution_plan` the caller owns. `consumer` names the
/// plugin's memory reservations ("<plugin>.<table>").
pub fn export_plan(plan: Arc<dyn ExecutionPlan>, session: Arc<PluginSession>, consumer: String) -> ql_execution_plan {
    let name = CString::new(plan.name().replace('\0', " ")).unwrap_or_default();
    let display = CString::new(display_of(&plan).replace('\0', " ")).unwrap_or_default();
    let children = host_leaves(&plan).iter().map(|h| h.raw()).collect();
    let st = Box::new(PlanState { plan, session, consumer, name, display, children });
    let mut out: ql_execution_plan = zeroed();
    out.struct_size = std::mem::size_of::<ql_execution_plan>() as u32;
    out.name = Some(plan_name);
    out.display = Some(plan_display);
    out.get_schema = Some(plan_schema);
    out.get_properties = Some(plan_properties);
    out.child_count = Some(plan_child_count);
    out.child = Some(plan_child);
    out.with_new_children = Some(plan_with_new_children);
    out.execute = Some(plan_execute);
    out.get_statistics = Some(plan_statistics);
    out.release = Some(plan_release);
    out.private_data = crate::private::into_private(st);
    out
}

unsafe extern "C" fn plan_name(p: *const ql_execution_plan) -> *const c_char {
    state(p).name.as_ptr()
}

unsafe extern "C" fn plan_display(p: *const ql_execution_plan) -> *const c_char {
    state(p).display.as_ptr()
}

unsafe extern "C" fn plan_schema(p: *const ql_execution_plan, out: *mut ArrowSchema, error: *mut ql_error) -> c_int {
    guard(error, "execution plan schema", || export_schema(state(p).plan.schema().as_ref(), out))
}

unsafe extern "C" fn plan_properties(p: *const ql_execution_plan, out: *mut ql_plan_properties, error: *mut ql_error) -> c_int {
    guard(error, "execution plan properties", || {
        let plan = &state(p).plan;
        let o = &mut *out;
        o.struct_size = std::mem::size_of::<ql_plan_properties>() as u32;
        o.boundedness = if matches!(plan.boundedness(), Boundedness::Bounded) { QL_BOUNDED } else { QL_UNBOUNDED };
        o.partition_count = plan.output_partitioning().partition_count().max(1) as i64;
        o.n_ordering = 0;
        o.ordering = std::ptr::null();
        Ok(())
    })
}

/// One line for EXPLAIN: the root's detail (hosts print its name before
/// it), then the plugin's own nodes beneath it down to the host's plans,
/// which the host shows as children.
fn display_of(plan: &Arc<dyn ExecutionPlan>) -> String {
    let line = |p: &Arc<dyn ExecutionPlan>| displayable(p.as_ref()).one_line().to_string().trim_end().to_string();
    let top = line(plan);
    // DataFusion's line starts with the operator's name, which hosts print.
    let mut out = match top.split_once(": ") {
        Some((name, rest)) if !name.contains(' ') => rest.to_string(),
        _ => top.clone(),
    };
    let mut stack: Vec<&Arc<dyn ExecutionPlan>> = plan.children().into_iter().rev().collect();
    while let Some(p) = stack.pop() {
        if p.is::<HostExec>() {
            continue;
        }
        out.push_str(" <- ");
        out.push_str(&line(p));
        stack.extend(p.children().into_iter().rev());
    }
    out
}

/// The host plans among `plan`'s nodes, in pre-order.
fn host_leaves(plan: &Arc<dyn ExecutionPlan>) -> Vec<&HostExec> {
    let mut out = Vec::new();
    let mut stack = vec![plan];
    while let Some(p) = stack.pop() {
        if let Some(h) = p.downcast_ref::<HostExec>() {
            out.push(h);
        }
        stack.extend(p.children().into_iter().rev());
    }
    out
}

unsafe extern "C" fn plan_child_count(p: *const ql_execution_plan) -> i64 {
    guard_value(0, || state(p).children.len() as i64)
}

unsafe extern "C" fn plan_child(p: *const ql_execution_plan, i: i64) -> *const ql_execution_plan {
    guard_value(None, || state(p).children.get(usize::try_from(i).ok()?).copied()).unwrap_or(std::ptr::null())
}

unsafe extern "C" fn plan_with_new_children(
    p: *const ql_execution_plan,
    children: *mut ql_execution_plan,
    n: i64,
    out: *mut ql_execution_plan,
    error: *mut ql_error,
) -> c_int {
    // The children are moved in: each is owned by a HostExec (released on
    // drop) before anything can fail.
    let mut imported = Vec::new();
    let mut failed = None;
    for i in 0..n.max(0) as usize {
        let c = std::ptr::read(children.add(i));
        match HostExec::import(c) {
            Ok(h) => imported.push(Arc::new(h) as Arc<dyn ExecutionPlan>),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    guard(error, "with_new_children", || {
        if let Some(e) = failed {
            return Err(e);
        }
        let st = state(p);
        if imported.len() != st.children.len() {
            return Err(Error::invalid(format!("{} new children for a plan with {}", imported.len(), st.children.len())));
        }
        let mut next = imported.into_iter();
        let plan = Arc::clone(&st.plan)
            .transform_down(|node| {
                Ok(if node.is::<HostExec>() { Transformed::yes(next.next().expect("counted above")) } else { Transformed::no(node) })
            })?
            .data;
        std::ptr::write(out, export_plan(plan, st.session.clone(), st.consumer.clone()));
        Ok(())
    })
}

unsafe extern "C" fn plan_statistics(p: *const ql_execution_plan, partition: i64, out: *mut ql_statistics, error: *mut ql_error) -> c_int {
    guard(error, "execution plan statistics", || {
        let plan = &state(p).plan;
        let count = plan.output_partitioning().partition_count();
        let Some(part) = qlink_convert::stats::partition_arg(partition, count) else {
            return Err(Error::invalid(format!("statistics of partition {partition} of a plan with {count}")));
        };
        std::ptr::write(out, qlink_convert::stats::plan_statistics(plan.as_ref(), part)?);
        Ok(())
    })
}

unsafe extern "C" fn plan_release(p: *mut ql_execution_plan) {
    guard_value((), || {
        crate::private::drop_box::<PlanState>(&mut (*p).private_data);
        (*p).release = None;
    })
}

unsafe extern "C" fn plan_execute(
    p: *const ql_execution_plan,
    partition: i64,
    ctx: *const ql_task_context,
    out: *mut ArrowArrayStream,
    error: *mut ql_error,
) -> c_int {
    guard(error, "execute", || {
        let st = state(p);
        let parts = st.plan.output_partitioning().partition_count().max(1) as i64;
        if partition < 0 || partition >= parts {
            return Err(Error::invalid(format!("partition {partition} of a plan with {parts}")));
        }
        let registry = if ctx.is_null() || (*ctx).runtime_env.is_null() { std::ptr::null() } else { (*(*ctx).runtime_env).object_stores };
        let (task, pool) = task_context(&st.session, ctx, &st.consumer)?;
        let stream = with_registry(registry, || st.plan.execute(partition as usize, task))?;
        let reader = PartitionReader { schema: st.plan.schema(), stream: Some(stream), pool, ctx, registry };
        std::ptr::write(out, FFI_ArrowArrayStream::new(Box::new(reader)));
        Ok(())
    })
}

/// One partition's batches as a blocking reader (arrow-rs exports it as an
/// Arrow C stream). Polled on the plugin's runtime; checks the host task's
/// cancellation flag before each batch.
struct PartitionReader {
    schema: SchemaRef,
    stream: Option<SendableRecordBatchStream>,
    pool: Arc<HostPool>,
    ctx: *const ql_task_context,
    registry: *const ql_object_store_registry,
}

// SAFETY: the task context and registry are thread-safe to read and valid
// until this reader is dropped (the stream's release).
unsafe impl Send for PartitionReader {}

impl PartitionReader {
    fn cancelled(&self) -> bool {
        if self.ctx.is_null() {
            return false;
        }
        // SAFETY: valid until the stream is released.
        unsafe { (*self.ctx).is_cancelled.is_some_and(|f| f(self.ctx) != 0) }
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        if self.cancelled() {
            self.stream = None;
            return Some(Err(ArrowError::ExternalError(Box::new(Error::new(QL_ECANCELLED, "the query was cancelled")))));
        }
        let stream = self.stream.as_mut()?;
        let _rt = crate::runtime::get().enter();
        let next = with_registry(self.registry, || {
            // A batch that is ready (in memory, decoded) is taken without
            // Tokio's block_on, which parks and wakes this thread; only a
            // stream still waiting on I/O is driven to its next batch.
            let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
            match stream.poll_next_unpin(&mut cx) {
                std::task::Poll::Ready(v) => v,
                std::task::Poll::Pending => crate::runtime::block_on(stream.next()),
            }
        });
        match next {
            None => {
                self.stream = None;
                None
            }
            Some(Ok(b)) => Some(Ok(b)),
            Some(Err(e)) => {
                self.stream = None;
                let q: Error = e.into();
                Some(Err(ArrowError::ExternalError(Box::new(q))))
            }
        }
    }
}

impl Iterator for PartitionReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        // get_next is an extern "C" function in arrow-rs: never unwind.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.next_batch())) {
            Ok(v) => v,
            Err(_) => {
                self.stream = None;
                Some(Err(ArrowError::ExternalError(Box::new(Error::new(QL_EINTERNAL, "panic in a Rust plugin's stream")))))
            }
        }
    }
}

impl RecordBatchReader for PartitionReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for PartitionReader {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _rt = crate::runtime::get().enter();
            self.stream = None;
            self.pool.close();
        }));
    }
}
