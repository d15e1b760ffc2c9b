//! Execution plans both ways.
//! - `QlinkExec`: a plugin's `ql_execution_plan` as a DataFusion
//!   `ExecutionPlan` (partitions, ordering, boundedness, children visible to
//!   the optimizer, statistics, metrics for EXPLAIN ANALYZE). Streams cross
//!   through Arrow's C Stream Interface; the plugin's blocking `get_next`
//!   runs on Tokio's blocking pool, never on an async worker thread.
//! - `export_host_plan`: a DataFusion plan as a `ql_execution_plan` handle
//!   (planner answers and `with_new_children`), zero-copy: its batches cross
//!   as Arrow C arrays referencing DataFusion's buffers.

use std::ffi::CString;
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow::array::{Array, RecordBatch, RecordBatchReader, StructArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use arrow::ffi::from_ffi_and_data_type;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, internal_err};
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column as PhysColumn;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, SchedulingType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, Gauge, Metric, MetricValue, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use futures::StreamExt;

use crate::error::{cstr, guard_status, guard_value, set_df_error, set_error, status_error, ErrorSlot, Result};
use crate::ffi::*;
use crate::plugin::Plugin;
use crate::services::TaskView;
use crate::table::ScanRecipe;

// ------------------------------------------------------------ plan handle

/// An owned plugin plan (released, inside the plugin's hooks, on drop), or a
/// borrowed child kept valid by its parent.
pub struct PlanHandle {
    pub raw: ql_execution_plan,
    pub plugin: Option<Arc<Plugin>>,
    borrowed: Option<(*const ql_execution_plan, Arc<PlanHandle>)>,
}

// SAFETY: every member of a ql_execution_plan is thread-safe (table.h).
unsafe impl Send for PlanHandle {}
unsafe impl Sync for PlanHandle {}

impl PlanHandle {
    pub fn owned(raw: ql_execution_plan, plugin: Option<Arc<Plugin>>) -> Arc<PlanHandle> {
        Arc::new(PlanHandle { raw, plugin, borrowed: None })
    }

    pub fn ptr(&self) -> *const ql_execution_plan {
        match &self.borrowed {
            Some((p, _)) => *p,
            None => &self.raw,
        }
    }

    pub fn plan(&self) -> &ql_execution_plan {
        // SAFETY: owned, or borrowed from a parent we keep alive.
        unsafe { &*self.ptr() }
    }

    fn enter(&self) -> Option<crate::plugin::EnterGuard<'_>> {
        self.plugin.as_ref().map(|p| p.enter())
    }
}

impl Drop for PlanHandle {
    fn drop(&mut self) {
        if self.borrowed.is_none() {
            if let Some(r) = self.raw.release {
                let _g = self.plugin.as_ref().map(|p| p.enter());
                // SAFETY: we own the plan.
                unsafe { r(&mut self.raw) };
            }
        }
    }
}

pub fn import_schema(f: impl FnOnce(*mut ArrowSchema) -> (c_int, ErrorSlot), what: &str) -> Result<SchemaRef> {
    let mut s = ArrowSchema::empty();
    let (status, mut err) = f(&mut s);
    err.check(status, what)?;
    let schema = arrow::datatypes::Schema::try_from(&s).map_err(|e| DataFusionError::Execution(format!("{what}: {e}")))?;
    Ok(Arc::new(schema))
}

// --------------------------------------------------------------- QlinkExec

pub struct QlinkExec {
    handle: Arc<PlanHandle>,
    name: String,
    display: String,
    schema: SchemaRef,
    /// The batches' struct type (imported arrays are typed with it, so the
    /// schema is not parsed again for every batch).
    batch_type: DataType,
    props: Arc<PlanProperties>,
    children: Vec<Arc<dyn ExecutionPlan>>,
    metrics: ExecutionPlanMetricsSet,
    /// How a table scan was made, when a worker can make it again.
    recipe: Option<Arc<ScanRecipe>>,
    /// The plugin's statistics per partition argument, asked once: a plan
    /// never changes, and DataFusion's physical optimizer asks every node
    /// again at each rule (about 124 times a scan in a deep plan).
    stats: PartitionCache<Statistics>,
}

