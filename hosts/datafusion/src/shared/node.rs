// SPDX-License-Identifier: Apache-2.0
//! The logical leaf that stands for every reference to one shared subquery.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use datafusion::common::DFSchemaRef;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::Result;

/// One subquery the statement uses `references` times (counted once per
/// distinct enclosing subquery). Thread-safe; owned through `Arc` by every
/// [`SharedSubplanNode`] of the plan.
pub struct SharedBody {
    /// The alias it was found under (the CTE's name), for EXPLAIN and errors.
    pub name: String,
    /// Its logical plan, with shared subqueries inside it replaced too.
    pub plan: LogicalPlan,
    /// Whether `plan` is already optimized (the rewrite ran after the
    /// optimizer) or still needs the session's logical optimizer.
    pub optimized: bool,
    pub references: usize,
    /// The physical plan, made once by the first planning that reaches it.
    planned: Mutex<Option<Arc<dyn ExecutionPlan>>>,
}

impl SharedBody {
    pub fn new(name: String, plan: LogicalPlan, optimized: bool, references: usize) -> SharedBody {
        SharedBody { name, plan, optimized, references, planned: Mutex::new(None) }
    }

    /// The physical plan made for this subquery, if any yet.
    pub fn planned(&self) -> Option<Arc<dyn ExecutionPlan>> {
        self.planned.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Keep `plan` as this subquery's physical plan unless one was kept
    /// first; the one kept.
    pub fn keep_planned(&self, plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let mut slot = self.planned.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(slot.get_or_insert(plan))
    }
}

/// A reference to a shared subquery in the logical plan: a leaf whose
/// schema is the subquery's. Equal to another node only when both refer to
/// the same [`SharedBody`].
#[derive(Clone)]
pub struct SharedSubplanNode {
    pub body: Arc<SharedBody>,
    schema: DFSchemaRef,
}

impl SharedSubplanNode {
    pub fn new(body: Arc<SharedBody>) -> SharedSubplanNode {
        let schema = Arc::clone(body.plan.schema());
        SharedSubplanNode { body, schema }
    }
}

impl fmt::Debug for SharedSubplanNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_for_explain(f)
    }
}
impl PartialEq for SharedSubplanNode {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.body, &o.body)
    }
}
impl Eq for SharedSubplanNode {}
impl Hash for SharedSubplanNode {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.body) as usize).hash(h)
    }
}
impl PartialOrd for SharedSubplanNode {
    fn partial_cmp(&self, _o: &Self) -> Option<std::cmp::Ordering> {
        None
    }
}

impl UserDefinedLogicalNodeCore for SharedSubplanNode {
    fn name(&self) -> &str {
        "SharedSubplan"
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
        write!(f, "SharedSubplan: {} ({} references)", self.body.name, self.body.references)
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, _inputs: Vec<LogicalPlan>) -> Result<Self> {
        Ok(self.clone())
    }
}
