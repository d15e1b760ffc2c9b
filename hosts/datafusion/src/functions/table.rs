// SPDX-License-Identifier: Apache-2.0
//! A plugin's table function as a DataFusion table function: the call
//! returns a [`QlinkTableProvider`] that remembers the call.

use std::ffi::CString;
use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr;

use crate::error::{ErrorSlot, Result};
use crate::expr::FilterList;
use crate::ffi::*;
use crate::plugin::Plugin;
use crate::recipe::TableOrigin;
use crate::services::{SessionSource, SessionView};
use crate::table::QlinkTableProvider;

pub struct QlinkTableFunction {
    raw: Box<ql_table_function>,
    plugin: Arc<Plugin>,
    name: String,
}
unsafe impl Send for QlinkTableFunction {}
unsafe impl Sync for QlinkTableFunction {}
impl std::fmt::Debug for QlinkTableFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkTableFunction({})", self.name)
    }
}
impl Drop for QlinkTableFunction {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.enter();
            unsafe { r(&mut *self.raw) };
        }
    }
}

impl QlinkTableFunction {
    pub fn open(plugin: &Arc<Plugin>, name: &str) -> Result<QlinkTableFunction> {
        let open = plugin
            .descriptor()
            .table_function_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no table functions", plugin.name())))?;
        let c = CString::new(name).unwrap_or_default();
        let mut raw: ql_table_function = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            unsafe { open(plugin.descriptor(), c.as_ptr(), &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening table function {}/{name}", plugin.name()))?;
        Ok(QlinkTableFunction { raw: Box::new(raw), plugin: Arc::clone(plugin), name: name.to_string() })
    }
}

impl QlinkTableFunction {
    /// Call the function with `args` in the session `source` stands for:
    /// the provider it returns, remembering the call (so its scans can be
    /// rebuilt on a worker).
    pub fn call_in(&self, args: &[Expr], source: SessionSource) -> Result<QlinkTableProvider> {
        let call = self.raw.call.ok_or_else(|| DataFusionError::Plan(format!("{}: call is NULL", self.name)))?;
        let empty = Arc::new(Schema::empty());
        let refs: Vec<&Expr> = args.iter().collect();
        let list = FilterList::new(&empty, &refs)?;
        let raw = list.raw();
        let view = SessionView::new(source);
        let mut out: ql_table_provider = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            unsafe { call(&*self.raw, &view.raw, &raw, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("table function {}", self.name))?;
        let origin = TableOrigin::Function { function: self.name.clone(), args: args.to_vec() };
        Ok(QlinkTableProvider::from_raw(out, Arc::clone(&self.plugin), &self.name)?.with_origin(origin))
    }
}

impl TableFunctionImpl for QlinkTableFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let source = SessionSource::Session(args.session());
        Ok(Arc::new(self.call_in(args.exprs(), source)?))
    }
}
