// SPDX-License-Identifier: Apache-2.0
//! `QlinkExec`: a plugin's `ql_execution_plan` as a DataFusion
//! `ExecutionPlan` (partitions, ordering, boundedness, children visible to
//! the optimizer, statistics, metrics for EXPLAIN ANALYZE).

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Statistics};
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column as PhysColumn;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, SchedulingType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};

use super::cache::PartitionCache;
use super::handle::{import_schema, PlanHandle};
use super::host_plan;
use super::metrics::convert_metrics;
use super::stream::Pump;
use crate::error::{cstr, ErrorSlot, Result};
use crate::ffi::*;
use crate::plugin::Plugin;
use crate::recipe::ScanRecipe;
use crate::services::TaskView;

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
    if let Some(plan) = host_plan::unwrap(child) {
        return Ok(plan);
    }
    Ok(Arc::new(QlinkExec::new(PlanHandle::borrowed(child, parent))?))
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

    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
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
        let mut exported: Vec<ql_execution_plan> = children.iter().map(|c| host_plan::export(Arc::clone(c), None, import_owned)).collect();
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
        Ok(pump.into_stream(baseline))
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

/// A `ql_execution_plan` we received with ownership, as a DataFusion plan.
pub fn import_owned(raw: ql_execution_plan, plugin: Option<Arc<Plugin>>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(plan) = host_plan::unwrap(&raw) {
        let mut raw = raw;
        if let Some(r) = raw.release {
            unsafe { r(&mut raw) };
        }
        return Ok(plan);
    }
    Ok(Arc::new(QlinkExec::new(PlanHandle::owned(raw, plugin))?))
}
