// SPDX-License-Identifier: Apache-2.0
//! Which queries are distributed. A worker can rebuild a qlink table scan
//! with a recipe (a spec table's, a schema table's, a table function's),
//! DataFusion's own nodes and functions, and calls of the plugin functions
//! the coordinator's session registered (functions.rs); it cannot rebuild
//! a planner plugin's node (FoldExec) or a scan without a recipe (a
//! provider registered as an object, not opened from a spec). A plan
//! holding one of those runs whole on the coordinator, as without workers:
//! the ABI has no `encode` member that would let a plugin ship its own
//! nodes (docs/abi.md, "Distributed execution").
//!
//! The query is planned once: the local physical plan is checked, then
//! handed to datafusion-distributed's planner (which would otherwise plan
//! it again through the planner it wraps) through a task-local slot.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::{PlanType, StringifiedPlan, ToStringifiedPlan};
use datafusion::physical_plan::displayable;
use datafusion::physical_plan::explain::ExplainExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion_distributed::{display_plan_ascii, DistributedExec};

use crate::exec::QlinkExec;

tokio::task_local! {
    static PLANNED: RefCell<Option<Arc<dyn ExecutionPlan>>>;
}

/// True when every qlink node of `plan` can be rebuilt on a worker.
pub fn is_shippable(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let mut ok = true;
    let _ = plan.apply(|node| {
        if let Some(q) = node.downcast_ref::<QlinkExec>() {
            if q.recipe().is_none() {
                ok = false;
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    ok
}

type Planner = Arc<dyn QueryPlanner + Send + Sync>;

async fn plan_locally(local: &Option<Planner>, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
    match local {
        Some(p) => p.create_physical_plan(plan, session).await,
        None => DefaultPhysicalPlanner::default().create_physical_plan(plan, session).await,
    }
}

/// The session's query planner when workers are set: plans with `local`
/// (qlink's planner, or DataFusion's), then distributes the plan with
/// `distributed` when [`is_shippable`], else returns it as it is.
pub struct QlinkDistributedPlanner {
    pub local: Option<Planner>,
    pub distributed: Planner,
}

impl fmt::Debug for QlinkDistributedPlanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QlinkDistributedPlanner")
    }
}

#[async_trait]
impl QueryPlanner for QlinkDistributedPlanner {
    async fn create_physical_plan(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        // EXPLAIN: the plan the query would run, its stages drawn when it
        // is distributed (datafusion-distributed's own drawing).
        if let LogicalPlan::Explain(e) = plan {
            let inner = self.create_physical_plan(&e.plan, session).await?;
            let text = if inner.is::<DistributedExec>() {
                display_plan_ascii(inner.as_ref(), false)
            } else {
                displayable(inner.as_ref()).indent(e.verbose).to_string()
            };
            let mut plans = e.stringified_plans.clone();
            plans.push(e.plan.to_stringified(PlanType::FinalLogicalPlan));
            plans.push(StringifiedPlan::new(PlanType::FinalPhysicalPlan, text));
            return Ok(Arc::new(ExplainExec::new(Arc::clone(e.schema.inner()), plans, e.verbose)));
        }
        let physical = plan_locally(&self.local, plan, session).await?;
        if !is_shippable(&physical) {
            return Ok(physical);
        }
        PLANNED.scope(RefCell::new(Some(physical)), self.distributed.create_physical_plan(plan, session)).await
    }
}

/// The planner datafusion-distributed wraps: the plan already made by
/// [`QlinkDistributedPlanner`] when there is one, else `local`'s.
pub struct Planned {
    pub local: Option<Planner>,
}

impl fmt::Debug for Planned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Planned")
    }
}

#[async_trait]
impl QueryPlanner for Planned {
    async fn create_physical_plan(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(p) = PLANNED.try_with(|slot| slot.borrow_mut().take()).ok().flatten() {
            return Ok(p);
        }
        plan_locally(&self.local, plan, session).await
    }
}
