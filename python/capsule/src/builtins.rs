// SPDX-License-Identifier: Apache-2.0
//! A plan decoded from a datafusion-ffi 55 consumer names its functions by
//! name, and they resolve in the consumer's registry: each call becomes a
//! foreign wrapper (every batch crosses the FFI boundary, and a qlink
//! planner cannot tell the built-in `sum` from a user's function). A
//! function's identity does not cross datafusion-ffi 55, so the rule is by
//! name: a foreign function whose name is one of DataFusion's built-ins is
//! taken to be that built-in (the consumer runs the same DataFusion major
//! version, checked at import) and is replaced by this library's own. A
//! consumer session that overrides a built-in's name with its own function
//! must not install a qlink planner: the override would not be honoured.

use std::sync::{Arc, OnceLock};

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::{Expr, LogicalPlan, WindowFunctionDefinition};
use datafusion_ffi::udaf::ForeignAggregateUDF;
use datafusion_ffi::udf::ForeignScalarUDF;
use datafusion_ffi::udwf::ForeignWindowUDF;

use qlink_datafusion::error::Result;

/// DataFusion's built-in functions in this library (one default session).
fn builtins() -> &'static SessionState {
    static S: OnceLock<SessionState> = OnceLock::new();
    S.get_or_init(|| SessionStateBuilder::new().with_default_features().build())
}

/// `plan` with every foreign built-in function replaced by this library's.
pub fn rebind_builtins(plan: LogicalPlan) -> Result<LogicalPlan> {
    let state = builtins();
    plan.transform_up_with_subqueries(|node| node.map_expressions(|e| e.transform_up(|e| rebind(e, state)))).map(|t| t.data)
}

fn rebind(e: Expr, state: &SessionState) -> Result<Transformed<Expr>> {
    Ok(match e {
        Expr::ScalarFunction(mut f) if f.func.inner().downcast_ref::<ForeignScalarUDF>().is_some() => {
            match state.scalar_functions().get(f.func.name()) {
                Some(b) => {
                    f.func = Arc::clone(b);
                    Transformed::yes(Expr::ScalarFunction(f))
                }
                None => Transformed::no(Expr::ScalarFunction(f)),
            }
        }
        Expr::AggregateFunction(mut f) if f.func.inner().downcast_ref::<ForeignAggregateUDF>().is_some() => {
            match state.aggregate_functions().get(f.func.name()) {
                Some(b) => {
                    f.func = Arc::clone(b);
                    Transformed::yes(Expr::AggregateFunction(f))
                }
                None => Transformed::no(Expr::AggregateFunction(f)),
            }
        }
        Expr::WindowFunction(mut w) => {
            let replaced = match &w.fun {
                WindowFunctionDefinition::AggregateUDF(a) if a.inner().downcast_ref::<ForeignAggregateUDF>().is_some() => {
                    state.aggregate_functions().get(a.name()).map(|b| WindowFunctionDefinition::AggregateUDF(Arc::clone(b)))
                }
                WindowFunctionDefinition::WindowUDF(u) if u.inner().downcast_ref::<ForeignWindowUDF>().is_some() => {
                    state.window_functions().get(u.name()).map(|b| WindowFunctionDefinition::WindowUDF(Arc::clone(b)))
                }
                _ => None,
            };
            match replaced {
                Some(fun) => {
                    w.fun = fun;
                    Transformed::yes(Expr::WindowFunction(w))
                }
                None => Transformed::no(Expr::WindowFunction(w)),
            }
        }
        other => Transformed::no(other),
    })
}
