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

use std::fmt;
use std::hash::{Hash, Hasher};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

use arrow::datatypes::DataType;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Column, DFSchemaRef, JoinType, TableReference};
use datafusion::datasource::provider_as_source;
use datafusion::error::DataFusionError;
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction};
use datafusion::logical_expr::{
    Analyze, Explain, Expr, Extension, LogicalPlan, LogicalPlanBuilder, Operator, UserDefinedLogicalNode, UserDefinedLogicalNodeCore,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

use crate::error::{cstr, guard_status, set_df_error, set_error, ErrorSlot, Result};
use crate::exec::{export_host_plan, import_owned, PlanHandle};
use crate::expr::OwnedView;
use crate::ffi::*;
pub mod plan_view;

pub use plan_view::{kind_mask, plan_view, plan_view_lazy, subtree, table_handle, PlanViewBuild};
use crate::plugin::Plugin;
use crate::services::{SessionSource, SessionView};
use crate::session_override::SessionOverride;

/// The table behind a handle made by `table_handle` (plan_view.rs).
///
/// # Safety
/// `h` must come from `table_handle` on an Arc that is still alive.
pub unsafe fn table_from_handle(h: *const c_void) -> Arc<dyn TableProvider> {
    Arc::clone(&*(h as *const Arc<dyn TableProvider>))
}

/// The DataFusion join type of a `ql_join_type`.
fn join_type_of(t: i32) -> Result<JoinType> {
    Ok(match t {
        QL_JOIN_INNER => JoinType::Inner,
        QL_JOIN_LEFT => JoinType::Left,
        QL_JOIN_RIGHT => JoinType::Right,
        QL_JOIN_FULL => JoinType::Full,
        QL_JOIN_LEFT_SEMI => JoinType::LeftSemi,
        QL_JOIN_RIGHT_SEMI => JoinType::RightSemi,
        QL_JOIN_LEFT_ANTI => JoinType::LeftAnti,
        QL_JOIN_RIGHT_ANTI => JoinType::RightAnti,
        QL_JOIN_LEFT_MARK => JoinType::LeftMark,
        t => return Err(DataFusionError::Plan(format!("planner rewrite: join type {t} cannot be rebuilt"))),
    })
}

// ---------------------------------------------------- view → logical plan

fn expr_of(view: &ql_plan_view, id: ql_expr_id, session: &dyn Session) -> Result<Expr> {
    if id < 0 || id >= view.n_exprs {
        return Err(DataFusionError::Plan(format!("planner rewrite: expression id {id} out of range")));
    }
    // SAFETY: ids checked against the arena.
    let e = unsafe { &*view.exprs.add(id as usize) };
    let args: Vec<Expr> = (0..e.n_args.max(0) as usize)
        .map(|i| expr_of(view, unsafe { *e.args.add(i) }, session))
        .collect::<Result<_>>()?;
    let arg = |i: usize| args.get(i).cloned().ok_or_else(|| DataFusionError::Plan("planner rewrite: missing argument".into()));
    Ok(match e.kind {
        QL_EXPR_COLUMN => {
            let q = cstr(e.qualifier);
            Expr::Column(Column::new(if q.is_empty() { None } else { Some(TableReference::from(q)) }, cstr(e.name)))
        }
        QL_EXPR_LITERAL => {
            let f = cstr(e.literal.format);
            let dt = crate::convert::data_type_of_format(&f)
                .ok_or_else(|| DataFusionError::Plan(format!("planner rewrite: literal of format {f:?}")))?;
            let v = crate::convert::scalar_from_ql(&e.literal, &dt)
                .ok_or_else(|| DataFusionError::Plan(format!("planner rewrite: literal of type {dt}")))?;
            Expr::Literal(v, None)
        }
        QL_EXPR_BINARY => {
            let op = match e.op {
                QL_OP_EQ => Operator::Eq,
                QL_OP_NE => Operator::NotEq,
                QL_OP_LT => Operator::Lt,
                QL_OP_LE => Operator::LtEq,
                QL_OP_GT => Operator::Gt,
                QL_OP_GE => Operator::GtEq,
                QL_OP_AND => Operator::And,
                QL_OP_OR => Operator::Or,
                QL_OP_PLUS => Operator::Plus,
                QL_OP_MINUS => Operator::Minus,
                QL_OP_MULTIPLY => Operator::Multiply,
                QL_OP_DIVIDE => Operator::Divide,
                QL_OP_MODULO => Operator::Modulo,
                QL_OP_IS_DISTINCT_FROM => Operator::IsDistinctFrom,
                QL_OP_IS_NOT_DISTINCT_FROM => Operator::IsNotDistinctFrom,
                QL_OP_STRING_CONCAT => Operator::StringConcat,
                o => return Err(DataFusionError::Plan(format!("planner rewrite: operator {o}"))),
            };
            datafusion::logical_expr::binary_expr(arg(0)?, op, arg(1)?)
        }
        QL_EXPR_NOT => Expr::Not(Box::new(arg(0)?)),
        QL_EXPR_NEGATIVE => Expr::Negative(Box::new(arg(0)?)),
        QL_EXPR_IS_NULL => Expr::IsNull(Box::new(arg(0)?)),
        QL_EXPR_IS_NOT_NULL => Expr::IsNotNull(Box::new(arg(0)?)),
        QL_EXPR_CAST | QL_EXPR_TRY_CAST => {
            let f = cstr(e.type_format);
            let dt: DataType = crate::convert::data_type_of_format(&f)
                .ok_or_else(|| DataFusionError::Plan(format!("planner rewrite: cast to format {f:?}")))?;
            if e.kind == QL_EXPR_CAST {
                datafusion::logical_expr::cast(arg(0)?, dt)
            } else {
                datafusion::logical_expr::try_cast(arg(0)?, dt)
            }
        }
        QL_EXPR_ALIAS => arg(0)?.alias(cstr(e.name)),
        QL_EXPR_SCALAR_FUNCTION => {
            let f = function_for(&e.function, &cstr(e.name), session, QL_FUNCTION_SCALAR)?;
            let udf = session.scalar_functions().get(&f).cloned().ok_or_else(|| DataFusionError::Plan(format!("no function {f}")))?;
            Expr::ScalarFunction(ScalarFunction::new_udf(udf, args))
        }
        QL_EXPR_AGGREGATE_FUNCTION => {
            let f = function_for(&e.function, &cstr(e.name), session, QL_FUNCTION_AGGREGATE)?;
            let udaf =
                session.aggregate_functions().get(&f).cloned().ok_or_else(|| DataFusionError::Plan(format!("no aggregate {f}")))?;
            let filter = if e.filter >= 0 { Some(Box::new(expr_of(view, e.filter, session)?)) } else { None };
            Expr::AggregateFunction(AggregateFunction::new_udf(udaf, args, e.flags & QL_EXPR_DISTINCT != 0, filter, vec![], None))
        }
        k => return Err(DataFusionError::Plan(format!("planner rewrite: expression kind {k} cannot be rebuilt"))),
    })
}

/// The session name of the function an identity denotes: built-ins by their
/// canonical name, user functions only when the session's function of that
/// name has exactly this identity (never a look-alike).
fn function_for(id: &ql_function_id, name: &str, session: &dyn Session, kind: i32) -> Result<String> {
    let fname = cstr(id.name);
    let fname = if fname.is_empty() { name.to_string() } else { fname };
    let found = match kind {
        QL_FUNCTION_SCALAR => session.scalar_functions().get(&fname).map(|f| crate::identity::scalar_identity(f)),
        _ => session.aggregate_functions().get(&fname).map(|f| crate::identity::aggregate_identity(f)),
    };
    match found {
        Some(have) if have.origin == id.origin && (id.origin == QL_ORIGIN_BUILTIN || have.uid == id.uid) => Ok(fname),
        _ => Err(DataFusionError::Plan(format!("planner rewrite: the session has no function with the identity of '{fname}'"))),
    }
}

fn plan_of(view: &ql_plan_view, id: ql_node_id, session: &dyn Session) -> Result<LogicalPlan> {
    if id < 0 || id >= view.n_nodes {
        return Err(DataFusionError::Plan(format!("planner rewrite: node id {id} out of range")));
    }
    // SAFETY: ids checked against the arena.
    let n = unsafe { &*view.nodes.add(id as usize) };
    let inputs: Vec<LogicalPlan> =
        (0..n.n_inputs.max(0) as usize).map(|i| plan_of(view, unsafe { *n.inputs.add(i) }, session)).collect::<Result<_>>()?;
    let ids = |p: *const ql_expr_id, k: i32| -> Vec<ql_expr_id> { (0..k.max(0) as usize).map(|i| unsafe { *p.add(i) }).collect() };
    let exprs = |p: *const ql_expr_id, k: i32| -> Result<Vec<Expr>> {
        ids(p, k).into_iter().map(|e| expr_of(view, e, session)).collect()
    };
    let input = |i: usize| inputs.get(i).cloned().ok_or_else(|| DataFusionError::Plan("planner rewrite: missing input".into()));
    let b = match n.kind {
        QL_NODE_TABLE_SCAN => {
            if n.table.is_null() || unsafe { (*n.table).host_handle.is_null() } {
                return Err(DataFusionError::Plan("planner rewrite: table scan without a host table".into()));
            }
            let t = unsafe { table_from_handle((*n.table).host_handle) };
            let proj = if n.n_projection < 0 {
                None
            } else {
                Some((0..n.n_projection as usize).map(|i| unsafe { *n.projection.add(i) } as usize).collect::<Vec<_>>())
            };
            let filters = exprs(n.exprs, n.n_exprs)?;
            let fetch = if n.fetch < 0 { None } else { Some(n.fetch as usize) };
            LogicalPlanBuilder::scan_with_filters_fetch(cstr(n.name), provider_as_source(t), proj, filters, fetch)?
        }
        QL_NODE_PROJECTION => LogicalPlanBuilder::from(input(0)?).project(exprs(n.exprs, n.n_exprs)?)?,
        QL_NODE_FILTER => {
            let mut es = exprs(n.exprs, n.n_exprs)?;
            LogicalPlanBuilder::from(input(0)?).filter(es.pop().ok_or_else(|| DataFusionError::Plan("filter without predicate".into()))?)?
        }
        QL_NODE_AGGREGATE => LogicalPlanBuilder::from(input(0)?).aggregate(exprs(n.exprs, n.n_exprs)?, exprs(n.exprs2, n.n_exprs2)?)?,
        QL_NODE_LIMIT => LogicalPlanBuilder::from(input(0)?).limit(n.skip.max(0) as usize, if n.fetch < 0 { None } else { Some(n.fetch as usize) })?,
        QL_NODE_SORT => {
            let mut sorts = Vec::new();
            for e in ids(n.exprs, n.n_exprs) {
                let x = unsafe { &*view.exprs.add(e as usize) };
                if x.kind != QL_EXPR_SORT || x.n_args != 1 {
                    return Err(DataFusionError::Plan("planner rewrite: sort key is not a SORT expression".into()));
                }
                let inner = expr_of(view, unsafe { *x.args }, session)?;
                sorts.push(inner.sort(x.flags & QL_SORT_DESC == 0, x.flags & QL_SORT_NULLS_FIRST != 0));
            }
            LogicalPlanBuilder::from(input(0)?).sort_with_limit(sorts, if n.fetch < 0 { None } else { Some(n.fetch as usize) })?
        }
        QL_NODE_SUBQUERY_ALIAS => LogicalPlanBuilder::from(input(0)?).alias(cstr(n.name))?,
        QL_NODE_DISTINCT => LogicalPlanBuilder::from(input(0)?).distinct()?,
        QL_NODE_UNION => {
            let mut it = inputs.clone().into_iter();
            let first = it.next().ok_or_else(|| DataFusionError::Plan("union without inputs".into()))?;
            let mut b = LogicalPlanBuilder::from(first);
            for p in it {
                b = if n.flags & QL_NODE_UNION_DISTINCT != 0 { b.union_distinct(p)? } else { b.union(p)? };
            }
            b
        }
        QL_NODE_EMPTY_RELATION => LogicalPlanBuilder::empty(n.flags & QL_NODE_PRODUCE_ONE_ROW != 0),
        QL_NODE_JOIN => {
            if n.flags & QL_NODE_NULL_EQUALS_NULL != 0 {
                return Err(DataFusionError::Plan("planner rewrite: a join whose keys compare NULL equal cannot be rebuilt".into()));
            }
            let jt = join_type_of(n.join_type)?;
            let (left, right) = (exprs(n.exprs, n.n_exprs)?, exprs(n.exprs2, n.n_exprs2)?);
            let filter = if n.condition >= 0 { Some(expr_of(view, n.condition, session)?) } else { None };
            LogicalPlanBuilder::from(input(0)?).join_with_expr_keys(input(1)?, jt, (left, right), filter)?
        }
        QL_NODE_VALUES => {
            let cells = exprs(n.exprs, n.n_exprs)?;
            let rows = n.n_rows.max(0) as usize;
            if rows == 0 || cells.is_empty() || cells.len() % rows != 0 {
                return Err(DataFusionError::Plan(format!("planner rewrite: VALUES with {} cells in {rows} rows", cells.len())));
            }
            let width = cells.len() / rows;
            LogicalPlanBuilder::values(cells.chunks(width).map(|r| r.to_vec()).collect())?
        }
        k => return Err(DataFusionError::Plan(format!("planner rewrite: node kind {k} cannot be rebuilt"))),
    };
    b.build()
}

// ------------------------------------------------------- splicing answers

/// A physical plan a planner chose for a subtree, standing in the logical
/// plan until DataFusion's physical planner reaches it.
#[derive(Clone)]
pub struct QlinkPhysicalNode {
    plan: Arc<dyn ExecutionPlan>,
    schema: DFSchemaRef,
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
struct QlinkExtensionPlanner;

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

fn replace_at(plan: &LogicalPlan, path: &[usize], with: LogicalPlan) -> Result<LogicalPlan> {
    let Some((&first, rest)) = path.split_first() else {
        return Ok(with);
    };
    let mut inputs: Vec<LogicalPlan> = plan.inputs().into_iter().cloned().collect();
    let child = inputs.get(first).ok_or_else(|| DataFusionError::Internal("bad subtree path".into()))?.clone();
    inputs[first] = replace_at(&child, rest, with)?;
    plan.with_new_exprs(plan.expressions(), inputs)
}

// ---------------------------------------------------------- the planner

/// One installed planner (from a plugin, or built by the host itself).
pub struct InstalledPlanner {
    raw: ql_planner,
    plugin: Option<Arc<Plugin>>,
    name: String,
}
unsafe impl Send for InstalledPlanner {}
unsafe impl Sync for InstalledPlanner {}

impl Drop for InstalledPlanner {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.as_ref().map(|p| p.enter());
            unsafe { r(&mut self.raw) };
        }
    }
}

