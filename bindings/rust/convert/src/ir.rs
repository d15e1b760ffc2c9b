// SPDX-License-Identifier: Apache-2.0
//! A qlink IR expression (`struct ql_expr` in a `ql_plan_view` arena,
//! qlink/plan.h) as a DataFusion logical `Expr`.
//!
//! Shared by the DataFusion host (a planner's REWRITE answer rebuilt as a
//! logical plan) and the Rust plugin SDK (a host's pushed-down filters handed
//! to a DataFusion table provider). Literals, operators, casts and the
//! predicate shapes are converted here; what only the caller knows (which
//! schema a column indexes, which session resolves a function) goes through
//! [`Resolver`].

use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{binary_expr, cast, try_cast, Expr, Like};
use qlink_sys::*;

use crate::intern::cstr;
use crate::ops::op_from_ql;
use crate::scalars::scalar_from_ql;
use crate::types::data_type_of_format;

/// What an expression's context decides.
pub trait Resolver {
    /// A QL_EXPR_COLUMN: by its name and qualifier (a plan node's input) or
    /// by its `column_index` (a table's full schema), as the caller knows.
    fn column(&self, e: &ql_expr) -> Result<Expr>;
    /// A QL_EXPR_SCALAR_FUNCTION over converted `args`, by the function's
    /// identity (`e.function`) and the name it was written with (`e.name`).
    fn scalar_function(&self, e: &ql_expr, args: Vec<Expr>) -> Result<Expr>;
    /// A QL_EXPR_AGGREGATE_FUNCTION; `filter` is its FILTER (WHERE ...).
    fn aggregate_function(&self, e: &ql_expr, args: Vec<Expr>, filter: Option<Expr>) -> Result<Expr> {
        let _ = (args, filter);
        Err(DataFusionError::Plan(format!("aggregate '{}' cannot be converted here", cstr(e.name))))
    }
}

/// Expression `id` of `view` as a DataFusion expression. `what` names the
/// caller in errors ("planner rewrite", "filter"). Errors (Plan) name the
/// kind, operator or type that has no DataFusion form; ids are checked
/// against the arena, so a malformed view is an error, not a crash.
pub fn expr_from_ir(view: &ql_plan_view, id: ql_expr_id, resolver: &dyn Resolver, what: &str) -> Result<Expr> {
    let err = |m: String| DataFusionError::Plan(format!("{what}: {m}"));
    if id < 0 || id >= view.n_exprs || view.exprs.is_null() {
        return Err(err(format!("expression id {id} out of range")));
    }
    // SAFETY: id checked against the arena.
    let e = unsafe { &*view.exprs.add(id as usize) };
    if e.n_args > 0 && e.args.is_null() {
        return Err(err(format!("expression {id} lists {} arguments but none are given", e.n_args)));
    }
    let arg_ids = || (0..e.n_args.max(0) as usize).map(|i| unsafe { *e.args.add(i) });
    let convert = |a| expr_from_ir(view, a, resolver, what);
    let args = || arg_ids().map(convert).collect::<Result<Vec<Expr>>>();
    let one = |i: usize| -> Result<Expr> {
        let a = arg_ids().nth(i).ok_or_else(|| err(format!("expression {id} lacks argument {i}")))?;
        convert(a)
    };
    let boxed = |i: usize| one(i).map(Box::new);
    let negated = e.flags & QL_EXPR_NEGATED != 0;
    Ok(match e.kind {
        QL_EXPR_COLUMN => resolver.column(e)?,
        QL_EXPR_LITERAL => {
            let f = cstr(e.literal.format);
            let dt = data_type_of_format(&f).ok_or_else(|| err(format!("literal of format {f:?}")))?;
            Expr::Literal(scalar_from_ql(&e.literal, &dt).ok_or_else(|| err(format!("literal of type {dt}")))?, None)
        }
        QL_EXPR_BINARY => {
            let op = op_from_ql(e.op).ok_or_else(|| err(format!("operator {}", e.op)))?;
            binary_expr(one(0)?, op, one(1)?)
        }
        QL_EXPR_NOT => Expr::Not(boxed(0)?),
        QL_EXPR_NEGATIVE => Expr::Negative(boxed(0)?),
        QL_EXPR_IS_NULL => Expr::IsNull(boxed(0)?),
        QL_EXPR_IS_NOT_NULL => Expr::IsNotNull(boxed(0)?),
        QL_EXPR_CAST | QL_EXPR_TRY_CAST => {
            let f = cstr(e.type_format);
            let dt = data_type_of_format(&f).ok_or_else(|| err(format!("cast to format {f:?}")))?;
            if e.kind == QL_EXPR_CAST {
                cast(one(0)?, dt)
            } else {
                try_cast(one(0)?, dt)
            }
        }
        QL_EXPR_ALIAS => one(0)?.alias(cstr(e.name)),
        QL_EXPR_IN_LIST => {
            let mut all = args()?;
            if all.is_empty() {
                return Err(err("IN list without its operand".into()));
            }
            let list = all.split_off(1);
            all.pop().unwrap().in_list(list, negated)
        }
        QL_EXPR_BETWEEN => {
            let (x, lo, hi) = (one(0)?, one(1)?, one(2)?);
            if negated {
                x.not_between(lo, hi)
            } else {
                x.between(lo, hi)
            }
        }
        QL_EXPR_LIKE => {
            let ci = e.flags & QL_EXPR_CASE_INSENSITIVE != 0;
            Expr::Like(Like::new(negated, boxed(0)?, boxed(1)?, None, ci))
        }
        QL_EXPR_SCALAR_FUNCTION => resolver.scalar_function(e, args()?)?,
        QL_EXPR_AGGREGATE_FUNCTION => {
            let filter = if e.filter >= 0 { Some(convert(e.filter)?) } else { None };
            resolver.aggregate_function(e, args()?, filter)?
        }
        k => return Err(err(format!("expression kind {k} cannot be rebuilt"))),
    })
}
