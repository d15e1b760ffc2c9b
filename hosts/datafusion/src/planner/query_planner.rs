// SPDX-License-Identifier: Apache-2.0
//! `QlinkQueryPlanner`: DataFusion's default physical planner with the
//! installed planners' hook in front (decline fast path, plan views,
//! PHYSICAL and REWRITE answers, `plan_physical` for subtrees).

use std::fmt;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::error::DataFusionError;
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::{Analyze, Explain, Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

use super::installed::InstalledPlanner;
use super::plan_view::{kind_mask, plan_view, plan_view_lazy, subtree, PlanViewBuild};
use super::rebuild::plan_of;
use super::splice::{replace_at, QlinkExtensionPlanner, QlinkPhysicalNode};
use crate::error::{guard_status, set_df_error, set_error, ErrorSlot, Result};
use crate::exec::{export_host_plan, import_owned};
use crate::expr::OwnedView;
use crate::ffi::*;
use crate::metrics::{HOOK_NANOS, VIEW_NANOS};
use crate::services::{SessionSource, SessionView};
use crate::session_override::SessionOverride;

/// How many answers one plan may get before planning stops with an error.
pub const MAX_OFFERS: usize = 10_000;

/// DataFusion's default physical planner with the planners' hook in front.
pub struct QlinkQueryPlanner {
    planners: Vec<Arc<InstalledPlanner>>,
    default: DefaultPhysicalPlanner,
}

impl fmt::Debug for QlinkQueryPlanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.planners.iter().map(|p| p.name.as_str()).collect();
        write!(f, "QlinkQueryPlanner({names:?})")
    }
}

impl QlinkQueryPlanner {
    pub fn new(planners: Vec<Arc<InstalledPlanner>>) -> QlinkQueryPlanner {
        QlinkQueryPlanner { planners, default: DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(QlinkExtensionPlanner)]) }
    }

    /// Plan `plan`; `skip` is a planner that asked for exactly this plan
    /// through plan_physical (asking it again would recurse forever).
    pub(super) fn plan<'a>(
        &'a self,
        plan: &'a LogicalPlan,
        session: &'a dyn Session,
        skip: Option<&'a InstalledPlanner>,
    ) -> futures::future::BoxFuture<'a, Result<Arc<dyn ExecutionPlan>>> {
        Box::pin(async move {
            let spliced = self.splice_shared(plan, session).await?;
            let plan = spliced.as_ref().unwrap_or(plan);
            // EXPLAIN and EXPLAIN ANALYZE: the planners see the query under
            // them (DataFusion's default planner would plan it without the
            // hook), so EXPLAIN shows the plugin nodes the query really runs.
            let rewritten = match plan {
                LogicalPlan::Explain(e) => self
                    .rewrite_all(&e.plan, session, skip)?
                    .map(|inner| LogicalPlan::Explain(Explain { plan: Arc::new(inner), ..e.clone() })),
                LogicalPlan::Analyze(a) => self
                    .rewrite_all(&a.input, session, skip)?
                    .map(|inner| LogicalPlan::Analyze(Analyze { input: Arc::new(inner), ..a.clone() })),
                _ => self.rewrite_all(plan, session, skip)?,
            };
            self.default.create_physical_plan(rewritten.as_ref().unwrap_or(plan), session).await
        })
    }

    /// Offer `plan` to the planners (`rewrite`); after an answer that
    /// replaced a subtree by a physical plan, offer the new plan again, so a
    /// planner reaches every subtree it wants, not only the first. A rewrite
    /// answer ends the offers (its plan is planned as it is). Each physical
    /// answer turns a subtree into an opaque node, so the offers end; a
    /// planner that keeps answering past [`MAX_OFFERS`] is an error.
    fn rewrite_all(&self, plan: &LogicalPlan, session: &dyn Session, skip: Option<&InstalledPlanner>) -> Result<Option<LogicalPlan>> {
        let mut current: Option<LogicalPlan> = None;
        for _ in 0..MAX_OFFERS {
            let offered = current.as_ref().unwrap_or(plan);
            match self.rewrite(offered, session, skip)? {
                None => return Ok(current),
                Some((next, QL_PLANNER_PHYSICAL)) => current = Some(next),
                Some((next, _)) => return Ok(Some(next)),
            }
        }
        Err(DataFusionError::Plan(format!(
            "planners answered {MAX_OFFERS} times for one plan without declining: stopping (a planner that replaces \
             its own nodes never finishes)"
        )))
    }

    /// Offer `plan` to each interested planner in turn; the first answer
    /// other than decline gives the new logical plan and the action.
    fn rewrite(&self, plan: &LogicalPlan, session: &dyn Session, skip: Option<&InstalledPlanner>) -> Result<Option<(LogicalPlan, i32)>> {
        let mut mask: Option<u32> = None;
        for p in &self.planners {
            if skip.is_some_and(|s| std::ptr::eq(s, p.as_ref())) {
                continue;
            }
            let interest = p.raw.interest;
            if interest != 0 {
                let m = *mask.get_or_insert_with(|| kind_mask(plan));
                if interest & m == 0 {
                    continue; // the decline fast path: nothing this planner wants
                }
            }
            let t0 = std::time::Instant::now();
            let answer = self.ask(p, plan, session);
            HOOK_NANOS.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            if let Some(new_plan) = answer? {
                return Ok(Some(new_plan));
            }
        }
        Ok(None)
    }

    /// Call one planner; Some((plan, action)) when it replaced a subtree.
    fn ask(&self, p: &InstalledPlanner, plan: &LogicalPlan, session: &dyn Session) -> Result<Option<(LogicalPlan, i32)>> {
        let Some(plan_fn) = p.raw.plan else { return Ok(None) };
        let t0 = std::time::Instant::now();
        let built = if p.lazy_view() { plan_view_lazy(plan)? } else { plan_view(plan)? };
        VIEW_NANOS.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let view = SessionView::new(SessionSource::Session(session));
        let call = PlannerCall { qp: self, session, built: &built, asking: p, plan };
        let ctx = ql_planner_context {
            struct_size: std::mem::size_of::<ql_planner_context>() as u32,
            reserved_: 0,
            session: &view.raw,
            plan: built.view(),
            plan_physical: Some(plan_physical),
            private_data: &call as *const PlannerCall as *mut c_void,
        };
        let mut out: ql_planner_result = zeroed();
        out.struct_size = std::mem::size_of::<ql_planner_result>() as u32;
        out.node = -1;
        let mut err = ErrorSlot::new();
        let st = {
            let _g = p.plugin.as_ref().map(|pl| pl.enter());
            unsafe { plan_fn(&p.raw, &ctx, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("planner {}", p.name))?;
        match out.action {
            QL_PLANNER_DECLINE => Ok(None),
            QL_PLANNER_PHYSICAL => {
                let physical = std::mem::replace(&mut out.physical, zeroed());
                let exec = import_owned(physical, p.plugin.clone())?;
                let path = built
                    .path(out.node)
                    .ok_or_else(|| DataFusionError::Plan(format!("planner {}: answered for unknown node {}", p.name, out.node)))?;
                let sub = subtree(plan, &path).ok_or_else(|| DataFusionError::Internal("bad subtree path".into()))?;
                let node = QlinkPhysicalNode { plan: exec, schema: Arc::clone(sub.schema()) };
                let replaced = replace_at(plan, &path, LogicalPlan::Extension(Extension { node: Arc::new(node) }))?;
                Ok(Some((replaced, QL_PLANNER_PHYSICAL)))
            }
            QL_PLANNER_REWRITE => {
                let rewrite = OwnedView(std::mem::replace(&mut out.rewrite, zeroed()));
                let path = built
                    .path(out.node)
                    .ok_or_else(|| DataFusionError::Plan(format!("planner {}: answered for unknown node {}", p.name, out.node)))?;
                let new_sub = plan_of(&rewrite.0, rewrite.0.root, session)?;
                Ok(Some((replace_at(plan, &path, new_sub)?, QL_PLANNER_REWRITE)))
            }
            a => Err(DataFusionError::Plan(format!("planner {}: unknown action {a}", p.name))),
        }
    }
}

struct PlannerCall<'a> {
    plan: &'a LogicalPlan,
    qp: &'a QlinkQueryPlanner,
    asking: &'a InstalledPlanner,
    session: &'a dyn Session,
    built: &'a PlanViewBuild<'a>,
}