/// A value computed once per partition argument (None: the whole plan) of
/// an immutable plan, such as its statistics. Thread-safe; a computation
/// runs under the lock, so each argument is computed at most once, and an
/// error is not kept (the next request tries again).
pub struct PartitionCache<T: ?Sized>(std::sync::Mutex<Vec<(Option<usize>, Arc<T>)>>);

impl<T: ?Sized> Default for PartitionCache<T> {
    fn default() -> Self {
        PartitionCache(std::sync::Mutex::new(Vec::new()))
    }
}

impl<T: ?Sized> PartitionCache<T> {
    /// The value of `partition`, computed by `compute` on the first request.
    pub fn get_or_try(&self, partition: Option<usize>, compute: impl FnOnce() -> Result<Arc<T>>) -> Result<Arc<T>> {
        let mut slots = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = slots.iter().find(|(p, _)| *p == partition) {
            return Ok(Arc::clone(v));
        }
        let v = compute()?;
        slots.push((partition, Arc::clone(&v)));
        Ok(v)
    }
}

impl fmt::Debug for QlinkExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.display)
    }
}

impl QlinkExec {
    pub fn new(handle: Arc<PlanHandle>) -> Result<QlinkExec> {
        let p = handle.plan();
        let _g = handle.enter();
        let pp = handle.ptr();
        // SAFETY: callbacks of a live plan; strings borrowed for its lifetime and copied here.
        let name = p.name.map(|f| cstr(unsafe { f(pp) })).unwrap_or_default();
        let name = if name.is_empty() { "QlinkExec".to_string() } else { name };
        let display = p.display.map(|f| cstr(unsafe { f(pp) })).unwrap_or_default();
        let get_schema = p.get_schema.ok_or_else(|| DataFusionError::Execution(format!("{name}: get_schema is NULL")))?;
        let schema = import_schema(
            |out| {
                let mut err = ErrorSlot::new();
                let st = unsafe { get_schema(pp, out, err.ptr()) };
                (st, err)
            },
            &format!("{name}: get_schema"),
        )?;
        let mut props: ql_plan_properties = zeroed();
        props.struct_size = std::mem::size_of::<ql_plan_properties>() as u32;
        let mut err = ErrorSlot::new();
        let get_props = p.get_properties.ok_or_else(|| DataFusionError::Execution(format!("{name}: get_properties is NULL")))?;
        let st = unsafe { get_props(pp, &mut props, err.ptr()) };
        err.check_with(st, || format!("{name}: get_properties"))?;
        let mut ordering = Vec::new();
        for i in 0..props.n_ordering.max(0) as usize {
            // SAFETY: n_ordering keys owned by the plan.
            let k = unsafe { *props.ordering.add(i) };
            if k.column < 0 || k.column as usize >= schema.fields().len() {
                return Err(DataFusionError::Execution(format!("{name}: ordering column {} out of range", k.column)));
            }
            let col: Arc<dyn PhysicalExpr> = Arc::new(PhysColumn::new(schema.field(k.column as usize).name(), k.column as usize));
            ordering.push(PhysicalSortExpr {
                expr: col,
                options: arrow::compute::SortOptions {
                    descending: k.flags & QL_SORT_DESC != 0,
                    nulls_first: k.flags & QL_SORT_NULLS_FIRST != 0,
                },
            });
        }
        let eq = if ordering.is_empty() {
            EquivalenceProperties::new(Arc::clone(&schema))
        } else {
            EquivalenceProperties::new_with_orderings(Arc::clone(&schema), [ordering])
        };
        let boundedness = if props.boundedness == QL_UNBOUNDED {
            Boundedness::Unbounded { requires_infinite_memory: false }
        } else {
            Boundedness::Bounded
        };
        let n = props.partition_count.max(1) as usize;
        // Our streams take part in Tokio's cooperative budget themselves
        // (make_cooperative in execute), so DataFusion adds no
        // CooperativeExec node above every plugin scan.
        let plan_props = PlanProperties::new(eq, Partitioning::UnknownPartitioning(n), EmissionType::Incremental, boundedness)
            .with_scheduling_type(SchedulingType::Cooperative);
        let mut children: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
        let count = p.child_count.map(|f| unsafe { f(pp) }).unwrap_or(0);
        for i in 0..count.max(0) {
            let child = p.child.map(|f| unsafe { f(pp, i) }).unwrap_or(std::ptr::null());
            if child.is_null() {
                return Err(DataFusionError::Execution(format!("{name}: child {i} is NULL")));
            }
            children.push(import_child(child, &handle)?);
        }
        let batch_type = DataType::Struct(schema.fields().clone());
        drop(_g);
        Ok(QlinkExec {
            handle,
            name,
            display,
            schema,
            batch_type,
            props: Arc::new(plan_props),
            children,
            metrics: ExecutionPlanMetricsSet::new(),
            recipe: None,
            stats: PartitionCache::default(),
        })
    }

