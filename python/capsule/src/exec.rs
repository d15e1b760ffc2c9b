// SPDX-License-Identifier: Apache-2.0
//! The plan a capsule scan returns: datafusion-ffi's `FFI_ExecutionPlan`
//! (all of its fields are public) built by its own constructor, with
//! `execute` replaced by one that drops the consumer's `FFI_TaskContext`
//! unread and runs the plan with the provider's task context. (Upstream's
//! `execute` converts the incoming context, wrapping every function of the
//! consumer's session, on every call.) `clone` and `with_new_children` are
//! replaced too, so copies the consumer makes keep this `execute`.
//!
//! The same leaf carries a whole plan a qlink planner made (`planned`): the
//! consumer receives one node however deep the plan is, and the plan runs
//! here with the task context it was planned with.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_ffi::execution::FFI_TaskContext;
use datafusion_ffi::execution_plan::{ExecutionPlanPrivateData, FFI_ExecutionPlan};
use datafusion_ffi::record_batch_stream::FFI_RecordBatchStream;
use datafusion_ffi::util::FFI_Result;
use prost::Message;
use stabby::vec::Vec as SVec;
use tokio::runtime::Handle;

use crate::mirror::capsule_marker_id;
use qlink_datafusion::error::{error_message, Result};
use qlink_datafusion::exec::PartitionCache;

/// A scan's plan together with the task context it runs with.
pub struct CapsuleScanExec {
    inner: Arc<dyn ExecutionPlan>,
    task: Arc<TaskContext>,
    /// The inner plan's properties less its output ordering (`exported_properties`).
    props: Arc<PlanProperties>,
    /// The statistics as datafusion-ffi hands them over (prost-encoded
    /// `datafusion_proto_common::Statistics`), encoded once per partition
    /// argument: the consumer's optimizer asks a scan again at every rule.
    encoded_stats: PartitionCache<[u8]>,
}

impl CapsuleScanExec {
    pub fn new(inner: Arc<dyn ExecutionPlan>, task: Arc<TaskContext>) -> CapsuleScanExec {
        let props = exported_properties(inner.properties());
        CapsuleScanExec { inner, task, props, encoded_stats: PartitionCache::default() }
    }

    /// The statistics of `partition`, encoded for the consumer once.
    fn encoded_statistics(&self, partition: Option<usize>) -> Result<Arc<[u8]>> {
        self.encoded_stats.get_or_try(partition, || {
            #[allow(deprecated)]
            let stats = self.inner.partition_statistics(partition)?;
            Ok(datafusion_proto_common::Statistics::from(stats.as_ref()).encode_to_vec().into())
        })
    }

    /// Execute `partition` with the scan's own task context.
    pub fn run(&self, partition: usize) -> Result<SendableRecordBatchStream> {
        self.inner.execute(partition, Arc::clone(&self.task))
    }
}

impl fmt::Debug for CapsuleScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CapsuleScanExec({})", self.inner.name())
    }
}

impl DisplayAs for CapsuleScanExec {
    /// A scan shows as itself; a planned plan as its whole tree, indented
    /// under one line (the consumer sees a leaf).
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        if self.inner.children().is_empty() {
            return self.inner.fmt_as(t, f);
        }
        let tree = datafusion::physical_plan::displayable(self.inner.as_ref()).indent(false).to_string();
        write!(f, "QlinkPlannedExec: planned by qlink, run in place\n{}", tree.trim_end())
    }
}

impl ExecutionPlan for CapsuleScanExec {
    fn name(&self) -> &str {
        if self.inner.children().is_empty() {
            self.inner.name()
        } else {
            "QlinkPlannedExec"
        }
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    /// The scan runs as one unit: its inputs, if any, are the plugin's own.
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            return Ok(self);
        }
        Err(DataFusionError::Plan(format!("{} is a leaf: it takes no children", self.inner.name())))
    }

    /// Whatever context the caller passes, the scan runs with its own.
    fn execute(&self, partition: usize, _context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        self.run(partition)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }

    /// The plugin's statistics (exact row counts let the consumer's
    /// EnforceDistribution skip `repartitioned` for small scans).
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<datafusion::common::Statistics>> {
        // The inner plan is a leaf (QlinkExec): its own answer is the
        // plugin's, with no children for a StatisticsContext walk to use.
        #[allow(deprecated)]
        let stats = self.inner.partition_statistics(partition);
        stats
    }
}

/// The properties a capsule scan exports: the inner plan's, with no output
/// ordering. datafusion-ffi 55 hands an ordering to the consumer as
/// `FFI_PhysicalSortExpr`s, which the consumer wraps as `ForeignPhysicalExpr`
/// (equal only to itself, every hash and display a call back into this
/// library): no sort requirement of the consumer's can ever match one, so its
/// `SortExec` stays (EXPLAIN shows it), while every query pays for the
/// conversion and the optimizer's equivalence work over those expressions
/// (30-50 us a query over qlink_ndarray's 1,040-row table, bench-xarray).
/// The partitioning, emission, boundedness and scheduling are kept.
fn exported_properties(props: &Arc<PlanProperties>) -> Arc<PlanProperties> {
    if props.output_ordering().is_none() {
        return Arc::clone(props);
    }
    let schema = Arc::clone(props.eq_properties.schema());
    Arc::new(props.as_ref().clone().with_eq_properties(EquivalenceProperties::new(schema)))
}

