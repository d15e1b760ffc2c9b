// SPDX-License-Identifier: Apache-2.0
//! A plugin's table provider as a DataFusion `TableProvider`: scan with
//! projection, filters (as qlink expression views, no protobuf) and limit;
//! filter pushdown from the plugin's per-filter answers; statistics. A
//! provider opened from a spec remembers how ([`TableOrigin`]), so its
//! scans carry a [`ScanRecipe`] a worker can rebuild them from.

use std::ffi::CString;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Statistics;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::{ErrorSlot, Result};
use crate::exec::{import_schema, PlanHandle, QlinkExec};
use crate::expr::FilterList;
use crate::ffi::*;
use crate::plugin::{Options, Plugin};
pub use crate::recipe::{ScanRecipe, TableOrigin};
use crate::services::{SessionSource, SessionView};

pub struct QlinkTableProvider {
    /// Boxed so plan views can point at it (ql_table_ref.provider).
    raw: Box<ql_table_provider>,
    plugin: Arc<Plugin>,
    schema: SchemaRef,
    table_type: TableType,
    name: String,
    origin: Option<TableOrigin>,
}

// SAFETY: every member of a table provider is thread-safe (table.h).
unsafe impl Send for QlinkTableProvider {}
unsafe impl Sync for QlinkTableProvider {}

impl std::fmt::Debug for QlinkTableProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkTableProvider({}/{})", self.plugin.name(), self.name)
    }
}

impl Drop for QlinkTableProvider {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.enter();
            // SAFETY: we own the provider.
            unsafe { r(&mut *self.raw) };
        }
    }
}

impl QlinkTableProvider {
    /// Open table provider `provider` of `plugin` with `options`, seeing
    /// the planning session.
    pub fn open(plugin: &Arc<Plugin>, provider: &str, options: &[(String, String)], session: &dyn Session) -> Result<QlinkTableProvider> {
        Self::open_in(plugin, provider, options, SessionSource::Session(session))
    }

