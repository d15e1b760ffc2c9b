// SPDX-License-Identifier: Apache-2.0
//! The plan view a planner plugin reads (qlink/plan.h): DataFusion's
//! optimized logical plan as libqlink's IR arena, complete or lazy.
//!
//! A lazy view (for planners that set QL_PLANNER_LAZY_VIEW) starts as a
//! skeleton, one record per node with its kind, inputs, join type, limits
//! and name, and lowers a node's expressions, schema, projection and table
//! only when the planner expands that node. Over the 22 TPC-H queries the
//! skeleton is about a seventh of the complete view (47 us of 333 us, warm),
//! and a planner that declines after looking at a few nodes pays for those.
//! Table scans carry the `TableProvider` by reference (G1) and function
//! calls their identity (G2) either way.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{DFSchemaRef, JoinType, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, LogicalPlan};

use crate::convert::CStrings;
use crate::error::{guard_status, set_error, Result};
use crate::expr::{Lowering, Resolve};
use crate::ffi::*;

/// The handle a plan view carries for a host table: the address of an
/// `Arc<dyn TableProvider>` that outlives the view (by reference, gap G1).
pub fn table_handle(p: &Arc<dyn TableProvider>) -> *const std::os::raw::c_void {
    p as *const Arc<dyn TableProvider> as *const std::os::raw::c_void
}

/// The table behind a handle made by [`table_handle`].
///
/// # Safety
/// `h` must come from `table_handle` on an Arc that is still alive.
pub unsafe fn table_from_handle(h: *const std::os::raw::c_void) -> Arc<dyn TableProvider> {
    Arc::clone(&*(h as *const Arc<dyn TableProvider>))
}

fn node_kind(p: &LogicalPlan) -> i32 {
    match p {
        LogicalPlan::TableScan(_) => QL_NODE_TABLE_SCAN,
        LogicalPlan::Projection(_) => QL_NODE_PROJECTION,
        LogicalPlan::Filter(_) => QL_NODE_FILTER,
        LogicalPlan::Aggregate(_) => QL_NODE_AGGREGATE,
        LogicalPlan::Join(_) => QL_NODE_JOIN,
        LogicalPlan::Sort(_) => QL_NODE_SORT,
        LogicalPlan::Limit(_) => QL_NODE_LIMIT,
        LogicalPlan::Union(_) => QL_NODE_UNION,
        LogicalPlan::SubqueryAlias(_) => QL_NODE_SUBQUERY_ALIAS,
        LogicalPlan::Values(_) => QL_NODE_VALUES,
        LogicalPlan::EmptyRelation(_) => QL_NODE_EMPTY_RELATION,
        LogicalPlan::Window(_) => QL_NODE_WINDOW,
        LogicalPlan::Distinct(_) => QL_NODE_DISTINCT,
        _ => QL_NODE_OTHER,
    }
}

/// OR of QL_NODE_BIT(kind) over the plan (the decline fast path).
pub fn kind_mask(p: &LogicalPlan) -> u32 {
    let mut m = 1u32 << node_kind(p);
    for i in p.inputs() {
        m |= kind_mask(i);
    }
    m
}

fn join_type(t: &JoinType) -> i32 {
    match t {
        JoinType::Inner => QL_JOIN_INNER,
        JoinType::Left => QL_JOIN_LEFT,
        JoinType::Right => QL_JOIN_RIGHT,
        JoinType::Full => QL_JOIN_FULL,
        JoinType::LeftSemi => QL_JOIN_LEFT_SEMI,
        JoinType::RightSemi => QL_JOIN_RIGHT_SEMI,
        JoinType::LeftAnti => QL_JOIN_LEFT_ANTI,
        JoinType::RightAnti => QL_JOIN_RIGHT_ANTI,
        JoinType::LeftMark => QL_JOIN_LEFT_MARK,
        _ => QL_JOIN_OTHER,
    }
}

/// The subtree of `plan` at `path`.
pub fn subtree<'p>(plan: &'p LogicalPlan, path: &[usize]) -> Option<&'p LogicalPlan> {
    let mut p = plan;
    for &i in path {
        p = *p.inputs().get(i)?;
    }
    Some(p)
}

