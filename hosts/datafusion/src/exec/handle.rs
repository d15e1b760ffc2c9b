// SPDX-License-Identifier: Apache-2.0
//! A plugin's execution plan as Rust owns it: released (inside the
//! plugin's hooks) on drop, or a child borrowed from a parent kept alive.

use std::os::raw::c_int;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;

use crate::error::{ErrorSlot, Result};
use crate::ffi::*;
use crate::plugin::Plugin;

/// An owned plugin plan (released, inside the plugin's hooks, on drop), or a
/// borrowed child kept valid by its parent.
pub struct PlanHandle {
    pub raw: ql_execution_plan,
    pub plugin: Option<Arc<Plugin>>,
    borrowed: Option<(*const ql_execution_plan, Arc<PlanHandle>)>,
}

// SAFETY: every member of a ql_execution_plan is thread-safe (table.h).
unsafe impl Send for PlanHandle {}
unsafe impl Sync for PlanHandle {}

impl PlanHandle {
    pub fn owned(raw: ql_execution_plan, plugin: Option<Arc<Plugin>>) -> Arc<PlanHandle> {
        Arc::new(PlanHandle { raw, plugin, borrowed: None })
    }

    /// A child `child` of `parent`'s plan, borrowed: kept valid by its
    /// parent, never released.
    pub fn borrowed(child: *const ql_execution_plan, parent: &Arc<PlanHandle>) -> Arc<PlanHandle> {
        Arc::new(PlanHandle {
            // SAFETY: a bitwise copy of the borrowed child; never released (borrowed).
            raw: unsafe { std::ptr::read(child) },
            plugin: parent.plugin.clone(),
            borrowed: Some((child, Arc::clone(parent))),
        })
    }

    pub fn ptr(&self) -> *const ql_execution_plan {
        match &self.borrowed {
            Some((p, _)) => *p,
            None => &self.raw,
        }
    }

    pub fn plan(&self) -> &ql_execution_plan {
        // SAFETY: owned, or borrowed from a parent we keep alive.
        unsafe { &*self.ptr() }
    }

    pub(crate) fn enter(&self) -> Option<crate::plugin::EnterGuard<'_>> {
        self.plugin.as_ref().map(|p| p.enter())
    }
}

impl Drop for PlanHandle {
    fn drop(&mut self) {
        if self.borrowed.is_none() {
            if let Some(r) = self.raw.release {
                let _g = self.plugin.as_ref().map(|p| p.enter());
                // SAFETY: we own the plan.
                unsafe { r(&mut self.raw) };
            }
        }
    }
}

pub fn import_schema(f: impl FnOnce(*mut ArrowSchema) -> (c_int, ErrorSlot), what: &str) -> Result<SchemaRef> {
    let mut s = ArrowSchema::empty();
    let (status, mut err) = f(&mut s);
    err.check(status, what)?;
    let schema = arrow::datatypes::Schema::try_from(&s).map_err(|e| DataFusionError::Execution(format!("{what}: {e}")))?;
    Ok(Arc::new(schema))
}