    /// [`open`](Self::open) seeing `source` (a session, or a worker's task
    /// context).
    pub fn open_in(
        plugin: &Arc<Plugin>,
        provider: &str,
        options: &[(String, String)],
        source: SessionSource<'_>,
    ) -> Result<QlinkTableProvider> {
        let d = plugin.descriptor();
        let Some(open) = d.table_provider_open else {
            return Err(DataFusionError::Plan(format!("plugin {} offers no table providers", plugin.name())));
        };
        let cname = CString::new(provider).map_err(|_| DataFusionError::Plan(format!("bad provider name {provider:?}")))?;
        let opts = Options::new(options)?;
        let raw_opts = opts.raw();
        let view = SessionView::new(source);
        let mut out: ql_table_provider = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            // SAFETY: all inputs live for the call.
            unsafe { open(d, cname.as_ptr(), &raw_opts, &view.raw, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("opening table {}/{provider}", plugin.name()))?;
        let origin = TableOrigin::Table { provider: provider.to_string(), options: options.to_vec() };
        Ok(Self::from_raw(out, Arc::clone(plugin), provider)?.with_origin(origin))
    }

    /// Record how this provider was opened: its scans then carry a
    /// [`ScanRecipe`].
    pub fn with_origin(mut self, origin: TableOrigin) -> QlinkTableProvider {
        self.origin = Some(origin);
        self
    }

    /// How this provider was opened, when it was opened from a spec.
    pub fn origin(&self) -> Option<&TableOrigin> {
        self.origin.as_ref()
    }

    /// Take ownership of an opened provider.
    pub fn from_raw(raw: ql_table_provider, plugin: Arc<Plugin>, name: &str) -> Result<QlinkTableProvider> {
        let mut t = QlinkTableProvider {
            raw: Box::new(raw),
            plugin,
            schema: Arc::new(arrow::datatypes::Schema::empty()),
            table_type: TableType::Base,
            name: name.to_string(),
            origin: None,
        };
        let Some(get_schema) = t.raw.get_schema else {
            return Err(DataFusionError::Plan(format!("table {name}: get_schema is NULL")));
        };
        let me: *const ql_table_provider = &*t.raw;
        let plugin = Arc::clone(&t.plugin);
        t.schema = import_schema(
            |out| {
                let _g = plugin.enter();
                let mut err = ErrorSlot::new();
                let st = unsafe { get_schema(me, out, err.ptr()) };
                (st, err)
            },
            &format!("table {name}: get_schema"),
        )?;
        t.table_type = match t.raw.table_type {
            QL_TABLE_VIEW => TableType::View,
            QL_TABLE_TEMPORARY => TableType::Temporary,
            _ => TableType::Base,
        };
        Ok(t)
    }

    /// The plugin's scan: `projection` (column indices), `filters` (offered
    /// as qlink expression views) and `limit`, seeing `source`. The plan
    /// carries a [`ScanRecipe`] when the provider has an origin.
    pub fn scan_in(
        &self,
        source: SessionSource<'_>,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<QlinkExec> {
        let Some(scan) = self.raw.scan else {
            return Err(DataFusionError::Plan(format!("table {}: scan is NULL", self.name)));
        };
        let proj: Option<Vec<i32>> = projection.map(|p| p.iter().map(|&i| i as i32).collect());
        let refs: Vec<&Expr> = filters.iter().collect();
        let list = FilterList::new(&self.schema, &refs)?;
        let args = ql_scan_args {
            struct_size: std::mem::size_of::<ql_scan_args>() as u32,
            n_projection: proj.as_ref().map(|p| p.len() as i32).unwrap_or(-1),
            projection: proj.as_ref().map(|p| p.as_ptr()).unwrap_or(std::ptr::null()),
            filters: list.raw(),
            limit: limit.map(|l| l as i64).unwrap_or(-1),
        };
        let view = SessionView::new(source);
        let mut out: ql_execution_plan = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            // SAFETY: everything borrowed lives for the call.
            unsafe { scan(self.raw(), &view.raw, &args, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("scanning table {}", self.name))?;
        let exec = QlinkExec::new(PlanHandle::owned(out, Some(Arc::clone(&self.plugin))))?;
        Ok(match &self.origin {
            Some(origin) => exec.with_recipe(ScanRecipe {
                plugin: Arc::clone(&self.plugin),
                origin: origin.clone(),
                projection: projection.cloned(),
                filters: filters.to_vec(),
                limit,
            }),
            None => exec,
        })
    }

    pub fn raw(&self) -> *const ql_table_provider {
        &*self.raw
    }

    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }
}

/// The qlink provider behind a DataFusion table, if it is one of ours.
pub fn qlink_provider_of(t: &Arc<dyn TableProvider>) -> *const ql_table_provider {
    match t.as_ref().downcast_ref::<QlinkTableProvider>() {
        Some(q) => q.raw(),
        None => std::ptr::null(),
    }
}

#[async_trait]
impl TableProvider for QlinkTableProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        self.table_type
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(self.scan_in(SessionSource::Session(state), projection, filters, limit)?))
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        let Some(sf) = self.raw.supports_filters else {
            return Ok(vec![TableProviderFilterPushDown::Unsupported; filters.len()]);
        };
        if filters.is_empty() {
            return Ok(vec![]);
        }
        let list = FilterList::new(&self.schema, filters)?;
        let raw = list.raw();
        let mut answers = vec![QL_PUSHDOWN_UNSUPPORTED; filters.len()];
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            // SAFETY: answers has one slot per filter.
            unsafe { sf(self.raw(), &raw, answers.as_mut_ptr(), err.ptr()) }
        };
        err.check_with(st, || format!("table {}: supports_filters", self.name))?;
        Ok(answers
            .into_iter()
            .map(|a| match a {
                QL_PUSHDOWN_EXACT => TableProviderFilterPushDown::Exact,
                QL_PUSHDOWN_INEXACT => TableProviderFilterPushDown::Inexact,
                _ => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        let get = self.raw.get_statistics?;
        let mut s: ql_statistics = zeroed();
        s.struct_size = std::mem::size_of::<ql_statistics>() as u32;
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            unsafe { get(self.raw(), &mut s, err.ptr()) }
        };
        if st != QL_OK {
            return None;
        }
        let owned = crate::stats::OwnedStats(s);
        Some(crate::stats::to_statistics(&owned.0, &self.schema))
    }
}
