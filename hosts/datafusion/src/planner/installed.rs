// SPDX-License-Identifier: Apache-2.0
//! A planner a plugin opened (or the host built), owned: released inside
//! the plugin's hooks on drop.

use std::sync::Arc;

use datafusion::error::DataFusionError;

use crate::error::{ErrorSlot, Result};
use crate::ffi::*;
use crate::plugin::{Options, Plugin};

/// One installed planner (from a plugin, or built by the host itself).
pub struct InstalledPlanner {
    pub(super) raw: ql_planner,
    pub(super) plugin: Option<Arc<Plugin>>,
    pub(super) name: String,
}
unsafe impl Send for InstalledPlanner {}
unsafe impl Sync for InstalledPlanner {}

impl Drop for InstalledPlanner {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.as_ref().map(|p| p.enter());
            unsafe { r(&mut self.raw) };
        }
    }
}

impl InstalledPlanner {
    /// Whether the planner reads a lazy plan view (QL_PLANNER_LAZY_VIEW,
    /// from a planner whose struct has the flags member).
    pub fn lazy_view(&self) -> bool {
        let has_flags = self.raw.struct_size as usize >= std::mem::offset_of!(ql_planner, flags) + std::mem::size_of::<u32>();
        has_flags && self.raw.flags & QL_PLANNER_LAZY_VIEW != 0
    }

    /// Whether the planner's nodes take new children, so its
    /// `plan_physical` inputs may be left for the enclosing plan's
    /// optimizer (QL_PLANNER_INPUTS_UNOPTIMIZED).
    pub fn inputs_unoptimized(&self) -> bool {
        let has_flags = self.raw.struct_size as usize >= std::mem::offset_of!(ql_planner, flags) + std::mem::size_of::<u32>();
        has_flags && self.raw.flags & QL_PLANNER_INPUTS_UNOPTIMIZED != 0
    }

    /// Take ownership of a planner (e.g. from a plugin's planner_open).
    pub fn new(raw: ql_planner, plugin: Option<Arc<Plugin>>, name: &str) -> Arc<InstalledPlanner> {
        Arc::new(InstalledPlanner { raw, plugin, name: name.to_string() })
    }

    /// Open planner `name` of `plugin`.
    pub fn open(plugin: &Arc<Plugin>, name: &str, options: &[(String, String)]) -> Result<Arc<InstalledPlanner>> {
        let open = plugin
            .descriptor()
            .planner_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no planners", plugin.name())))?;
        let c = std::ffi::CString::new(name).unwrap_or_default();
        let opts = Options::new(options)?;
        let raw_opts = opts.raw();
        let mut raw: ql_planner = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            unsafe { open(plugin.descriptor(), c.as_ptr(), &raw_opts, &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening planner {}/{name}", plugin.name()))?;
        Ok(Self::new(raw, Some(Arc::clone(plugin)), name))
    }
}
