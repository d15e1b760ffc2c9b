// SPDX-License-Identifier: Apache-2.0
//! Shared subqueries (crate::shared) planned once: before the planners see
//! a plan, each `SharedSubplanNode` becomes the one `SharedSubplanExec` of
//! its subquery, spliced in as a physical node, so planners and DataFusion's
//! physical planner see a leaf.

use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::error::DataFusionError;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;

use super::query_planner::QlinkQueryPlanner;
use super::splice::QlinkPhysicalNode;
use crate::error::Result;
use crate::shared::{SharedBody, SharedSubplanExec, SharedSubplanNode};

fn shared_node(p: &LogicalPlan) -> Option<&SharedSubplanNode> {
    match p {
        LogicalPlan::Extension(e) => e.node.as_any().downcast_ref::<SharedSubplanNode>(),
        _ => None,
    }
}

impl QlinkQueryPlanner {
    /// `plan` with its shared references replaced by their plans; None when
    /// it has none. Each subquery is planned (and optimized first, if it
    /// is not yet) with `session` the first time any planning reaches it.
    pub(super) async fn splice_shared(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Option<LogicalPlan>> {
        let mut bodies: Vec<Arc<SharedBody>> = Vec::new();
        plan.apply_with_subqueries(|n| {
            if let Some(s) = shared_node(n) {
                if !bodies.iter().any(|b| Arc::ptr_eq(b, &s.body)) {
                    bodies.push(Arc::clone(&s.body));
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        if bodies.is_empty() {
            return Ok(None);
        }
        let mut plans = Vec::with_capacity(bodies.len());
        for b in &bodies {
            plans.push(self.shared_plan(b, session).await?);
        }
        let spliced = plan.clone().transform_up_with_subqueries(|n| {
            let Some(s) = shared_node(&n) else { return Ok(Transformed::no(n)) };
            let i = bodies.iter().position(|b| Arc::ptr_eq(b, &s.body)).expect("every body was collected");
            let node = QlinkPhysicalNode { plan: Arc::clone(&plans[i]), schema: Arc::clone(n.schema()) };
            Ok(Transformed::yes(LogicalPlan::Extension(Extension { node: Arc::new(node) })))
        })?;
        Ok(Some(spliced.data))
    }

    /// The one `SharedSubplanExec` of `body`.
    async fn shared_plan(&self, body: &Arc<SharedBody>, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(p) = body.planned() {
            return Ok(p);
        }
        let logical = if body.optimized {
            body.plan.clone()
        } else {
            let state = session.as_any().downcast_ref::<SessionState>().ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "shared subquery {}: optimizing it needs a DataFusion SessionState, and this session is not one",
                    body.name
                ))
            })?;
            state.optimizer().optimize(body.plan.clone(), state, |_, _| {})?
        };
        let physical = self.plan(&logical, session, None).await?;
        Ok(body.keep_planned(Arc::new(SharedSubplanExec::new(body.name.clone(), body.references, physical))))
    }
}
