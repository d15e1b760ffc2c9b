// SPDX-License-Identifier: Apache-2.0
//! The rewrite as an analyzer rule.

use datafusion::common::config::ConfigOptions;
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::AnalyzerRule;

use super::find::share_repeated_subplans;
use crate::error::Result;

/// Replaces each subquery a plan uses at least twice by one shared
/// reference ([`share_repeated_subplans`]). Add it last
/// (`SessionStateBuilder::with_analyzer_rule`): it compares subqueries after
/// type coercion, and the optimizer then sees each once. The session's query
/// planner must be qlink's (`QlinkQueryPlanner`, which plans the shared
/// references); DataFusion's default planner refuses them.
#[derive(Debug, Default)]
pub struct ShareRepeatedSubplans;

impl AnalyzerRule for ShareRepeatedSubplans {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        Ok(share_repeated_subplans(plan, false)?.data)
    }

    fn name(&self) -> &str {
        "qlink_share_repeated_subplans"
    }
}
