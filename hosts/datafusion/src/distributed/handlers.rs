// SPDX-License-Identifier: Apache-2.0
//! datafusion-distributed's planning hooks for qlink scans: how many tasks
//! a scan's stage wants (one per partition, capped by the workers), the
//! scan split over the tasks the stage got, and where each task runs (task
//! t of a multi-task stage on worker t mod N, so EXPLAIN can say which
//! worker reads which partitions).

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedGetterExt, RouteTasksEvent, RouteTasksEventResponse,
    ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse,
};

use crate::distributed::task_scan::{worker_of, TaskScanExec};
use crate::exec::QlinkExec;

/// A qlink table scan with a recipe (a spec table's, a schema table's or a
/// table function's) wants one task per partition (the planner caps it by
/// the workers there are); any other qlink plan (a planner plugin's node)
/// runs in one task.
pub fn desired_task_count(ev: DesiredTaskCountEvent) -> Option<Result<DesiredTaskCountEventResponse>> {
    let q = ev.plan.downcast_ref::<QlinkExec>()?;
    if q.recipe().is_none() {
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
    let workers = ev.session_config.get_distributed_worker_resolver().and_then(|r| r.get_urls()).unwrap_or_default();
    Some(
        TaskScanExec::try_new(Arc::clone(ev.plan), ev.task_count)
            .map(|t| ScaleUpLeafNodeEventResponse::new(Arc::new(t.with_workers(workers)) as Arc<dyn ExecutionPlan>)),
    )
}

/// A stage of several tasks runs task t on [`worker_of`] t (the placement
/// [`TaskScanExec`]'s EXPLAIN line shows); single-task stages keep
/// datafusion-distributed's own placement.
pub fn route_tasks(ev: RouteTasksEvent) -> Option<Result<RouteTasksEventResponse>> {
    if ev.task_count <= 1 {
        return None;
    }
    let workers = match ev.task_ctx.session_config().get_distributed_worker_resolver().and_then(|r| r.get_urls()) {
        Ok(w) if !w.is_empty() => w,
        Ok(_) => return None,
        Err(e) => return Some(Err(e)),
    };
    let urls = (0..ev.task_count).filter_map(|t| worker_of(&workers, t).cloned()).collect();
    Some(Ok(RouteTasksEventResponse::new(urls)))
}
