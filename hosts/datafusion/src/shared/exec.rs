// SPDX-License-Identifier: Apache-2.0
//! The execution plan every reference to one shared subquery runs.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::execution_plan::reset_plan_states;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, StatisticsArgs, StatisticsContext};
use futures::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;
use tokio::task::JoinSet;

use crate::error::Result;
use crate::exec::PartitionCache;

/// The batches of every partition of the subquery's plan, and the memory
/// they hold in the pool.
struct Kept {
    partitions: Vec<Vec<RecordBatch>>,
    _reservation: MemoryReservation,
}

type Cell = OnceCell<std::result::Result<Arc<Kept>, Arc<DataFusionError>>>;

/// A leaf that runs `body` (a shared subquery's physical plan) once, on the
/// first `execute` of any partition, and answers every partition of every
/// reference from the batches kept. Its partitioning, ordering and
/// statistics are the body's (partition `i` is the body's partition `i`).
///
/// The body runs all its partitions at once with the task context of that
/// first `execute`; the batches are reserved in its memory pool (a refusal
/// fails the query with the pool's error) and kept until this plan is
/// dropped or `reset_state` is called, as DataFusion's hash join keeps its
/// build side. An error is kept too: every reference fails with it.
/// Thread-safe.
pub struct SharedSubplanExec {
    name: String,
    references: usize,
    props: Arc<PlanProperties>,
    /// The body's plan, and the batches it gave or will give.
    state: Mutex<(Arc<dyn ExecutionPlan>, Arc<Cell>)>,
    stats: PartitionCache<Statistics>,
}

impl SharedSubplanExec {
    pub fn new(name: String, references: usize, body: Arc<dyn ExecutionPlan>) -> SharedSubplanExec {
        let props = Arc::clone(body.properties());
        SharedSubplanExec {
            name,
            references,
            props,
            state: Mutex::new((body, Arc::new(OnceCell::new()))),
            stats: PartitionCache::default(),
        }
    }

    /// The shared subquery's physical plan.
    pub fn body(&self) -> Arc<dyn ExecutionPlan> {
        self.state().0
    }

    fn state(&self) -> (Arc<dyn ExecutionPlan>, Arc<Cell>) {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (Arc::clone(&s.0), Arc::clone(&s.1))
    }
}

/// Run every partition of `body` and keep its batches, reserved in the
/// task's memory pool.
async fn keep(body: Arc<dyn ExecutionPlan>, task: Arc<TaskContext>, name: String) -> Result<Kept> {
    let reservation = Arc::new(MemoryConsumer::new(format!("SharedSubplanExec[{name}]")).register(task.memory_pool()));
    let n = body.properties().partitioning.partition_count();
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let stream = body.execute(i, Arc::clone(&task))?;
        let reservation = Arc::clone(&reservation);
        tasks.spawn(async move {
            let batches: Vec<RecordBatch> = stream
                .and_then(|b| {
                    let grown = reservation.try_grow(b.get_array_memory_size()).map(|_| b);
                    futures::future::ready(grown)
                })
                .try_collect()
                .await?;
            Ok::<_, DataFusionError>((i, batches))
        });
    }
    let mut partitions = vec![Vec::new(); n];
    while let Some(done) = tasks.join_next().await {
        let (i, batches) = done.map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        partitions[i] = batches;
    }
    drop(tasks);
    let reservation = Arc::try_unwrap(reservation)
        .map_err(|_| DataFusionError::Internal(format!("SharedSubplanExec[{name}]: a partition outlived its task")))?;
    Ok(Kept { partitions, _reservation: reservation })
}

impl fmt::Debug for SharedSubplanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedSubplanExec({})", self.name)
    }
}

impl DisplayAs for SharedSubplanExec {
    /// One line (EXPLAIN, and the one-line names plans are shown by); EXPLAIN
    /// VERBOSE adds the subquery's plan under it, its lines marked `|` (each
    /// reference shows it; the plan runs once). The tree format shows the
    /// line.
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => write!(f, "name={}\nreferences={}", self.name, self.references),
            DisplayFormatType::Default => write!(f, "SharedSubplanExec: name={}, references={}", self.name, self.references),
            DisplayFormatType::Verbose => {
                write!(f, "SharedSubplanExec: name={}, references={}", self.name, self.references)?;
                let tree = datafusion::physical_plan::displayable(self.body().as_ref()).indent(true).to_string();
                for line in tree.trim_end().lines() {
                    write!(f, "\n  | {line}")?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for SharedSubplanExec {
    fn name(&self) -> &str {
        "SharedSubplanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    /// A leaf: the body was planned and optimized whole, once; the plans
    /// around each reference must not change it.
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
        Err(DataFusionError::Plan("SharedSubplanExec is a leaf: it takes no children".into()))
    }

    /// Forget the kept batches and reset the body's plan (every reference
    /// shares this plan, so every reference runs the body again next time).
    fn reset_state(self: Arc<Self>) -> Result<Arc<dyn ExecutionPlan>> {
        let body = reset_plan_states(self.body())?;
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = (body, Arc::new(OnceCell::new()));
        Ok(self)
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let n = self.props.partitioning.partition_count();
        if partition >= n {
            return Err(DataFusionError::Internal(format!("SharedSubplanExec[{}]: partition {partition} of {n}", self.name)));
        }
        let (body, cell) = self.state();
        let name = self.name.clone();
        let batches = async move {
            let kept = cell.get_or_init(|| async move { keep(body, context, name).await.map(Arc::new).map_err(Arc::new) }).await;
            match kept {
                Ok(k) => Ok(futures::stream::iter(k.partitions[partition].clone().into_iter().map(Ok))),
                Err(e) => Err(DataFusionError::Shared(Arc::clone(e))),
            }
        };
        let stream = futures::stream::once(batches).try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.props.eq_properties.schema().clone(), stream.boxed())))
    }

    /// The body's, from a statistics walk of it (this leaf's own inputs
    /// are none), computed once per partition argument.
    fn statistics_from_inputs(&self, _input_stats: &[Arc<Statistics>], args: &StatisticsArgs) -> Result<Arc<Statistics>> {
        self.stats.get_or_try(args.partition(), || {
            let args = StatisticsArgs::new().with_partition(args.partition());
            StatisticsContext::new().compute(self.body().as_ref(), &args)
        })
    }
}
