// SPDX-License-Identifier: Apache-2.0
//! Planners in Rust (`struct ql_planner`, qlink/planner.h, docs/abi.md R11).
//!
//! A [`Planner`] is asked once per query with a read-only view of the host's
//! optimized logical plan ([`PlanContext`]) and answers:
//! - [`Answer::Decline`]: leave the plan alone (the default; one call);
//! - [`Answer::Physical`]: replace the subtree at a node by a DataFusion
//!   `ExecutionPlan` the planner built, whose leaves are subtrees the host
//!   planned on request ([`PlanContext::plan_physical`], a
//!   [`HostExec`](crate::host_exec::HostExec)). The plan runs on the
//!   plugin's runtime in the plugin's DataFusion session for that host
//!   session, with the host's memory pool; the host sees its host leaves as
//!   children (EXPLAIN shows them, its optimizer may replace them).
//!
//! The view is read lazily (QL_PLANNER_LAZY_VIEW): a node's schema and
//! expressions are expanded when [`PlanContext::node`] first reads it, so a
//! planner that declines after looking at a few nodes costs little.
//! Expressions convert to DataFusion `Expr`s over the node's inputs
//! ([`PlanContext::expr`], through the conversion the DataFusion host
//! uses) and on to physical expressions ([`PlanContext::physical_expr`]).
//!
//! Not offered yet: REWRITE answers (a logical subtree built with
//! libqlink's IR builder), and QL_PLANNER_INPUTS_UNOPTIMIZED.

use std::os::raw::c_int;
use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::{Column, DFSchema, TableReference};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::Sort;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use qlink_convert::cstr;
use qlink_convert::ir::{expr_from_ir, Resolver};
use qlink_sys::*;

use crate::error::{guard, guard_value, take_error, Error, Result};
use crate::host_exec::HostExec;
use crate::services::object_store::with_registry;
use crate::session::{host_stores, Library, PluginSession};

/// A node of the plan view (`ql_node_id`).
pub type NodeId = i32;
/// An expression of the plan view (`ql_expr_id`).
pub type ExprId = i32;

/// What a planner answers for one call.
pub enum Answer {
    /// Leave the plan alone.
    Decline,
    /// Replace the subtree rooted at `node` by `plan`. Its output columns
    /// must be the node's, in order (names and types as
    /// [`Node::schema`] gives them).
    Physical { node: NodeId, plan: Arc<dyn ExecutionPlan> },
}

/// A planner a plugin offers. Thread-safe: hosts may plan several queries
/// at once.
pub trait Planner: Send + Sync + 'static {
    /// The node kinds (`QL_NODE_*`) a plan must hold for the host to ask:
    /// empty asks for every plan.
    fn interest(&self) -> Vec<i32> {
        Vec::new()
    }

    /// Look at the plan and answer. An error fails the query with its
    /// message; to leave the plan alone, return [`Answer::Decline`].
    fn plan(&self, ctx: &PlanContext<'_>) -> Result<Answer>;
}

/// One planner call: the host's plan view, the plugin's DataFusion session
/// for the host session, and the host's physical planner. Valid only
/// during the call (not Send: the view is read on the calling thread).
pub struct PlanContext<'a> {
    raw: &'a ql_planner_context,
    view: *const ql_plan_view,
    session: Arc<PluginSession>,
}

/// A node of the plan view, expanded. Borrowed for the planner call.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    pub id: NodeId,
    raw: &'a ql_plan_node,
}

/// `n` elements at `p` (none for a NULL or empty list).
fn ids<'a>(p: *const i32, n: i32) -> &'a [i32] {
    if p.is_null() || n <= 0 {
        return &[];
    }
    // SAFETY: the view's lists hold n elements, borrowed for the call.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
}

