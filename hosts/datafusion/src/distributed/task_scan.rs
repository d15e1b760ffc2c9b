// SPDX-License-Identifier: Apache-2.0
//! A qlink scan's partitions divided among the tasks of a distributed
//! stage: task t of T runs partitions `task_partitions(P, T, t)` of the
//! scan's P (contiguous, sizes differing by at most one), as partitions
//! 0.. of its own; a task with fewer than the most runs empty partitions.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use datafusion_distributed::DistributedTaskContext;

use crate::exec::QlinkExec;

/// The partitions task `task` of `tasks` runs, of `partitions` in all.
pub fn task_partitions(partitions: usize, tasks: usize, task: usize) -> Range<usize> {
    let tasks = tasks.max(1);
    (task * partitions / tasks)..((task + 1) * partitions / tasks)
}

/// A qlink table scan (a [`QlinkExec`] with a recipe) split over `tasks`.
#[derive(Debug)]
pub struct TaskScanExec {
    inner: Arc<dyn ExecutionPlan>,
    tasks: usize,
    partitions: usize,
    props: Arc<PlanProperties>,
    /// The coordinator's workers, for EXPLAIN (empty on a worker).
    workers: Vec<url::Url>,
}

impl TaskScanExec {
    /// Split `scan` (a `QlinkExec` carrying a recipe) over `tasks` tasks.
    pub fn try_new(scan: Arc<dyn ExecutionPlan>, tasks: usize) -> Result<TaskScanExec> {
        let Some(q) = scan.downcast_ref::<QlinkExec>() else {
            return Err(DataFusionError::Internal(format!("TaskScanExec over {}, not a qlink scan", scan.name())));
        };
        if q.recipe().is_none() {
            return Err(DataFusionError::Internal(format!("TaskScanExec over {}: not a table scan with a recipe", q.name())));
        }
        if tasks == 0 {
            return Err(DataFusionError::Internal("TaskScanExec over 0 tasks".into()));
        }
        let partitions = scan.properties().partitioning.partition_count();
        let per_task = partitions.div_ceil(tasks);
        let props = scan.properties().as_ref().clone().with_partitioning(Partitioning::UnknownPartitioning(per_task.max(1)));
        Ok(TaskScanExec { inner: scan, tasks, partitions, props: Arc::new(props), workers: Vec::new() })
    }

    /// Name the workers tasks run on in EXPLAIN (task t on worker t mod N,
    /// the coordinator's routing).
    pub fn with_workers(mut self, workers: Vec<url::Url>) -> TaskScanExec {
        self.workers = workers;
        self
    }

    /// The scan every task runs a share of.
    pub fn scan(&self) -> &Arc<dyn ExecutionPlan> {
        &self.inner
    }

    pub fn tasks(&self) -> usize {
        self.tasks
    }
}

impl DisplayAs for TaskScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "TaskScanExec: ")?;
        self.inner.fmt_as(t, f)?;
        write!(f, ", {} partitions over {} tasks:", self.partitions, self.tasks)?;
        for task in 0..self.tasks {
            let r = task_partitions(self.partitions, self.tasks, task);
            write!(f, " t{task}:[{}..{})", r.start, r.end)?;
            if let Some(w) = worker_of(&self.workers, task) {
                write!(f, "@{}:{}", w.host_str().unwrap_or(""), w.port_or_known_default().unwrap_or(0))?;
            }
        }
        Ok(())
    }
}

impl ExecutionPlan for TaskScanExec {
    fn name(&self) -> &str {
        "TaskScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return Err(DataFusionError::Internal("TaskScanExec takes no children".into()));
        }
        Ok(self)
    }

    /// Errors: run outside a distributed task of a stage with this many
    /// tasks (a task index alone would silently drop the other tasks'
    /// partitions, so this is refused).
    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let Some(d) = context.session_config().get_extension::<DistributedTaskContext>() else {
            return Err(DataFusionError::Execution(format!("TaskScanExec ({} tasks) executed outside a distributed task", self.tasks)));
        };
        if d.task_count != self.tasks || d.task_index >= self.tasks {
            return Err(DataFusionError::Execution(format!(
                "TaskScanExec planned for {} tasks runs as task {} of {}",
                self.tasks, d.task_index, d.task_count
            )));
        }
        let mine = task_partitions(self.partitions, self.tasks, d.task_index);
        let global = mine.start + partition;
        if global < mine.end {
            return self.inner.execute(global, context);
        }
        let empty = futures::stream::empty();
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.inner.schema(), empty)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }

    /// The whole scan's statistics (the planner's view); a task-relative
    /// partition's are unknown. (QlinkExec answers this method too.)
    #[allow(deprecated)]
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        match partition {
            None => self.inner.partition_statistics(None),
            Some(_) => Ok(Arc::new(Statistics::new_unknown(&self.inner.schema()))),
        }
    }
}

/// The worker of task `task`: the `task mod N`-th of `workers`.
pub fn worker_of(workers: &[url::Url], task: usize) -> Option<&url::Url> {
    (!workers.is_empty()).then(|| &workers[task % workers.len()])
}
