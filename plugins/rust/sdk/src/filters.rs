// SPDX-License-Identifier: Apache-2.0
//! Pushed-down filters and table-function arguments (`ql_expr_list`, in
//! qlink IR) as DataFusion `Expr`s, through the conversion the DataFusion
//! host uses the other way (`qlink_convert::ir`).
//!
//! Columns index the table's full schema (qlink/plan.h); functions are
//! found by name in the plugin's session (DataFusion's built-ins and the
//! plugin's own). A filter that has no DataFusion form is answered
//! UNSUPPORTED, so the host applies it itself.

use datafusion::arrow::datatypes::Schema;
use datafusion::common::Column;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::Expr;
use qlink_convert::cstr;
use qlink_convert::ir::{expr_from_ir, Resolver};
use qlink_sys::*;

struct TableResolver<'a> {
    schema: Option<&'a Schema>,
    state: &'a SessionState,
}

impl Resolver for TableResolver<'_> {
    fn column(&self, e: &ql_expr) -> Result<Expr> {
        let schema = self.schema.ok_or_else(|| DataFusionError::Plan("a column where only literals may stand".into()))?;
        let i = e.column_index;
        if i < 0 || i as usize >= schema.fields().len() {
            return Err(DataFusionError::Plan(format!("column index {i} of a table with {} columns", schema.fields().len())));
        }
        Ok(Expr::Column(Column::from_name(schema.field(i as usize).name())))
    }

    fn scalar_function(&self, e: &ql_expr, args: Vec<Expr>) -> Result<Expr> {
        session_function(self.state, e, args)
    }
}

/// A QL_EXPR_SCALAR_FUNCTION as a call of the function of that name in the
/// plugin's session (DataFusion's built-ins and the plugin's own).
pub(crate) fn session_function(state: &SessionState, e: &ql_expr, args: Vec<Expr>) -> Result<Expr> {
    let name = cstr(e.function.name);
    let name = if name.is_empty() { cstr(e.name) } else { name };
    let udf = state
        .scalar_functions()
        .get(&name.to_lowercase())
        .cloned()
        .ok_or_else(|| DataFusionError::Plan(format!("no function {name} in the plugin's session")))?;
    Ok(Expr::ScalarFunction(ScalarFunction::new_udf(udf, args)))
}

/// Each expression of `list` as a DataFusion expression over `schema`
/// (None where it has no DataFusion form).
pub fn exprs_of(list: &ql_expr_list, schema: Option<&Schema>, state: &SessionState) -> Vec<Option<Expr>> {
    if list.view.is_null() || list.exprs.is_null() {
        return Vec::new();
    }
    let resolver = TableResolver { schema, state };
    // SAFETY: the view and the id list are borrowed for the call.
    let view = unsafe { &*list.view };
    (0..list.n_exprs.max(0) as usize).map(|i| expr_from_ir(view, unsafe { *list.exprs.add(i) }, &resolver, "filter").ok()).collect()
}
