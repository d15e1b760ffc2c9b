// SPDX-License-Identifier: Apache-2.0
//! A plugin's schema provider, held open while its tables are taken. Each
//! table it gives remembers its origin (the schema provider, its options
//! and the table's name), so a worker can open the same table.

use std::ffi::CString;
use std::sync::Arc;

use datafusion::error::DataFusionError;

use crate::error::{cstr, ErrorSlot, Result};
use crate::ffi::*;
use crate::plugin::{Options, Plugin};
use crate::recipe::TableOrigin;
use crate::services::{SessionSource, SessionView};
use crate::table::QlinkTableProvider;

/// An open `ql_schema_provider`, released on drop (inside the plugin's hooks).
pub struct OpenSchema {
    raw: ql_schema_provider,
    plugin: Arc<Plugin>,
    provider: String,
    options: Vec<(String, String)>,
}

impl OpenSchema {
    /// Open schema provider `provider` of `plugin` with `options`, seeing
    /// `source`. Errors: the plugin offers no schema providers, or its own.
    pub fn open(plugin: &Arc<Plugin>, provider: &str, options: &[(String, String)], source: SessionSource<'_>) -> Result<OpenSchema> {
        let open = plugin
            .descriptor()
            .schema_provider_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no schema providers", plugin.name())))?;
        let view = SessionView::new(source);
        let opts = Options::new(options)?;
        let raw_opts = opts.raw();
        let cname = CString::new(provider).map_err(|_| DataFusionError::Plan(format!("bad schema provider name {provider:?}")))?;
        let mut raw: ql_schema_provider = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            // SAFETY: all inputs live for the call.
            unsafe { open(plugin.descriptor(), cname.as_ptr(), &raw_opts, &view.raw, &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening schema {}/{provider}", plugin.name()))?;
        Ok(OpenSchema { raw, plugin: Arc::clone(plugin), provider: provider.to_string(), options: options.to_vec() })
    }

    /// The names of the schema's tables, in the plugin's order.
    pub fn table_names(&self) -> Vec<String> {
        // SAFETY: members of a live schema provider; names copied here.
        let count = self.raw.table_count.map(|f| unsafe { f(&self.raw) }).unwrap_or(0);
        (0..count.max(0)).map(|i| cstr(self.raw.table_name.map(|f| unsafe { f(&self.raw, i) }).unwrap_or(std::ptr::null()))).collect()
    }

    /// Open the schema's table `name`.
    pub fn table(&self, name: &str) -> Result<QlinkTableProvider> {
        let table_fn = self.raw.table.ok_or_else(|| DataFusionError::Plan("schema provider: table is NULL".into()))?;
        let cname = CString::new(name).map_err(|_| DataFusionError::Plan(format!("bad table name {name:?}")))?;
        let mut tp: ql_table_provider = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            // SAFETY: a live schema provider; `tp` is filled on success.
            unsafe { table_fn(&self.raw, cname.as_ptr(), &mut tp, err.ptr()) }
        };
        err.check_with(st, || format!("opening table {name} of schema {}/{}", self.plugin.name(), self.provider))?;
        let origin = TableOrigin::SchemaTable { provider: self.provider.clone(), options: self.options.clone(), table: name.to_string() };
        Ok(QlinkTableProvider::from_raw(tp, Arc::clone(&self.plugin), name)?.with_origin(origin))
    }
}

// SAFETY: the ABI makes a schema provider thread-safe (qlink/table.h);
// the rest is owned values.
unsafe impl Send for OpenSchema {}
unsafe impl Sync for OpenSchema {}

impl Drop for OpenSchema {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.enter();
            // SAFETY: we own the schema provider.
            unsafe { r(&mut self.raw) };
        }
    }
}
