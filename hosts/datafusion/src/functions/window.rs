// SPDX-License-Identifier: Apache-2.0
//! A plugin's window function as a DataFusion `WindowUDF`, evaluated over
//! a whole partition at once.

use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{PartitionEvaluator, Signature, WindowUDF, WindowUDFImpl};

use super::args::{args_array, args_schema, import_array, return_type_via};
use super::signature::signature_of;
use crate::error::{ErrorSlot, Result};
use crate::ffi::*;
use crate::identity::{self, Identity};
use crate::plugin::Plugin;

pub struct QlinkWindowUdf {
    raw: Arc<RawWindow>,
    name: String,
    signature: Signature,
}

pub struct RawWindow {
    raw: Box<ql_window_function>,
    plugin: Arc<Plugin>,
}
unsafe impl Send for RawWindow {}
unsafe impl Sync for RawWindow {}
impl Drop for RawWindow {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.enter();
            unsafe { r(&mut *self.raw) };
        }
    }
}
impl std::fmt::Debug for QlinkWindowUdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkWindowUdf({})", self.name)
    }
}
impl Drop for QlinkWindowUdf {
    fn drop(&mut self) {
        identity::forget(&*self);
    }
}
impl PartialEq for QlinkWindowUdf {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.raw, &o.raw)
    }
}
impl Eq for QlinkWindowUdf {}
impl Hash for QlinkWindowUdf {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.name.hash(h);
    }
}

impl QlinkWindowUdf {
    pub fn open(plugin: &Arc<Plugin>, name: &str) -> Result<WindowUDF> {
        let open = plugin
            .descriptor()
            .window_function_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no window functions", plugin.name())))?;
        let c = CString::new(name).unwrap_or_default();
        let mut raw: ql_window_function = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            unsafe { open(plugin.descriptor(), c.as_ptr(), &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening window function {}/{name}", plugin.name()))?;
        let signature = signature_of(&raw.signature);
        let q = QlinkWindowUdf {
            raw: Arc::new(RawWindow { raw: Box::new(raw), plugin: Arc::clone(plugin) }),
            name: name.to_string(),
            signature,
        };
        let id = q.identity(name);
        let f = WindowUDF::new_from_impl(q);
        identity::remember(f.inner(), id);
        Ok(f)
    }

    /// The identity of this function when it is registered as `registered_as`.
    pub fn identity(&self, registered_as: &str) -> Identity {
        identity::plugin_function(QL_FUNCTION_WINDOW, registered_as, self.raw.plugin.name(), self.raw.raw.id.uid)
    }
}

impl WindowUDFImpl for QlinkWindowUdf {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn partition_evaluator(&self, args: PartitionEvaluatorArgs) -> Result<Box<dyn PartitionEvaluator>> {
        let new = self.raw.raw.evaluator_new.ok_or_else(|| DataFusionError::Plan(format!("{}: evaluator_new is NULL", self.name)))?;
        let fields: Vec<FieldRef> = args
            .input_fields()
            .iter()
            .enumerate()
            .map(|(i, f)| Arc::new(Field::new(format!("arg{i}"), f.data_type().clone(), true)))
            .collect();
        let schema = args_schema(&fields)?;
        let types: Vec<DataType> = fields.iter().map(|f| f.data_type().clone()).collect();
        let ret = self.return_type_of(&types)?;
        let mut ev: ql_partition_evaluator = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.raw.plugin.enter();
            unsafe { new(&*self.raw.raw, &schema, &mut ev, err.ptr()) }
        };
        err.check_with(st, || format!("{}: evaluator_new", self.name))?;
        Ok(Box::new(QlinkEvaluator { ev, owner: Arc::clone(&self.raw), fields, ret, name: self.name.clone() }))
    }
    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = field_args.input_fields().iter().map(|f| f.data_type().clone()).collect();
        Ok(Arc::new(Field::new(field_args.name(), self.return_type_of(&types)?, true)))
    }
}

impl QlinkWindowUdf {
    fn return_type_of(&self, types: &[DataType]) -> Result<DataType> {
        let rt = self.raw.raw.return_type.ok_or_else(|| DataFusionError::Plan(format!("{}: return_type is NULL", self.name)))?;
        let me: *const ql_window_function = &*self.raw.raw;
        return_type_via(&self.raw.plugin, &self.name, |a, o, e| unsafe { rt(me, a, o, e) }, types)
    }
}

struct QlinkEvaluator {
    ev: ql_partition_evaluator,
    owner: Arc<RawWindow>,
    fields: Vec<FieldRef>,
    ret: DataType,
    name: String,
}
unsafe impl Send for QlinkEvaluator {}
unsafe impl Sync for QlinkEvaluator {}
impl std::fmt::Debug for QlinkEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkEvaluator({})", self.name)
    }
}
impl Drop for QlinkEvaluator {
    fn drop(&mut self) {
        if let Some(r) = self.ev.release {
            let _g = self.owner.plugin.enter();
            unsafe { r(&mut self.ev) };
        }
    }
}

impl PartitionEvaluator for QlinkEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        let f = self.ev.evaluate_all.ok_or_else(|| DataFusionError::Execution(format!("{}: evaluate_all is NULL", self.name)))?;
        let array = args_array(&self.fields, values.to_vec(), num_rows)?;
        let mut out = ArrowArray::empty();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.owner.plugin.enter();
            unsafe { f(&mut self.ev, &array, num_rows as i64, &mut out, err.ptr()) }
        };
        drop(array);
        err.check_with(st, || format!("{}: evaluate_all", self.name))?;
        import_array(out, &self.ret, &self.owner.plugin)
    }
}
