//! datafusion-distributed's planning hooks for qlink scans: how many tasks
//! a scan's stage wants (one per partition, capped by the workers), and the
//! scan split over the tasks the stage got.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse,
};

use crate::exec::QlinkExec;
use crate::distributed::task_scan::TaskScanExec;

/// A qlink table scan with a recipe wants one task per partition (the
/// planner caps it by the workers there are); any other qlink plan (a
/// planner plugin's node, a table-function scan) runs in one task.
pub fn desired_task_count(ev: DesiredTaskCountEvent) -> Option<Result<DesiredTaskCountEventResponse>> {
    let q = ev.plan.downcast_ref::<QlinkExec>()?;
    if q.recipe().is_none() || !q.children().is_empty() {
        return Some(Ok(DesiredTaskCountEventResponse::maximum(1)));
    }
    Some(Ok(DesiredTaskCountEventResponse::desired(q.properties().partitioning.partition_count().max(1))))
}

/// A qlink table scan in a stage of several tasks becomes a
/// [`TaskScanExec`] dividing its partitions among them.
pub fn scale_up_leaf(ev: ScaleUpLeafNodeEvent) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    let q = ev.plan.downcast_ref::<QlinkExec>()?;
    if ev.task_count <= 1 || q.recipe().is_none() {
        return None;
    }
    Some(TaskScanExec::try_new(Arc::clone(ev.plan), ev.task_count).map(|t| ScaleUpLeafNodeEventResponse::new(Arc::new(t) as Arc<dyn ExecutionPlan>)))
}