    pub fn handle(&self) -> &Arc<PlanHandle> {
        &self.handle
    }

    /// Attach the recipe this table scan was made from.
    pub fn with_recipe(mut self, recipe: ScanRecipe) -> QlinkExec {
        self.recipe = Some(Arc::new(recipe));
        self
    }

    /// The recipe of a table scan opened from a spec, which another process
    /// can rebuild the scan from. None for planner nodes, table-function
    /// scans, plans from other sources, and any plan with children (their
    /// state lives in this process).
    pub fn recipe(&self) -> Option<&Arc<ScanRecipe>> {
        self.recipe.as_ref().filter(|_| self.children.is_empty())
    }

    /// The plugin's own display text of this plan.
    pub fn display(&self) -> &str {
        &self.display
    }
}

/// A child of a plugin plan: a host plan we exported comes back as the very
/// DataFusion plan it wraps (so EXPLAIN shows it and nothing is copied);
/// anything else is a borrowed plugin plan.
fn import_child(child: *const ql_execution_plan, parent: &Arc<PlanHandle>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(plan) = unwrap_host_plan(child) {
        return Ok(plan);
    }
    let h = Arc::new(PlanHandle {
        // SAFETY: a bitwise copy of the borrowed child; never released (borrowed).
        raw: unsafe { std::ptr::read(child) },
        plugin: parent.plugin.clone(),
        borrowed: Some((child, Arc::clone(parent))),
    });
    Ok(Arc::new(QlinkExec::new(h)?))
}

impl DisplayAs for QlinkExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        if self.display.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}: {}", self.name, self.display)
        }
    }
}

fn convert_metrics(m: &ql_metrics, out: &mut MetricsSet) {
    for i in 0..m.count.max(0) as usize {
        // SAFETY: count items owned by the snapshot.
        let it = unsafe { &*m.items.add(i) };
        let raw_name = cstr(it.name);
        // The host counts output rows and its own compute time itself; a
        // plugin's figures of the same name would be summed into them.
        let name: std::borrow::Cow<'static, str> = match raw_name.as_str() {
            "output_rows" | "output_batches" => continue,
            "elapsed_compute" => "plugin_elapsed_compute".into(),
            _ => raw_name.into(),
        };
        let partition = if it.partition < 0 { None } else { Some(it.partition as usize) };
        let v = it.value.max(0) as usize;
        let value = match it.kind {
            QL_METRIC_TIME_NS => {
                let t = Time::new();
                t.add_duration(std::time::Duration::from_nanos(v as u64));
                MetricValue::Time { name, time: t }
            }
            QL_METRIC_GAUGE => {
                let g = Gauge::new();
                g.set(v);
                MetricValue::Gauge { name, gauge: g }
            }
            _ => {
                let c = Count::new();
                c.add(v);
                MetricValue::Count { name, count: c }
            }
        };
        out.push(Arc::new(Metric::new(value, partition)));
    }
}

