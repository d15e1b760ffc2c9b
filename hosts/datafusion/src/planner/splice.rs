// SPDX-License-Identifier: Apache-2.0
//! PHYSICAL answers spliced into the logical plan: the plan a planner chose
//! stands in for its subtree as an extension node until DataFusion's
//! physical planner reaches it.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::DFSchemaRef;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{ExtensionPlanner, PhysicalPlanner};

use crate::error::Result;

/// A physical plan a planner chose for a subtree, standing in the logical
/// plan until DataFusion's physical planner reaches it.
#[derive(Clone)]
pub struct QlinkPhysicalNode {
    pub(super) plan: Arc<dyn ExecutionPlan>,
    pub(super) schema: DFSchemaRef,
}

impl fmt::Debug for QlinkPhysicalNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QlinkPhysical: {}", self.plan.name())
    }
}
impl PartialEq for QlinkPhysicalNode {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.plan, &o.plan)
    }
}
impl Eq for QlinkPhysicalNode {}
impl Hash for QlinkPhysicalNode {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.plan) as *const () as usize).hash(h)
    }
}
impl PartialOrd for QlinkPhysicalNode {
    fn partial_cmp(&self, _o: &Self) -> Option<std::cmp::Ordering> {
        None
    }
}

impl UserDefinedLogicalNodeCore for QlinkPhysicalNode {
    fn name(&self) -> &str {
        "QlinkPhysical"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![]
    }
    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }
    fn expressions(&self) -> Vec<Expr> {
        vec![]
    }
    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "QlinkPhysical: {}", self.plan.name())
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, _inputs: Vec<LogicalPlan>) -> Result<Self> {
        Ok(self.clone())
    }
}

#[derive(Debug)]
pub(super) struct QlinkExtensionPlanner;

#[async_trait]
impl ExtensionPlanner for QlinkExtensionPlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        _physical_inputs: &[Arc<dyn ExecutionPlan>],
        _session: &dyn Session,
        _ctx: &datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        Ok(node.as_any().downcast_ref::<QlinkPhysicalNode>().map(|n| Arc::clone(&n.plan)))
    }
}

/// `plan` with the subtree at `path` (child indices from the root)
/// replaced by `with`.
pub(super) fn replace_at(plan: &LogicalPlan, path: &[usize], with: LogicalPlan) -> Result<LogicalPlan> {
    let Some((&first, rest)) = path.split_first() else {
        return Ok(with);
    };
    let mut inputs: Vec<LogicalPlan> = plan.inputs().into_iter().cloned().collect();
    let child = inputs.get(first).ok_or_else(|| DataFusionError::Internal("bad subtree path".into()))?.clone();
    inputs[first] = replace_at(&child, rest, with)?;
    plan.with_new_exprs(plan.expressions(), inputs)
}
