// SPDX-License-Identifier: Apache-2.0
//! Planner plugins (docs/abi.md R11; gaps G1, G2, G3, G7) as a DataFusion
//! `QueryPlanner` plus an `ExtensionPlanner`:
//! - decline fast path: a planner is called only when the optimized logical
//!   plan contains a node kind in its `interest` mask (0: every plan); a
//!   declining planner costs one call with a plan view, no encoding;
//! - the plan view (plan_view.rs) is an arena built with libqlink's IR
//!   builder, lazy for planners that set QL_PLANNER_LAZY_VIEW (a node's
//!   expressions and schema are lowered when the planner expands it); table
//!   scans carry the `TableProvider` by reference (an in-memory table needs
//!   no codec, G1) and function calls carry their identity (G2);
//! - PHYSICAL answers: the plugin asks the host to plan subtrees
//!   (`plan_physical`, which runs this same planner recursively) and gets
//!   execution-plan handles; the returned plan's host children unwrap back to
//!   the DataFusion plans they wrap, so EXPLAIN shows them and no table data
//!   is copied (G3);
//! - REWRITE answers: the plugin's logical subtree is rebuilt with
//!   DataFusion's `LogicalPlanBuilder` and planned as usual.
//!
//! Files: plan_view.rs (the views), installed.rs (an owned planner),
//! query_planner.rs (the hook), splice.rs (PHYSICAL answers), rebuild.rs
//! (REWRITE answers), shared_plans.rs (shared subqueries, crate::shared,
//! planned once each).

mod installed;
pub mod plan_view;
mod query_planner;
mod rebuild;
mod shared_plans;
mod splice;

pub use installed::InstalledPlanner;
pub use plan_view::{kind_mask, plan_view, plan_view_lazy, subtree, table_from_handle, table_handle, PlanViewBuild};
pub use query_planner::{QlinkQueryPlanner, MAX_OFFERS};
pub use splice::QlinkPhysicalNode;