impl ExecutionPlan for QlinkExec {
    fn name(&self) -> &str {
        &self.name
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.children.iter().collect()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() == self.children.len() && children.iter().zip(&self.children).all(|(a, b)| Arc::ptr_eq(a, b)) {
            return Ok(self);
        }
        let p = self.handle.plan();
        let Some(wnc) = p.with_new_children else {
            return Err(DataFusionError::NotImplemented(format!("{} cannot take new children", self.name)));
        };
        let mut exported: Vec<ql_execution_plan> = children.iter().map(|c| export_host_plan(Arc::clone(c), None)).collect();
        let mut out: ql_execution_plan = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.handle.enter();
            // SAFETY: children are moved into the callee on success and failure.
            unsafe { wnc(self.handle.ptr(), exported.as_mut_ptr(), exported.len() as i64, &mut out, err.ptr()) }
        };
        std::mem::forget(exported);
        err.check_with(st, || format!("{}: with_new_children", self.name))?;
        Ok(Arc::new(QlinkExec::new(PlanHandle::owned(out, self.handle.plugin.clone()))?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let p = self.handle.plan();
        let Some(exec) = p.execute else {
            return internal_err!("{}: execute is NULL", self.name);
        };
        let task = TaskView::new(context, partition, self.handle.plugin.clone());
        let mut stream = ArrowArrayStream::empty();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.handle.enter();
            // SAFETY: the task context lives in `task`, which the stream keeps alive below.
            unsafe { exec(self.handle.ptr(), partition as i64, &task.raw, &mut stream, err.ptr()) }
        };
        err.check_with(st, || format!("{}: execute partition {partition}", self.name))?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let pump = Pump {
            stream,
            task,
            handle: Arc::clone(&self.handle),
            schema: Arc::clone(&self.schema),
            batch_type: self.batch_type.clone(),
            name: self.name.clone(),
            elapsed: baseline.elapsed_compute().clone(),
        };
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
            return Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(Arc::clone(&self.schema), s))));
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
        Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(Arc::clone(&self.schema), s))))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        let mut set = self.metrics.clone_inner();
        if let Some(get) = self.handle.plan().get_metrics {
            let mut m: ql_metrics = zeroed();
            let mut err = ErrorSlot::new();
            let st = {
                let _g = self.handle.enter();
                unsafe { get(self.handle.ptr(), &mut m, err.ptr()) }
            };
            if st == QL_OK {
                convert_metrics(&m, &mut set);
                if let Some(r) = m.release {
                    unsafe { r(&mut m) };
                }
            }
        }
        Some(set)
    }

    #[allow(deprecated)]
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        self.stats.get_or_try(partition, || Ok(self.plugin_statistics(partition)))
    }
}

impl QlinkExec {
    /// The plugin's statistics of `partition` (None: every partition);
    /// unknown when the plugin has none or cannot tell (they are advisory).
    fn plugin_statistics(&self, partition: Option<usize>) -> Arc<Statistics> {
        let Some(get) = self.handle.plan().get_statistics else {
            return Arc::new(Statistics::new_unknown(&self.schema));
        };
        let mut s: ql_statistics = zeroed();
        s.struct_size = std::mem::size_of::<ql_statistics>() as u32;
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.handle.enter();
            unsafe { get(self.handle.ptr(), partition.map(|p| p as i64).unwrap_or(-1), &mut s, err.ptr()) }
        };
        if st != QL_OK {
            return Arc::new(Statistics::new_unknown(&self.schema));
        }
        let owned = crate::stats::OwnedStats(s);
        Arc::new(crate::stats::to_statistics(&owned.0, &self.schema))
    }
}

