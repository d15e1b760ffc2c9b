// SPDX-License-Identifier: Apache-2.0
//! REWRITE answers: a planner's plan view rebuilt as a DataFusion logical
//! plan with `LogicalPlanBuilder` (tables by their handles, functions by
//! their identities), then planned as usual.

use datafusion::catalog::Session;
use datafusion::common::{Column, JoinType, TableReference};
use datafusion::datasource::provider_as_source;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use qlink_convert::ir::{expr_from_ir, Resolver};

use super::plan_view::table_from_handle;
use crate::error::{cstr, Result};
use crate::ffi::*;

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

/// Columns by name and qualifier (a plan node's inputs), functions by
/// identity in the planning session.
struct SessionResolver<'a> {
    session: &'a dyn Session,
}

impl Resolver for SessionResolver<'_> {
    fn column(&self, e: &ql_expr) -> Result<Expr> {
        let q = cstr(e.qualifier);
        Ok(Expr::Column(Column::new(if q.is_empty() { None } else { Some(TableReference::from(q)) }, cstr(e.name))))
    }

    fn scalar_function(&self, e: &ql_expr, args: Vec<Expr>) -> Result<Expr> {
        let f = function_for(&e.function, &cstr(e.name), self.session, QL_FUNCTION_SCALAR)?;
        let udf = self.session.scalar_functions().get(&f).cloned().ok_or_else(|| DataFusionError::Plan(format!("no function {f}")))?;
        Ok(Expr::ScalarFunction(ScalarFunction::new_udf(udf, args)))
    }

    fn aggregate_function(&self, e: &ql_expr, args: Vec<Expr>, filter: Option<Expr>) -> Result<Expr> {
        let f = function_for(&e.function, &cstr(e.name), self.session, QL_FUNCTION_AGGREGATE)?;
        let udaf = self.session.aggregate_functions().get(&f).cloned().ok_or_else(|| DataFusionError::Plan(format!("no aggregate {f}")))?;
        let distinct = e.flags & QL_EXPR_DISTINCT != 0;
        Ok(Expr::AggregateFunction(AggregateFunction::new_udf(udaf, args, distinct, filter.map(Box::new), vec![], None)))
    }
}

fn expr_of(view: &ql_plan_view, id: ql_expr_id, session: &dyn Session) -> Result<Expr> {
    expr_from_ir(view, id, &SessionResolver { session }, "planner rewrite")
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

pub(super) fn plan_of(view: &ql_plan_view, id: ql_node_id, session: &dyn Session) -> Result<LogicalPlan> {
    if id < 0 || id >= view.n_nodes {
        return Err(DataFusionError::Plan(format!("planner rewrite: node id {id} out of range")));
    }
    // SAFETY: ids checked against the arena.
    let n = unsafe { &*view.nodes.add(id as usize) };
    let inputs: Vec<LogicalPlan> =
        (0..n.n_inputs.max(0) as usize).map(|i| plan_of(view, unsafe { *n.inputs.add(i) }, session)).collect::<Result<_>>()?;
    let ids = |p: *const ql_expr_id, k: i32| -> Vec<ql_expr_id> { (0..k.max(0) as usize).map(|i| unsafe { *p.add(i) }).collect() };
    let exprs = |p: *const ql_expr_id, k: i32| -> Result<Vec<Expr>> { ids(p, k).into_iter().map(|e| expr_of(view, e, session)).collect() };
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
        QL_NODE_LIMIT => {
            LogicalPlanBuilder::from(input(0)?).limit(n.skip.max(0) as usize, if n.fetch < 0 { None } else { Some(n.fetch as usize) })?
        }
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