/// A plan view of `plan` plus what it borrows, and the map from node ids
/// back to the logical subtrees (for plan_physical, for splicing answers in,
/// and for expanding a lazy view's nodes).
pub struct PlanViewBuild<'p> {
    /// The view handed out and what fills it. Boxed: the view's address is
    /// what planners hold and `expand` receives; in a cell: `expand` writes
    /// through it while the planner reads the view.
    state: Box<UnsafeCell<ViewState>>,
    _plan: PhantomData<&'p LogicalPlan>,
}

struct ViewState {
    raw: ql_plan_view,
    vb: ViewBuilder,
}

/// Child indices from the root to node `id`; None for an unknown id.
fn path_of(parents: &[(ql_node_id, u32)], id: ql_node_id) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    let mut at = id;
    loop {
        let &(parent, index) = parents.get(usize::try_from(at).ok()?)?;
        if parent < 0 {
            break;
        }
        out.push(index as usize);
        at = parent;
    }
    out.reverse();
    Some(out)
}

impl<'p> PlanViewBuild<'p> {
    /// The view, valid as long as `self`.
    pub fn view(&self) -> *const ql_plan_view {
        // SAFETY: the box outlives the pointer's documented validity.
        unsafe { &(*self.state.get()).raw }
    }

    /// Child indices from the root to node `id`; None for an unknown id.
    pub fn path(&self, id: ql_node_id) -> Option<Vec<usize>> {
        // SAFETY: `expand` never changes the parent map once built.
        path_of(unsafe { &(*self.state.get()).vb.parents }, id)
    }

    /// Nodes in the view.
    pub fn n_nodes(&self) -> i32 {
        // SAFETY: see view().
        unsafe { (*self.view()).n_nodes }
    }
}

/// Build the complete plan view of a logical plan (every node filled).
pub fn plan_view(plan: &LogicalPlan) -> Result<PlanViewBuild<'_>> {
    build(plan, false)
}

/// Build the lazy plan view of a logical plan: skeleton nodes, each filled
/// when the planner calls the view's `expand` on it.
pub fn plan_view_lazy(plan: &LogicalPlan) -> Result<PlanViewBuild<'_>> {
    build(plan, true)
}

fn build(plan: &LogicalPlan, lazy: bool) -> Result<PlanViewBuild<'_>> {
    let mut vb = ViewBuilder {
        low: Lowering::new(Resolve::Inputs(Vec::new()))?,
        // Room for most plans' nodes at once (TPC-H's have 5 to 35).
        parents: Vec::with_capacity(64),
        plans: Vec::with_capacity(64),
        tables: Vec::new(),
        schemas: Vec::new(),
        exported: Vec::new(),
        qualifiers: Vec::new(),
        decimals: Vec::new(),
        formats: Vec::new(),
        flags: Vec::new(),
    };
    let root = vb.node(plan, lazy)?;
    let mut raw: ql_plan_view = zeroed();
    raw.struct_size = std::mem::size_of::<ql_plan_view>() as u32;
    vb.low.b.peek(root, &mut raw)?;
    if lazy {
        raw.expand = Some(expand_node);
    }
    let state = Box::new(UnsafeCell::new(ViewState { raw, vb }));
    // SAFETY: the state is boxed; its address is stable for the view's life.
    unsafe { (*state.get()).raw.private_data = state.get() as *mut std::os::raw::c_void };
    Ok(PlanViewBuild { state, _plan: PhantomData })
}

/// `ql_plan_view.expand` of a lazy view.
unsafe extern "C" fn expand_node(view: *const ql_plan_view, node: ql_node_id, error: *mut ql_error) -> c_int {
    guard_status(error, "plan view expand", || {
        let state = (*view).private_data as *mut ViewState;
        if node < 0 || node >= (*view).n_nodes {
            return set_error(error, QL_EINVAL, &format!("expand: no node {node} (the view has {})", (*view).n_nodes));
        }
        if (*(*view).nodes.add(node as usize)).flags & QL_NODE_UNEXPANDED == 0 {
            return QL_OK;
        }
        let st = &mut *state;
        let Some(&p) = st.vb.plans.get(node as usize).filter(|p| !p.is_null()) else {
            return set_error(error, QL_EINVAL, &format!("expand: node {node} is not in the plan"));
        };
        let root = st.raw.root;
        // SAFETY: `p` points into the plan PlanViewBuild borrows for as long
        // as the view lives.
        let filled = st.vb.fill(&*p, node).and_then(|()| st.vb.low.b.peek(root, &mut st.raw));
        match filled {
            Ok(()) => QL_OK,
            Err(e) => set_error(error, QL_EINVAL, &format!("expand: node {node}: {e}")),
        }
    })
}