/// Sets the task's cancellation flag when the consumer drops the stream.
struct CancelOnDrop(Arc<AtomicBool>);
impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Reads a plugin stream on a blocking thread and feeds the channel.
struct Pump {
    stream: ArrowArrayStream,
    task: Box<TaskView>,
    handle: Arc<PlanHandle>,
    schema: SchemaRef,
    batch_type: DataType,
    name: String,
    /// Time spent in the plugin's get_next and the import (elapsed_compute).
    elapsed: Time,
}

// SAFETY: the stream is used by one thread at a time (moved into the pump).
unsafe impl Send for Pump {}

impl Pump {
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
        let data = unsafe { from_ffi_and_data_type(array, self.batch_type.clone()) }.map_err(|e| DataFusionError::Execution(format!("{}: {e}", self.name)))?;
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

// ------------------------------------------------------------ host export

/// A DataFusion plan behind a `ql_execution_plan`.
struct HostPlan {
    plan: Arc<dyn ExecutionPlan>,
    task: Option<Arc<TaskContext>>,
    name: CString,
    display: CString,
    ordering: Vec<ql_sort_key>,
    children: Vec<ql_execution_plan>,
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
            match import_owned(c, None) {
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
                std::ptr::write(out, export_host_plan(plan, h.task.clone()));
                QL_OK
            }
            Err(e) => set_df_error(error, &e),
        }
    })
}

/// A `ql_execution_plan` we received with ownership, as a DataFusion plan.
pub fn import_owned(raw: ql_execution_plan, plugin: Option<Arc<Plugin>>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(plan) = unwrap_host_plan(&raw) {
        let mut raw = raw;
        if let Some(r) = raw.release {
            unsafe { r(&mut raw) };
        }
        return Ok(plan);
    }
    Ok(Arc::new(QlinkExec::new(PlanHandle::owned(raw, plugin))?))
}

/// Our own exported plans are recognised by their release callback.
pub fn unwrap_host_plan(p: *const ql_execution_plan) -> Option<Arc<dyn ExecutionPlan>> {
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
/// captured when the plan was exported.
unsafe extern "C" fn hp_execute(
    p: *const ql_execution_plan,
    partition: i64,
    ctx: *const ql_task_context,
    out: *mut ArrowArrayStream,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "host plan execute", || {
        let h = host(p);
        let task = crate::services::task_context_of(ctx)
            .or_else(|| h.task.clone())
            .unwrap_or_else(|| Arc::new(TaskContext::default()));
        let rt = tokio::runtime::Handle::try_current().ok();
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
        let part = match partition {
            -1 => None,
            n if n >= 0 && (n as usize) < count => Some(n as usize),
            n => return set_error(error, QL_EINVAL, &format!("{}: partition {n} out of range (0..{count}, or -1)", h.plan.name())),
        };
        let args = datafusion::physical_plan::StatisticsArgs::new().with_partition(part);
        match datafusion::physical_plan::StatisticsContext::new().compute(h.plan.as_ref(), &args) {
            Ok(s) => {
                std::ptr::write(out, crate::stats::from_statistics(&s));
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
/// `task`: the context to execute with when the caller's is not ours.
pub fn export_host_plan(plan: Arc<dyn ExecutionPlan>, task: Option<Arc<TaskContext>>) -> ql_execution_plan {
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
    let children = plan.children().into_iter().map(|c| export_host_plan(Arc::clone(c), task.clone())).collect();
    let hp = Box::new(HostPlan {
        name: CString::new(plan.name()).unwrap_or_default(),
        display: CString::new(display.trim_end().replace('\0', " ")).unwrap_or_default(),
        plan,
        task,
        ordering,
        children,
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

#[allow(dead_code)]
fn _unused(_: &dyn Array) {}