impl<'a> Node<'a> {
    /// The node's kind (`QL_NODE_*`).
    pub fn kind(&self) -> i32 {
        self.raw.kind
    }
    /// Its flags (`QL_NODE_UNION_DISTINCT`, ...).
    pub fn flags(&self) -> i32 {
        self.raw.flags
    }
    /// Its inputs, in order.
    pub fn inputs(&self) -> &'a [NodeId] {
        ids(self.raw.inputs, self.raw.n_inputs)
    }
    /// TABLE_SCAN: the table's name; SUBQUERY_ALIAS: the alias; OTHER: the
    /// host's display.
    pub fn name(&self) -> String {
        cstr(self.raw.name)
    }
    /// SORT, LIMIT, TABLE_SCAN: the row limit, if any.
    pub fn fetch(&self) -> Option<usize> {
        (self.raw.fetch >= 0).then_some(self.raw.fetch as usize)
    }
    /// LIMIT: rows skipped.
    pub fn skip(&self) -> usize {
        self.raw.skip.max(0) as usize
    }
    /// JOIN: `QL_JOIN_*`.
    pub fn join_type(&self) -> i32 {
        self.raw.join_type
    }
    /// The node's expressions (SORT: its sort keys; PROJECTION: the output
    /// expressions; FILTER: the predicate; AGGREGATE: the group keys).
    pub fn exprs(&self) -> &'a [ExprId] {
        ids(self.raw.exprs, self.raw.n_exprs)
    }
    /// AGGREGATE: the aggregates; JOIN: the right keys.
    pub fn exprs2(&self) -> &'a [ExprId] {
        ids(self.raw.exprs2, self.raw.n_exprs2)
    }
    /// The node's output schema (unqualified names).
    pub fn schema(&self) -> Result<SchemaRef> {
        if self.raw.schema.is_null() {
            return Err(Error::invalid(format!("plan node {} has no schema", self.id)));
        }
        // SAFETY: the view's schema, borrowed for the call; read, not moved.
        let s = unsafe { &*self.raw.schema };
        Ok(Arc::new(Schema::try_from(s)?))
    }
    /// The relation of each output column (`t` of `t.x`), if any.
    pub fn qualifiers(&self, n: usize) -> Vec<Option<String>> {
        (0..n)
            .map(|i| {
                if self.raw.field_qualifiers.is_null() {
                    return None;
                }
                // SAFETY: one entry per output column.
                let q = cstr(unsafe { *self.raw.field_qualifiers.add(i) });
                (!q.is_empty()).then_some(q)
            })
            .collect()
    }
    /// The output schema with each column's relation, as DataFusion's
    /// logical plans carry it.
    pub fn df_schema(&self) -> Result<DFSchema> {
        let s = self.schema()?;
        let qualifiers = self.qualifiers(s.fields().len());
        let fields: Vec<(Option<TableReference>, Arc<Field>)> =
            qualifiers.into_iter().zip(s.fields().iter()).map(|(q, f)| (q.map(TableReference::from), f.clone())).collect();
        Ok(DFSchema::new_with_metadata(fields, s.metadata().clone())?)
    }
}

/// Columns by name and relation over a node's inputs; functions by name in
/// the plugin's session.
struct InputResolver<'a> {
    state: &'a SessionState,
}

impl Resolver for InputResolver<'_> {
    fn column(&self, e: &ql_expr) -> datafusion::error::Result<Expr> {
        let q = cstr(e.qualifier);
        Ok(Expr::Column(Column::new(if q.is_empty() { None } else { Some(TableReference::from(q)) }, cstr(e.name))))
    }

    fn scalar_function(&self, e: &ql_expr, args: Vec<Expr>) -> datafusion::error::Result<Expr> {
        crate::filters::session_function(self.state, e, args)
    }
}