/// Run a future to completion from inside a synchronous callback that a
/// Tokio worker thread is executing.
fn block_in_callback<T>(f: impl std::future::Future<Output = T>) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| crate::blocking::block_on(f))
        }
        _ => crate::blocking::block_on(f),
    }
}

unsafe extern "C" fn plan_physical(
    ctx: *const ql_planner_context,
    node: ql_node_id,
    out: *mut ql_execution_plan,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "planner plan_physical", || {
        let call = &*((*ctx).private_data as *const PlannerCall);
        let Some(sub) = call.built.path(node).and_then(|path| subtree(call.plan, &path)) else {
            return set_error(error, QL_EINVAL, &format!("plan_physical: no node {node} in the plan view"));
        };
        let skip = if node == (*call.built.view()).root { Some(call.asking) } else { None };
        // A planner whose nodes take new children gets its inputs before
        // the physical optimizer: the plan they become part of is optimized
        // as a whole, children included (optimizing here too would repeat
        // that work once per level of nested planners). Any other planner
        // gets them optimized, since nothing could optimize them later.
        let session = if call.asking.inputs_unoptimized() {
            SessionOverride::unoptimized(call.session)
        } else {
            SessionOverride::new(call.session, None, None)
        };
        match block_in_callback(call.qp.plan(sub, &session, skip)) {
            Ok(plan) => {
                std::ptr::write(out, export_host_plan(plan, None));
                QL_OK
            }
            Err(e) => set_df_error(error, &e),
        }
    })
}

#[async_trait]
impl QueryPlanner for QlinkQueryPlanner {
    async fn create_physical_plan(&self, logical_plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        self.plan(logical_plan, session, None).await
    }
}
