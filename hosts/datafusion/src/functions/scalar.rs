// SPDX-License-Identifier: Apache-2.0
//! A plugin's scalar function as a DataFusion `ScalarUDF`.

use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature};

use super::args::{args_array, import_array, return_field_via, return_type_via, ArgsSchemaCache};
use super::signature::signature_of;
use crate::error::{ErrorSlot, Result};
use crate::ffi::*;
use crate::identity::{self, Identity};
use crate::plugin::Plugin;

pub struct QlinkScalarUdf {
    raw: Box<ql_scalar_function>,
    plugin: Arc<Plugin>,
    name: String,
    signature: Signature,
    uid: u64,
    /// The argument schema of the last call.
    args: ArgsSchemaCache,
}

// SAFETY: function members are thread-safe (function.h).
unsafe impl Send for QlinkScalarUdf {}
unsafe impl Sync for QlinkScalarUdf {}

impl std::fmt::Debug for QlinkScalarUdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkScalarUdf({}/{})", self.plugin.name(), self.name)
    }
}
impl PartialEq for QlinkScalarUdf {
    fn eq(&self, o: &Self) -> bool {
        std::ptr::eq(&*self.raw, &*o.raw)
    }
}
impl Eq for QlinkScalarUdf {}
impl Hash for QlinkScalarUdf {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.name.hash(h);
        self.uid.hash(h);
    }
}

impl Drop for QlinkScalarUdf {
    fn drop(&mut self) {
        identity::forget(&*self);
        if let Some(r) = self.raw.release {
            let _g = self.plugin.enter();
            unsafe { r(&mut *self.raw) };
        }
    }
}

impl QlinkScalarUdf {
    pub fn open(plugin: &Arc<Plugin>, name: &str) -> Result<ScalarUDF> {
        let open = plugin
            .descriptor()
            .scalar_function_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no scalar functions", plugin.name())))?;
        let c = CString::new(name).unwrap_or_default();
        let mut raw: ql_scalar_function = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            unsafe { open(plugin.descriptor(), c.as_ptr(), &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening function {}/{name}", plugin.name()))?;
        let signature = signature_of(&raw.signature);
        let uid = raw.id.uid;
        let q = QlinkScalarUdf {
            raw: Box::new(raw),
            plugin: Arc::clone(plugin),
            name: name.to_string(),
            signature,
            uid,
            args: ArgsSchemaCache::default(),
        };
        let id = q.identity(name);
        let f = ScalarUDF::new_from_impl(q);
        identity::remember(f.inner(), id);
        Ok(f)
    }

    /// The identity of this function when it is registered as `registered_as`.
    pub fn identity(&self, registered_as: &str) -> Identity {
        identity::plugin_function(QL_FUNCTION_SCALAR, registered_as, self.plugin.name(), self.uid)
    }
}

impl ScalarUDFImpl for QlinkScalarUdf {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let rt = self.raw.return_type.ok_or_else(|| DataFusionError::Plan(format!("{}: return_type is NULL", self.name)))?;
        let me: *const ql_scalar_function = &*self.raw;
        return_type_via(&self.plugin, &self.name, |a, o, e| unsafe { rt(me, a, o, e) }, arg_types)
    }
    /// The return field with the plugin's metadata (an Arrow extension
    /// type), from the argument fields with theirs.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let rt = self.raw.return_type.ok_or_else(|| DataFusionError::Plan(format!("{}: return_type is NULL", self.name)))?;
        let me: *const ql_scalar_function = &*self.raw;
        return_field_via(&self.plugin, &self.name, |a, o, e| unsafe { rt(me, a, o, e) }, args.arg_fields)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let invoke = self.raw.invoke.ok_or_else(|| DataFusionError::Execution(format!("{}: invoke is NULL", self.name)))?;
        let n = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let exported = self.args.get(&args.arg_fields)?;
        let array = args_array(&exported.fields, arrays, n)?;
        let mut out = ArrowArray::empty();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            unsafe { invoke(&*self.raw, &exported.schema, &array, n as i64, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("{}: invoke", self.name))?;
        Ok(ColumnarValue::Array(import_array(out, args.return_field.data_type(), &self.plugin)?))
    }
}