/// Export a scan's plan; `execute` will use `task`.
pub fn export_scan_plan(plan: Arc<dyn ExecutionPlan>, task: Arc<TaskContext>, runtime: Option<Handle>) -> FFI_ExecutionPlan {
    export(Arc::new(CapsuleScanExec::new(plan, task)), runtime)
}

/// A whole plan made by a qlink planner, as one leaf that runs it with
/// `task` (the planning session's context).
pub fn planned(plan: Arc<dyn ExecutionPlan>, task: Arc<TaskContext>) -> Arc<dyn ExecutionPlan> {
    Arc::new(CapsuleScanExec::new(plan, task))
}

/// Export a leaf made by [`planned`] (or a scan) with qlink's `execute`.
pub fn export_planned(plan: Arc<dyn ExecutionPlan>, runtime: Option<Handle>) -> Result<FFI_ExecutionPlan> {
    if plan.downcast_ref::<CapsuleScanExec>().is_none() {
        return Err(DataFusionError::Internal(format!("{} is not a qlink planned plan", plan.name())));
    }
    Ok(export(plan, runtime))
}

fn export(plan: Arc<dyn ExecutionPlan>, runtime: Option<Handle>) -> FFI_ExecutionPlan {
    let mut ffi = FFI_ExecutionPlan::new(plan, runtime);
    ffi.execute = execute_fn;
    ffi.clone = clone_fn;
    ffi.with_new_children = with_new_children_fn;
    ffi.repartitioned = repartitioned_fn;
    ffi.partition_statistics = partition_statistics_fn;
    // Our execute must be called through the pointer, never bypassed by a
    // consumer that happens to share datafusion-ffi's marker.
    ffi.library_marker_id = capsule_marker_id;
    ffi
}

/// # Safety
/// `plan` was made by `export` (datafusion-ffi's constructor: its private
/// data is an `ExecutionPlanPrivateData`).
unsafe fn data_of(plan: &FFI_ExecutionPlan) -> &ExecutionPlanPrivateData {
    &*(plan.private_data as *const ExecutionPlanPrivateData)
}

unsafe extern "C" fn execute_fn(plan: &FFI_ExecutionPlan, partition: usize, context: FFI_TaskContext) -> FFI_Result<FFI_RecordBatchStream> {
    // Released unread: converting it is the per-execute cost avoided here.
    drop(context);
    let data = data_of(plan);
    let run = || -> Result<FFI_RecordBatchStream> {
        let _rt = data.runtime.as_ref().map(|h| h.enter());
        let scan = data
            .plan
            .downcast_ref::<CapsuleScanExec>()
            .ok_or_else(|| DataFusionError::Internal("capsule execute: not a capsule scan".into()))?;
        Ok(FFI_RecordBatchStream::new(scan.run(partition)?, data.runtime.clone()))
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(s)) => FFI_Result::Ok(s),
        Ok(Err(e)) => FFI_Result::Err(error_message(&e).as_str().into()),
        Err(_) => FFI_Result::Err("qlink execute: panic".into()),
    }
}

/// A plugin scan is not repartitioned by the host: answer "no" without
/// converting the consumer's config (datafusion-ffi's wrapper parses every
/// option from its string form on each call, ~200 `ConfigOptions::set`).
unsafe extern "C" fn repartitioned_fn(
    _plan: &FFI_ExecutionPlan,
    _target_partitions: usize,
    config: datafusion_ffi::config::FFI_ConfigOptions,
) -> FFI_Result<datafusion_ffi::util::FFI_Option<FFI_ExecutionPlan>> {
    drop(config);
    FFI_Result::Ok(datafusion_ffi::util::FFI_Option::None)
}

/// The scan's statistics from its cache of encoded bytes (datafusion-ffi's
/// own wrapper converts and encodes them on every call).
unsafe extern "C" fn partition_statistics_fn(
    plan: &FFI_ExecutionPlan,
    partition: datafusion_ffi::util::FFI_Option<usize>,
) -> FFI_Result<SVec<u8>> {
    let data = data_of(plan);
    let run = || -> Result<SVec<u8>> {
        let scan = data
            .plan
            .downcast_ref::<CapsuleScanExec>()
            .ok_or_else(|| DataFusionError::Internal("capsule statistics: not a capsule scan".into()))?;
        Ok(SVec::from(scan.encoded_statistics(partition.into())?.as_ref()))
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(s)) => FFI_Result::Ok(s),
        Ok(Err(e)) => FFI_Result::Err(error_message(&e).as_str().into()),
        Err(_) => FFI_Result::Err("qlink partition_statistics: panic".into()),
    }
}

unsafe extern "C" fn clone_fn(plan: &FFI_ExecutionPlan) -> FFI_ExecutionPlan {
    let data = data_of(plan);
    export(Arc::clone(&data.plan), data.runtime.clone())
}

unsafe extern "C" fn with_new_children_fn(plan: &FFI_ExecutionPlan, children: SVec<FFI_ExecutionPlan>) -> FFI_Result<FFI_ExecutionPlan> {
    if !children.is_empty() {
        return FFI_Result::Err("a qlink scan is a leaf: it takes no children".into());
    }
    FFI_Result::Ok(clone_fn(plan))
}
