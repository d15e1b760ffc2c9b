// SPDX-License-Identifier: Apache-2.0
//! A `Session` that is another except for its physical optimizer rules and
//! runtime environment: for planning a subtree whose plan the enclosing
//! planning optimizes anyway (a planner's `plan_physical`), and for planning
//! against a foreign session with this library's rules and runtime (the
//! datafusion-python capsule planner).

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::config::{ConfigOptions, TableOptions};
use datafusion::common::DFSchema;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::{AggregateUDF, Expr, HigherOrderUDF, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionConfig;

use crate::error::Result;

pub type Rule = Arc<dyn PhysicalOptimizerRule + Send + Sync>;

/// `inner` with `rules` as its physical optimizer rules (None: inner's) and
/// `runtime_env` as its runtime environment (None: inner's). Borrows
/// `inner` for the planning call; not `'static`.
pub struct SessionOverride<'a> {
    inner: &'a dyn Session,
    rules: Option<&'a [Rule]>,
    runtime_env: Arc<RuntimeEnv>,
    /// Whether `runtime_env` replaced inner's.
    own_runtime: bool,
    /// `Session` hands out `&mut TableOptions`; planning never writes it.
    table_options: TableOptions,
}

impl<'a> SessionOverride<'a> {
    pub fn new(inner: &'a dyn Session, rules: Option<&'a [Rule]>, runtime_env: Option<Arc<RuntimeEnv>>) -> Self {
        let own_runtime = runtime_env.is_some();
        let runtime_env = runtime_env.unwrap_or_else(|| Arc::clone(inner.runtime_env()));
        SessionOverride { inner, rules, runtime_env, own_runtime, table_options: inner.table_options().clone() }
    }

    /// `inner` without physical optimizer rules.
    pub fn unoptimized(inner: &'a dyn Session) -> Self {
        SessionOverride::new(inner, Some(&[]), None)
    }
}

#[async_trait]
impl Session for SessionOverride<'_> {
    fn session_id(&self) -> &str {
        self.inner.session_id()
    }
    fn config(&self) -> &SessionConfig {
        self.inner.config()
    }
    fn catalog_list(&self) -> Arc<dyn datafusion::catalog::CatalogProviderList> {
        self.inner.catalog_list()
    }
    fn config_options(&self) -> &ConfigOptions {
        self.inner.config_options()
    }
    fn physical_optimizers(&self) -> &[Rule] {
        self.rules.unwrap_or_else(|| self.inner.physical_optimizers())
    }
    async fn create_physical_plan(&self, logical_plan: &LogicalPlan) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.create_physical_plan(logical_plan).await
    }
    fn create_physical_expr(&self, expr: Expr, df_schema: &DFSchema) -> Result<Arc<dyn PhysicalExpr>> {
        self.inner.create_physical_expr(expr, df_schema)
    }
    fn scalar_functions(&self) -> &HashMap<String, Arc<ScalarUDF>> {
        self.inner.scalar_functions()
    }
    fn higher_order_functions(&self) -> &HashMap<String, Arc<HigherOrderUDF>> {
        self.inner.higher_order_functions()
    }
    fn aggregate_functions(&self) -> &HashMap<String, Arc<AggregateUDF>> {
        self.inner.aggregate_functions()
    }
    fn window_functions(&self) -> &HashMap<String, Arc<WindowUDF>> {
        self.inner.window_functions()
    }
    fn extension_type_registry(&self) -> &datafusion::logical_expr::registry::ExtensionTypeRegistryRef {
        self.inner.extension_type_registry()
    }
    fn runtime_env(&self) -> &Arc<RuntimeEnv> {
        &self.runtime_env
    }
    fn execution_props(&self) -> &ExecutionProps {
        self.inner.execution_props()
    }
    /// The wrapped session's (this wrapper borrows, so it is not `'static`):
    /// code that downcasts to `SessionState` still finds it.
    fn as_any(&self) -> &dyn Any {
        self.inner.as_any()
    }
    fn table_options(&self) -> &TableOptions {
        self.inner.table_options()
    }
    fn table_options_mut(&mut self) -> &mut TableOptions {
        &mut self.table_options
    }
    /// The inner session's, with this runtime environment when it has its
    /// own.
    fn task_ctx(&self) -> Arc<TaskContext> {
        if !self.own_runtime {
            return self.inner.task_ctx();
        }
        Arc::new(TaskContext::new(
            None,
            self.session_id().to_string(),
            self.config().clone(),
            self.scalar_functions().clone(),
            self.higher_order_functions().clone(),
            self.aggregate_functions().clone(),
            self.window_functions().clone(),
            Arc::clone(&self.runtime_env),
        ))
    }
}