impl<'a> PlanContext<'a> {
    /// The view (re-read after each expansion: its expression arena may move).
    fn view(&self) -> &'a ql_plan_view {
        // SAFETY: valid for the call; expansion only appends.
        unsafe { &*self.view }
    }

    /// The plan's root.
    pub fn root(&self) -> NodeId {
        self.view().root
    }

    /// Node `id` as it stands (its skeleton is always set); QL_EINVAL for
    /// an id out of range.
    fn skeleton(&self, id: NodeId) -> Result<&'a ql_plan_node> {
        let v = self.view();
        if id < 0 || id >= v.n_nodes || v.nodes.is_null() {
            return Err(Error::invalid(format!("plan node {id} of a view with {} nodes", v.n_nodes)));
        }
        // SAFETY: in range; nodes never move.
        Ok(unsafe { &*v.nodes.add(id as usize) })
    }

    /// Node `id`, expanded. QL_EINVAL for an id out of range; the host's
    /// error if it cannot expand it.
    pub fn node(&self, id: NodeId) -> Result<Node<'a>> {
        let raw = self.skeleton(id)?;
        if raw.flags & QL_NODE_UNEXPANDED != 0 {
            let expand =
                self.view().expand.ok_or_else(|| Error::invalid(format!("plan node {id} is unexpanded and the view cannot expand it")))?;
            let mut err: ql_error = zeroed();
            // SAFETY: on the thread the view was handed to, during the call.
            let rc = unsafe { expand(self.view, id, &mut err) };
            if rc != QL_OK {
                return Err(take_error(rc, &mut err));
            }
        }
        Ok(Node { id, raw })
    }

    /// The kind of node `id` without expanding it.
    pub fn kind(&self, id: NodeId) -> Result<i32> {
        Ok(self.skeleton(id)?.kind)
    }

    /// The inputs of node `id` without expanding it.
    pub fn inputs(&self, id: NodeId) -> Result<&'a [NodeId]> {
        let raw = self.skeleton(id)?;
        Ok(ids(raw.inputs, raw.n_inputs))
    }

    /// The plugin's DataFusion session for the host session being planned.
    pub fn state(&self) -> &SessionState {
        &self.session.state
    }

    /// The schema a node's expressions are written over: its inputs'
    /// output columns, concatenated (a join's left then right).
    pub fn input_schema(&self, node: &Node<'_>) -> Result<DFSchema> {
        let mut out = DFSchema::empty();
        for &i in node.inputs() {
            out.merge(&self.node(i)?.df_schema()?);
        }
        Ok(out)
    }

    /// Expression `id` (of `node`) as a DataFusion logical expression over
    /// the node's inputs (columns by name and relation). Errors name what
    /// has no DataFusion form.
    pub fn expr(&self, id: ExprId) -> Result<Expr> {
        let resolver = InputResolver { state: &self.session.state };
        Ok(expr_from_ir(self.view(), id, &resolver, "planner")?)
    }

    /// A SORT expression (a SORT node's keys) as a DataFusion sort.
    pub fn sort_expr(&self, id: ExprId) -> Result<Sort> {
        let v = self.view();
        if id < 0 || id >= v.n_exprs || v.exprs.is_null() {
            return Err(Error::invalid(format!("expression {id} of a view with {}", v.n_exprs)));
        }
        // SAFETY: in range.
        let e = unsafe { &*v.exprs.add(id as usize) };
        let args = ids(e.args, e.n_args);
        if e.kind != QL_EXPR_SORT || args.len() != 1 {
            return Err(Error::invalid(format!("expression {id} is not a sort key")));
        }
        Ok(Sort::new(self.expr(args[0])?, e.flags & QL_SORT_DESC == 0, e.flags & QL_SORT_NULLS_FIRST != 0))
    }

    /// `expr` as a physical expression over `node`'s inputs (the input plan
    /// [`plan_physical`](Self::plan_physical) returns has their columns).
    pub fn physical_expr(&self, node: &Node<'_>, expr: &Expr) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(self.session.state.create_physical_expr(expr.clone(), &self.input_schema(node)?)?)
    }

    /// `sort` as a physical sort expression over `node`'s inputs.
    pub fn physical_sort_expr(&self, node: &Node<'_>, sort: &Sort) -> Result<PhysicalSortExpr> {
        let e = self.physical_expr(node, &sort.expr)?;
        Ok(PhysicalSortExpr::new(e, arrow::compute::SortOptions::new(!sort.asc, sort.nulls_first)))
    }

    /// Ask the host to plan the subtree at `node` with its own physical
    /// planner (installed planners included): the result is a leaf of the
    /// plugin's plan, run by the host, its batches passed by reference.
    pub fn plan_physical(&self, node: NodeId) -> Result<Arc<dyn ExecutionPlan>> {
        self.kind(node)?;
        let f = self.raw.plan_physical.ok_or_else(|| Error::unsupported("this host cannot plan subtrees for a planner"))?;
        let mut out: ql_execution_plan = zeroed();
        let mut err: ql_error = zeroed();
        // SAFETY: the context is valid during the call; `out` is ours after.
        let rc = unsafe { f(self.raw, node, &mut out, &mut err) };
        if rc != QL_OK {
            return Err(take_error(rc, &mut err));
        }
        Ok(Arc::new(HostExec::import(out)?))
    }
}

struct PlannerState {
    planner: Arc<dyn Planner>,
    library: &'static Library,
    /// "<plugin>.<planner>": the consumer of the answers' memory.
    label: String,
}

fn state(p: *const ql_planner) -> &'static PlannerState {
    // SAFETY: private_data is the PlannerState this module boxed.
    unsafe { crate::private::borrow((*p).private_data) }
}

/// `planner` as a `ql_planner` the caller owns.
pub fn export_planner(planner: Arc<dyn Planner>, library: &'static Library, label: String) -> ql_planner {
    let interest = planner.interest().iter().filter(|k| (0..32).contains(*k)).fold(0u32, |m, k| m | (1u32 << *k as u32));
    let st = Box::new(PlannerState { planner, library, label });
    let mut out: ql_planner = zeroed();
    out.struct_size = std::mem::size_of::<ql_planner>() as u32;
    out.interest = interest;
    out.flags = QL_PLANNER_LAZY_VIEW;
    out.plan = Some(planner_plan);
    out.release = Some(planner_release);
    out.private_data = crate::private::into_private(st);
    out
}

unsafe extern "C" fn planner_plan(
    p: *const ql_planner,
    ctx: *const ql_planner_context,
    out: *mut ql_planner_result,
    error: *mut ql_error,
) -> c_int {
    guard(error, "planner", || {
        let st = state(p);
        if ctx.is_null() || (*ctx).plan.is_null() || out.is_null() {
            return Err(Error::invalid("planner called without a context, a plan or a result"));
        }
        let session = st.library.session((*ctx).session)?;
        let pc = PlanContext { raw: &*ctx, view: (*ctx).plan, session: session.clone() };
        let answer = with_registry(host_stores((*ctx).session), || st.planner.plan(&pc))?;
        match answer {
            Answer::Decline => (*out).action = QL_PLANNER_DECLINE,
            Answer::Physical { node, plan } => {
                pc.kind(node)?;
                (*out).action = QL_PLANNER_PHYSICAL;
                (*out).node = node;
                (*out).physical = crate::plan::export_plan(plan, session, st.label.clone());
            }
        }
        Ok(())
    })
}

unsafe extern "C" fn planner_release(p: *mut ql_planner) {
    guard_value((), || {
        crate::private::drop_box::<PlannerState>(&mut (*p).private_data);
        (*p).release = None;
    })
}