impl InstalledPlanner {
    /// Whether the planner reads a lazy plan view (QL_PLANNER_LAZY_VIEW,
    /// from a planner whose struct has the flags member).
    pub fn lazy_view(&self) -> bool {
        let has_flags = self.raw.struct_size as usize >= std::mem::offset_of!(ql_planner, flags) + std::mem::size_of::<u32>();
        has_flags && self.raw.flags & QL_PLANNER_LAZY_VIEW != 0
    }

    /// Take ownership of a planner (e.g. from a plugin's planner_open).
    pub fn new(raw: ql_planner, plugin: Option<Arc<Plugin>>, name: &str) -> Arc<InstalledPlanner> {
        Arc::new(InstalledPlanner { raw, plugin, name: name.to_string() })
    }

    /// Open planner `name` of `plugin`.
    pub fn open(plugin: &Arc<Plugin>, name: &str, options: &[(String, String)]) -> Result<Arc<InstalledPlanner>> {
        let open = plugin
            .descriptor()
            .planner_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no planners", plugin.name())))?;
        let c = std::ffi::CString::new(name).unwrap_or_default();
        let opts = crate::plugin::Options::new(options)?;
        let raw_opts = opts.raw();
        let mut raw: ql_planner = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            unsafe { open(plugin.descriptor(), c.as_ptr(), &raw_opts, &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening planner {}/{name}", plugin.name()))?;
        Ok(Self::new(raw, Some(Arc::clone(plugin)), name))
    }
}


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
        QlinkQueryPlanner {
            planners,
            default: DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(QlinkExtensionPlanner)]),
        }
    }

    /// Plan `plan`; `skip` is a planner that asked for exactly this plan
    /// through plan_physical (asking it again would recurse forever).
    fn plan<'a>(
        &'a self,
        plan: &'a LogicalPlan,
        session: &'a dyn Session,
        skip: Option<&'a InstalledPlanner>,
    ) -> futures::future::BoxFuture<'a, Result<Arc<dyn ExecutionPlan>>> {
        Box::pin(async move {
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
            crate::metrics::HOOK_NANOS.fetch_add(t0.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
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
        crate::metrics::VIEW_NANOS.fetch_add(t0.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
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
        // Planned without the physical optimizer: the plan it becomes part
        // of is optimized as a whole, children included (optimizing here
        // too would repeat that work once per level of nested planners).
        let session = SessionOverride::unoptimized(call.session);
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

#[allow(dead_code)]
fn _handle(_: &PlanHandle) {}