struct ViewBuilder {
    low: Lowering,
    /// Node id → (parent id or -1, index among the parent's inputs): the
    /// path to a node (plan_physical, splicing answers in) is found by
    /// walking, so building a view clones no plan node and stores no path
    /// per node.
    parents: Vec<(ql_node_id, u32)>,
    /// Node id → the logical node it describes (in the plan PlanViewBuild
    /// borrows): expanding a node finds it directly, not by walking a path
    /// from the root (which allocates each node's input list on the way).
    plans: Vec<*const LogicalPlan>,
    /// Boxed: the view points at each `Arc` (a stable address as the list grows).
    #[allow(clippy::vec_box)]
    tables: Vec<Box<Arc<dyn TableProvider>>>,
    /// Schemas already in the builder, by the Arrow schema's address (a
    /// filter, sort or limit shares its input's schema; scans of one table
    /// share the table's): each is written once and shared by the builder.
    /// Linear search: a plan has few.
    schemas: Vec<(usize, SchemaRef, *const ArrowSchema)>,
    /// Schemas with nested types, exported by Arrow for the builder to copy
    /// (boxed: the builder points at them as the list grows).
    #[allow(clippy::vec_box)]
    exported: Vec<Box<ArrowSchema>>,
    /// Field qualifiers already written, by the DFSchema's address.
    qualifiers: Vec<(usize, *const *const c_char)>,
    /// Decimal formats ("d:15,2") already written, by (precision, scale).
    decimals: Vec<((u8, i8), *const c_char)>,
    /// Scratch for struct_schema's formats and flags (reused; the names
    /// and their lengths are still collected per schema).
    formats: Vec<*const c_char>,
    flags: Vec<i64>,
}

/// What a node's filled members point at until the builder has copied them.
#[derive(Default)]
struct Payload {
    exprs: Vec<ql_expr_id>,
    exprs2: Vec<ql_expr_id>,
    projection: Vec<i32>,
    table: Option<Box<ql_table_ref>>,
}

impl ViewBuilder {
    fn lower_all(&mut self, es: &[Expr]) -> Vec<ql_expr_id> {
        es.iter().map(|e| self.low.lower(e)).collect()
    }

    /// The Arrow C format of a flat column type, written to the builder
    /// once; None for nested types (Arrow exports those).
    fn flat_format(&mut self, dt: &DataType) -> Option<*const c_char> {
        if let DataType::Decimal128(p, sc) = dt {
            let key = (*p, *sc);
            if let Some((_, f)) = self.decimals.iter().find(|(k, _)| *k == key) {
                return Some(*f);
            }
            let f = self.low.b.add(&format!("d:{p},{sc}"));
            self.decimals.push((key, f));
            return Some(f);
        }
        crate::convert::static_format(dt).map(|f| f.as_ptr())
    }

    /// The builder's schema for `schema` (made once per schema).
    fn schema_ptr(&mut self, schema: &SchemaRef) -> Result<*const ArrowSchema> {
        let key = Arc::as_ptr(schema) as usize;
        if let Some((_, _, s)) = self.schemas.iter().find(|(k, _, _)| *k == key) {
            return Ok(*s);
        }
        self.formats.clear();
        self.flags.clear();
        let mut flat = true;
        for f in schema.fields() {
            match self.flat_format(f.data_type()) {
                Some(fmt) => {
                    self.formats.push(fmt);
                    self.flags.push(if f.is_nullable() { 2 } else { 0 });
                }
                None => {
                    flat = false;
                    break;
                }
            }
        }
        let p = if flat {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            self.low.b.struct_schema(&self.formats, &names, &self.flags)
        } else {
            let exported = Box::new(ArrowSchema::try_from(schema.as_ref()).map_err(|e| DataFusionError::Internal(e.to_string()))?);
            let p: *const ArrowSchema = &*exported;
            self.exported.push(exported);
            p
        };
        self.schemas.push((key, Arc::clone(schema), p));
        Ok(p)
    }

