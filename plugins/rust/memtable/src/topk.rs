// SPDX-License-Identifier: Apache-2.0
//! `topk`: a planner that plans `ORDER BY ... LIMIT k` itself, the way
//! DataFusion does (a `SortExec` keeping k rows in each partition of the
//! input, merged by a `SortPreservingMergeExec` that stops at k), over the
//! input the host planned (`plan_physical`). It shows the SDK's planner
//! route end to end: the plan view read lazily, sort keys converted to
//! DataFusion expressions, the host's subtree run under the plugin's
//! operators by reference, and the answer's host leaves visible in the
//! host's EXPLAIN.
//!
//! It declines plans without a SORT that has a row limit, and sorts whose
//! keys have no DataFusion form (the host plans those as usual).

use std::sync::Arc;

use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::ExecutionPlan;
use qlink_plugin::planner::{Answer, NodeId, PlanContext, Planner};
use qlink_plugin::sys::QL_NODE_SORT;
use qlink_plugin::{Error, Result};

pub struct TopK;

impl TopK {
    /// The first SORT with a limit, in pre-order from the root.
    fn find(ctx: &PlanContext<'_>) -> Result<Option<NodeId>> {
        let mut stack = vec![ctx.root()];
        while let Some(id) = stack.pop() {
            if ctx.kind(id)? == QL_NODE_SORT && ctx.node(id)?.fetch().is_some() {
                return Ok(Some(id));
            }
            stack.extend(ctx.inputs(id)?.iter().rev());
        }
        Ok(None)
    }
}

impl Planner for TopK {
    fn interest(&self) -> Vec<i32> {
        vec![QL_NODE_SORT]
    }

    fn plan(&self, ctx: &PlanContext<'_>) -> Result<Answer> {
        let Some(id) = Self::find(ctx)? else { return Ok(Answer::Decline) };
        let node = ctx.node(id)?;
        let (&[input], Some(k)) = (node.inputs(), node.fetch()) else { return Ok(Answer::Decline) };
        let Ok(keys) = node.exprs().iter().map(|&e| ctx.sort_expr(e)).collect::<Result<Vec<_>>>() else {
            return Ok(Answer::Decline);
        };
        let keys = keys.iter().map(|s| ctx.physical_sort_expr(&node, s)).collect::<Result<Vec<_>>>()?;
        let Some(order) = LexOrdering::new(keys) else { return Ok(Answer::Decline) };
        let child = ctx.plan_physical(input)?;
        let sort = SortExec::new(order.clone(), child).with_fetch(Some(k)).with_preserve_partitioning(true);
        let merge = SortPreservingMergeExec::new(order, Arc::new(sort)).with_fetch(Some(k));
        if merge.schema().fields().len() != node.schema()?.fields().len() {
            return Err(Error::invalid("topk: the input's columns are not the sort's"));
        }
        Ok(Answer::Physical { node: id, plan: Arc::new(merge) })
    }
}
