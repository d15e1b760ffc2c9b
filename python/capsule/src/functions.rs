// SPDX-License-Identifier: Apache-2.0
//! A plugin's functions and planners as datafusion-ffi 55.2.0 structs, made
//! with datafusion-ffi's standard constructors around the host's own qlink
//! wrappers: function calls cross as Arrow arrays, with no session rebuilt
//! (the standard function structs carry none). The planner route is
//! datafusion-ffi's: the logical plan arrives as protobuf (qlink tables in it
//! by reference, through `codec`), and the physical plan leaves as one leaf
//! encoded by reference (`exec::planned`), so a deep plan costs no more to
//! return than a shallow one. The consumer's session must carry qlink's
//! codecs (datafusion-python: `ctx.with_extensions(qlink.codecs())`).
//!
//! The exported planner optimizes the physical plan with this library's own
//! physical optimizer rules: the consumer's rules, reached through
//! datafusion-ffi's `ForeignSession`, would wrap every node they add as a
//! foreign plan, which the physical codec cannot serialize back.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::display::{PlanType, ToStringifiedPlan};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::TaskContextProvider;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::query_planner::FFI_QueryPlanner;
use datafusion_ffi::udaf::FFI_AggregateUDF;
use datafusion_ffi::udf::FFI_ScalarUDF;
use datafusion_ffi::udwf::FFI_WindowUDF;
use tokio::runtime::Handle;

use crate::builtins::rebind_builtins;
use crate::codec::{export_logical_codec, export_physical_codec};
use crate::exec::planned;
use qlink_datafusion::error::Result;
use qlink_datafusion::functions::{QlinkAggregateUdf, QlinkScalarUdf, QlinkWindowUdf};
use qlink_datafusion::planner::{InstalledPlanner, QlinkQueryPlanner};
use qlink_datafusion::plugin::Plugin;
use qlink_datafusion::session_override::{Rule, SessionOverride};
use qlink_datafusion::shared::share_repeated_subplans;

/// Scalar function `name` of `plugin`.
pub fn export_scalar_udf(plugin: &Arc<Plugin>, name: &str) -> Result<FFI_ScalarUDF> {
    Ok(FFI_ScalarUDF::from(Arc::new(QlinkScalarUdf::open(plugin, name)?)))
}

/// Aggregate function `name` of `plugin`.
pub fn export_aggregate_udf(plugin: &Arc<Plugin>, name: &str) -> Result<FFI_AggregateUDF> {
    Ok(FFI_AggregateUDF::from(Arc::new(QlinkAggregateUdf::open(plugin, name)?)))
}

/// Window function `name` of `plugin`.
pub fn export_window_udf(plugin: &Arc<Plugin>, name: &str) -> Result<FFI_WindowUDF> {
    Ok(FFI_WindowUDF::from(Arc::new(QlinkWindowUdf::open(plugin, name)?)))
}

/// `planners` (offered each plan in order, then DataFusion's default
/// physical planner of this library) for a consumer session whose codecs are
/// `logical` and `physical` (from that session, so its tables and functions
/// decode against it).
/// `runtime_env` is what plugins see while planning and executing (memory
/// pool, object stores; the consumer's own do not cross datafusion-ffi 55);
/// the consumer's session config and functions are kept.
pub fn export_planner(
    planners: Vec<Arc<InstalledPlanner>>,
    logical: FFI_LogicalExtensionCodec,
    physical: FFI_PhysicalExtensionCodec,
    runtime_env: Option<Arc<RuntimeEnv>>,
) -> FFI_QueryPlanner {
    FFI_QueryPlanner::new_with_ffi_codecs(Arc::new(CapsulePlanner::new(planners, runtime_env)), logical, physical)
}

/// Same as [`export_planner`] with qlink's own codecs bound to `tasks` (a
/// session in this library; for tests and Rust hosts).
pub fn export_planner_for(
    planners: Vec<Arc<InstalledPlanner>>,
    tasks: &Arc<dyn TaskContextProvider>,
    runtime: Option<Handle>,
) -> FFI_QueryPlanner {
    let logical = export_logical_codec(FFI_TaskContextProvider::from(tasks), runtime.clone());
    let physical = export_physical_codec(FFI_TaskContextProvider::from(tasks), runtime);
    FFI_QueryPlanner::new_with_ffi_codecs(Arc::new(CapsulePlanner::new(planners, None)), logical, physical)
}

/// `QlinkQueryPlanner` run against the consumer's session with this
/// library's physical optimizer rules; its plan returns as one leaf.
#[derive(Debug)]
struct CapsulePlanner {
    inner: QlinkQueryPlanner,
    rules: Vec<Rule>,
    runtime_env: Option<Arc<RuntimeEnv>>,
}

impl CapsulePlanner {
    fn new(planners: Vec<Arc<InstalledPlanner>>, runtime_env: Option<Arc<RuntimeEnv>>) -> CapsulePlanner {
        CapsulePlanner { inner: QlinkQueryPlanner::new(planners), rules: PhysicalOptimizer::new().rules, runtime_env }
    }
}

#[async_trait]
impl QueryPlanner for CapsulePlanner {
    async fn create_physical_plan(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        let local = SessionOverride::new(session, Some(&self.rules), self.runtime_env.clone());
        let plan = rebind_builtins(explain_after_decode(plan).unwrap_or_else(|| plan.clone()))?;
        // The consumer inlined each CTE at every reference: each subquery
        // used twice is planned and run once here.
        let plan = share_repeated_subplans(plan, true)?.data;
        let physical = self.inner.create_physical_plan(&plan, &local).await?;
        Ok(planned(physical, local.task_ctx()))
    }
}

/// datafusion-proto decodes an EXPLAIN as a new Explain over its input,
/// marked not yet optimized, so DataFusion's physical planner would show no
/// physical plan. The input arrives optimized by the consumer: mark it so,
/// as the final logical plan, and the EXPLAIN shows the plan made here.
fn explain_after_decode(plan: &LogicalPlan) -> Option<LogicalPlan> {
    let LogicalPlan::Explain(e) = plan else { return None };
    if e.logical_optimization_succeeded {
        return None;
    }
    let mut e = e.clone();
    e.stringified_plans = vec![e.plan.to_stringified(PlanType::FinalLogicalPlan)];
    e.logical_optimization_succeeded = true;
    Some(LogicalPlan::Explain(e))
}
