// SPDX-License-Identifier: Apache-2.0
//! A DataFusion plan as a `ql_execution_plan` handle (planner answers and
//! `with_new_children`), zero-copy: its batches cross as Arrow C arrays
//! referencing DataFusion's buffers.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column as PhysColumn;
use datafusion::physical_plan::ExecutionPlan;
use futures::StreamExt;

use crate::error::{guard_status, guard_value, set_df_error, set_error, Result};
use crate::ffi::*;
use crate::plugin::Plugin;

/// How an owned `ql_execution_plan` becomes a DataFusion plan (a plugin
/// plan is imported by the layer above, which passes this in).
pub type Import = fn(ql_execution_plan, Option<Arc<Plugin>>) -> Result<Arc<dyn ExecutionPlan>>;

/// A DataFusion plan behind a `ql_execution_plan`.
struct HostPlan {
    plan: Arc<dyn ExecutionPlan>,
    task: Option<Arc<TaskContext>>,
    /// How plans handed to `with_new_children` become DataFusion plans.
    import: Import,
    name: CString,
    display: CString,
    ordering: Vec<ql_sort_key>,
    children: Vec<ql_execution_plan>,
    /// The Tokio runtime the plan was exported from (the host's), entered
    /// when a plugin executes it from a thread of its own: operators that
    /// spawn (RepartitionExec, CoalescePartitionsExec) need one.
    rt: Option<tokio::runtime::Handle>,
}

unsafe fn host(p: *const ql_execution_plan) -> &'static HostPlan {
    &*((*p).private_data as *const HostPlan)
}

unsafe extern "C" fn hp_name(p: *const ql_execution_plan) -> *const c_char {
    guard_value(c"".as_ptr(), || host(p).name.as_ptr())
}

unsafe extern "C" fn hp_display(p: *const ql_execution_plan) -> *const c_char {
    guard_value(c"".as_ptr(), || host(p).display.as_ptr())
}

unsafe extern "C" fn hp_get_schema(p: *const ql_execution_plan, out: *mut ArrowSchema, error: *mut ql_error) -> c_int {
    guard_status(error, "host plan get_schema", || match ArrowSchema::try_from(host(p).plan.schema().as_ref()) {
        Ok(s) => {
            std::ptr::write(out, s);
            QL_OK
        }
        Err(e) => set_error(error, QL_EINTERNAL, &e.to_string()),
    })
}

unsafe extern "C" fn hp_get_properties(p: *const ql_execution_plan, out: *mut ql_plan_properties, error: *mut ql_error) -> c_int {
    guard_status(error, "host plan get_properties", || {
        let h = host(p);
        let props = h.plan.properties();
        (*out).struct_size = std::mem::size_of::<ql_plan_properties>() as u32;
        (*out).boundedness = if props.boundedness.is_unbounded() { QL_UNBOUNDED } else { QL_BOUNDED };
        (*out).partition_count = props.partitioning.partition_count() as i64;
        (*out).n_ordering = h.ordering.len() as i64;
        (*out).ordering = if h.ordering.is_empty() { std::ptr::null() } else { h.ordering.as_ptr() };
        QL_OK
    })
}

unsafe extern "C" fn hp_child_count(p: *const ql_execution_plan) -> i64 {
    guard_value(0, || host(p).children.len() as i64)
}

unsafe extern "C" fn hp_child(p: *const ql_execution_plan, i: i64) -> *const ql_execution_plan {
    guard_value(std::ptr::null(), || host(p).children.get(i as usize).map(|c| c as *const _).unwrap_or(std::ptr::null()))
}

unsafe extern "C" fn hp_with_new_children(
    p: *const ql_execution_plan,
    children: *mut ql_execution_plan,
    n: i64,
    out: *mut ql_execution_plan,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "host plan with_new_children", || {
        let h = host(p);
        let mut new_children = Vec::new();
        let mut failure = None;
        for i in 0..n.max(0) as usize {
            let c = std::ptr::read(children.add(i));
            (*children.add(i)).release = None;
            match (h.import)(c, None) {
                Ok(plan) => new_children.push(plan),
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = failure {
            return set_df_error(error, &e);
        }
        #[allow(deprecated)]
        match Arc::clone(&h.plan).with_new_children(new_children) {
            Ok(plan) => {
                std::ptr::write(out, export(plan, h.task.clone(), h.import));
                QL_OK
            }
            Err(e) => set_df_error(error, &e),
        }
    })
}

/// Our own exported plans are recognised by their release callback.
pub fn unwrap(p: *const ql_execution_plan) -> Option<Arc<dyn ExecutionPlan>> {
    // SAFETY: reading a function pointer of a plan the caller vouches for.
    unsafe {
        if crate::error::ours((*p).private_data) {
            return Some(Arc::clone(&host(p).plan));
        }
    }
    None
}

/// Execute a host plan's partition with the caller's task context when it is
/// one of ours (the DataFusion TaskContext it wraps), else the context
/// captured when the plan was exported; inside the caller's Tokio runtime,
/// or the one the plan was exported from when the caller is a plugin's
/// thread.
unsafe extern "C" fn hp_execute(
    p: *const ql_execution_plan,
    partition: i64,
    ctx: *const ql_task_context,
    out: *mut ArrowArrayStream,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "host plan execute", || {
        let h = host(p);
        let task = crate::services::task_context_of(ctx).or_else(|| h.task.clone()).unwrap_or_else(|| Arc::new(TaskContext::default()));
        let rt = tokio::runtime::Handle::try_current().ok().or_else(|| h.rt.clone());
        let _e = rt.as_ref().map(|h| h.enter());
        let stream = match h.plan.execute(partition.max(0) as usize, task) {
            Ok(s) => s,
            Err(e) => return set_df_error(error, &e),
        };
        let reader = BlockingReader { schema: stream.schema(), stream, rt };
        std::ptr::write(out, ArrowArrayStream::new(Box::new(reader)));
        QL_OK
    })
}