    /// Per-field qualifiers of a node's output (made once per schema).
    fn qualifiers_ptr(&mut self, schema: &DFSchemaRef) -> *const *const c_char {
        let key = Arc::as_ptr(schema) as usize;
        if let Some((_, q)) = self.qualifiers.iter().find(|(k, _)| *k == key) {
            return *q;
        }
        let width = schema.fields().len();
        let q = if width == 0 { std::ptr::null_mut() } else { self.low.b.string_array(width) };
        if !q.is_null() {
            for (i, (qual, _)) in schema.iter().enumerate() {
                let p = qual.map(|r| self.low.qualifier(r)).unwrap_or(std::ptr::null());
                // SAFETY: `q` has `width` slots.
                unsafe { *q.add(i) = p };
            }
        }
        self.qualifiers.push((key, q));
        q
    }

    /// Add `p` and its inputs (inputs first); a skeleton when `lazy`.
    fn node(&mut self, p: &LogicalPlan, lazy: bool) -> Result<ql_node_id> {
        let children = p.inputs();
        // Node ids of the inputs: on the stack for the usual one or two.
        let (mut pair, mut many) = ([0 as ql_node_id; 2], Vec::new());
        for (i, child) in children.iter().enumerate() {
            let id = self.node(child, lazy)?;
            if children.len() <= pair.len() {
                pair[i] = id;
            } else {
                many.push(id);
            }
        }
        let inputs: &[ql_node_id] = if children.len() <= pair.len() { &pair[..children.len()] } else { &many };
        let mut n = ql_plan_node::empty(node_kind(p));
        n.n_inputs = inputs.len() as i32;
        n.inputs = if inputs.is_empty() { std::ptr::null() } else { inputs.as_ptr() };
        self.skeleton(p, &mut n);
        // A lazy node's payload waits for expand; `_held` keeps what `n`
        // points at alive until the builder has copied it.
        let _held = if lazy {
            n.flags |= QL_NODE_UNEXPANDED;
            None
        } else {
            Some(self.payload(p, &mut n)?)
        };
        let id = self.low.b.node(&n);
        if id < 0 {
            // The builder's sticky error; peek() reports its message.
            return Ok(id);
        }
        let needed = id as usize + 1;
        if self.parents.len() < needed {
            self.parents.resize(needed, (-1, 0));
            self.plans.resize(needed, std::ptr::null());
        }
        self.plans[id as usize] = p;
        for (i, &c) in inputs.iter().enumerate() {
            self.parents[c as usize] = (id, i as u32);
        }
        Ok(id)
    }

    /// Complete skeleton node `id` of `p`.
    fn fill(&mut self, p: &LogicalPlan, id: ql_node_id) -> Result<()> {
        // Only the payload is copied in: the skeleton's members stay.
        let mut n = ql_plan_node::empty(node_kind(p));
        let _held = self.payload(p, &mut n)?;
        self.low.b.node_expand(id, &n)
    }