/// Statistics of a host plan as DataFusion computes them (a
/// `StatisticsContext` walk of the plan, which derives a node's figures from
/// its children's; the deprecated `partition_statistics` alone answers
/// "unknown" for nodes such as FilterExec): row count, byte size and per-column null
/// count, min/max and distinct count, each with its exactness, so a planner
/// sees what DataFusion knows about the children it holds.
unsafe extern "C" fn hp_get_statistics(
    p: *const ql_execution_plan,
    partition: i64,
    out: *mut ql_statistics,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "host plan get_statistics", || {
        if out.is_null() {
            return set_error(error, QL_EINVAL, "host plan get_statistics: out is NULL");
        }
        let h = host(p);
        let count = h.plan.properties().partitioning.partition_count();
        let Some(part) = crate::stats::partition_arg(partition, count) else {
            let msg = format!("{}: partition {partition} out of range (0..{count}, or -1)", h.plan.name());
            return set_error(error, QL_EINVAL, &msg);
        };
        match crate::stats::plan_statistics(h.plan.as_ref(), part) {
            Ok(s) => {
                std::ptr::write(out, s);
                QL_OK
            }
            Err(e) => set_df_error(error, &e),
        }
    })
}

unsafe extern "C" fn hp_release(p: *mut ql_execution_plan) {
    guard_value((), || {
        if !(*p).private_data.is_null() {
            crate::error::unmark_ours((*p).private_data);
            let mut h = Box::from_raw((*p).private_data as *mut HostPlan);
            for c in h.children.iter_mut() {
                if let Some(r) = c.release {
                    r(c);
                }
            }
        }
        (*p).private_data = std::ptr::null_mut();
        (*p).release = None;
    })
}

/// Export a DataFusion plan as a qlink execution plan (owned by the caller).
/// `task`: the context to execute with when the caller's is not ours;
/// `import`: how plans handed to `with_new_children` come back.
pub fn export(plan: Arc<dyn ExecutionPlan>, task: Option<Arc<TaskContext>>, import: Import) -> ql_execution_plan {
    let display = datafusion::physical_plan::displayable(plan.as_ref()).one_line().to_string();
    let ordering = plan
        .properties()
        .output_ordering()
        .map(|lex| {
            lex.iter()
                .filter_map(|s| {
                    let c = s.expr.downcast_ref::<PhysColumn>()?;
                    let mut flags = 0;
                    if s.options.descending {
                        flags |= QL_SORT_DESC;
                    }
                    if s.options.nulls_first {
                        flags |= QL_SORT_NULLS_FIRST;
                    }
                    Some(ql_sort_key { column: c.index() as i32, flags })
                })
                .collect()
        })
        .unwrap_or_default();
    let children = plan.children().into_iter().map(|c| export(Arc::clone(c), task.clone(), import)).collect();
    let hp = Box::new(HostPlan {
        name: CString::new(plan.name()).unwrap_or_default(),
        display: CString::new(display.trim_end().replace('\0', " ")).unwrap_or_default(),
        plan,
        task,
        import,
        ordering,
        children,
        rt: tokio::runtime::Handle::try_current().ok(),
    });
    ql_execution_plan {
        struct_size: std::mem::size_of::<ql_execution_plan>() as u32,
        name: Some(hp_name),
        display: Some(hp_display),
        get_schema: Some(hp_get_schema),
        get_properties: Some(hp_get_properties),
        child_count: Some(hp_child_count),
        child: Some(hp_child),
        with_new_children: Some(hp_with_new_children),
        execute: Some(hp_execute),
        get_statistics: Some(hp_get_statistics),
        get_metrics: None,
        release: Some(hp_release),
        private_data: {
            let p = Box::into_raw(hp) as *mut c_void;
            crate::error::mark_ours(p);
            p
        },
    }
}

/// A DataFusion stream as a blocking RecordBatchReader (for Arrow's C
/// stream export). Polls inside the Tokio runtime the plan was executed
/// from, so operators that spawn keep working on the plugin's threads.
struct BlockingReader {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
    rt: Option<tokio::runtime::Handle>,
}

impl Iterator for BlockingReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        let _e = self.rt.as_ref().map(|h| h.enter());
        crate::blocking::block_on(self.stream.next()).map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for BlockingReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