    /// The members of a skeleton: flags, join type, limits, row count, name.
    fn skeleton(&mut self, p: &LogicalPlan, n: &mut ql_plan_node) {
        match p {
            LogicalPlan::TableScan(ts) => {
                n.name = self.low.qualifier(&ts.table_name);
                n.fetch = ts.fetch.map(|f| f as i64).unwrap_or(-1);
            }
            LogicalPlan::Join(j) => {
                n.join_type = join_type(&j.join_type);
                if j.null_equality == datafusion::common::NullEquality::NullEqualsNull {
                    n.flags |= QL_NODE_NULL_EQUALS_NULL;
                }
            }
            LogicalPlan::Sort(s) => n.fetch = s.fetch.map(|f| f as i64).unwrap_or(-1),
            LogicalPlan::Limit(l) => {
                let lit = |e: &Option<Box<Expr>>| match e.as_deref() {
                    Some(Expr::Literal(ScalarValue::Int64(Some(v)), _)) => Some(*v),
                    _ => None,
                };
                n.skip = lit(&l.skip).unwrap_or(0);
                n.fetch = lit(&l.fetch).unwrap_or(-1);
            }
            LogicalPlan::SubqueryAlias(sa) => n.name = self.low.b.add(&sa.alias.to_string()),
            LogicalPlan::EmptyRelation(er) if er.produce_one_row => {
                n.flags |= QL_NODE_PRODUCE_ONE_ROW;
            }
            LogicalPlan::Values(v) => n.n_rows = v.values.len() as i64,
            other if n.kind == QL_NODE_OTHER => n.name = self.low.b.add(&other.display().to_string()),
            _ => {}
        }
    }

    /// The members a lazy view fills on expand: schema, qualifiers,
    /// expressions, projection, table. The returned payload holds what `n`
    /// points at until the builder has copied it.
    fn payload(&mut self, p: &LogicalPlan, n: &mut ql_plan_node) -> Result<Payload> {
        let mut held = Payload::default();
        self.low.resolve = Resolve::Inputs(p.inputs().iter().map(|i| Arc::clone(i.schema())).collect());
        let schema = p.schema();
        n.schema = self.schema_ptr(schema.inner())?;
        n.field_qualifiers = self.qualifiers_ptr(schema);
        match p {
            LogicalPlan::TableScan(ts) => {
                let full = ts.source.schema();
                self.low.resolve = Resolve::Table(Arc::clone(&full));
                held.exprs = self.lower_all(&ts.filters);
                if let Some(pr) = &ts.projection {
                    held.projection = pr.iter().map(|&i| i as i32).collect();
                    n.n_projection = held.projection.len() as i32;
                    n.projection = held.projection.as_ptr();
                }
                let mut table_ref: ql_table_ref = zeroed();
                table_ref.name = self.low.qualifier(&ts.table_name);
                table_ref.schema = self.schema_ptr(&full)?;
                if let Ok(provider) = source_as_provider(&ts.source) {
                    let boxed = Box::new(provider);
                    table_ref.host_handle = table_handle(&boxed);
                    table_ref.provider = crate::table::qlink_provider_of(&boxed);
                    self.tables.push(boxed);
                }
                let table = held.table.insert(Box::new(table_ref));
                n.table = &**table;
            }
            LogicalPlan::Projection(pr) => held.exprs = self.lower_all(&pr.expr),
            LogicalPlan::Filter(f) => held.exprs = vec![self.low.lower(&f.predicate)],
            LogicalPlan::Aggregate(a) => {
                held.exprs = self.lower_all(&a.group_expr);
                held.exprs2 = self.lower_all(&a.aggr_expr);
            }
            LogicalPlan::Join(j) => {
                let (l, r): (Vec<Expr>, Vec<Expr>) = j.on.iter().cloned().unzip();
                held.exprs = self.lower_all(&l);
                held.exprs2 = self.lower_all(&r);
                n.condition = j.filter.as_ref().map(|f| self.low.lower(f)).unwrap_or(-1);
            }
            LogicalPlan::Sort(s) => {
                held.exprs = s.expr.iter().map(|se| self.low.sort(&se.expr, se.asc, se.nulls_first)).collect();
            }
            LogicalPlan::Window(w) => held.exprs = self.lower_all(&w.window_expr),
            LogicalPlan::Values(v) => {
                for row in &v.values {
                    let ids = self.lower_all(row);
                    held.exprs.extend(ids);
                }
            }
            _ => {}
        }
        n.n_exprs = held.exprs.len() as i32;
        n.exprs = if held.exprs.is_empty() { std::ptr::null() } else { held.exprs.as_ptr() };
        n.n_exprs2 = held.exprs2.len() as i32;
        n.exprs2 = if held.exprs2.is_empty() { std::ptr::null() } else { held.exprs2.as_ptr() };
        Ok(held)
    }
}
