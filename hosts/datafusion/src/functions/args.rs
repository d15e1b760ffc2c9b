// SPDX-License-Identifier: Apache-2.0
//! Arguments and results across function.h: argument types as one struct
//! schema, argument columns as one struct array (zero-copy), results
//! imported with the plugin kept loaded.

use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, StructArray};
use arrow::datatypes::{DataType, Field, FieldRef, Fields};
use arrow::ffi::{from_ffi_and_data_type, to_ffi};
use datafusion::error::DataFusionError;

use crate::error::{ErrorSlot, Result};
use crate::ffi::*;
use crate::plugin::Plugin;

fn arrow_err(e: arrow::error::ArrowError) -> DataFusionError {
    DataFusionError::ArrowError(Box::new(e), None)
}

/// A struct schema with one child per argument field.
pub(super) fn args_schema(fields: &[FieldRef]) -> Result<ArrowSchema> {
    ArrowSchema::try_from(DataType::Struct(Fields::from(fields.to_vec()))).map_err(arrow_err)
}

/// Arguments as one struct array (zero-copy export).
pub(super) fn args_array(fields: &[FieldRef], arrays: Vec<ArrayRef>, num_rows: usize) -> Result<ArrowArray> {
    let sa = if arrays.is_empty() {
        StructArray::new_empty_fields(num_rows, None)
    } else {
        StructArray::try_new(Fields::from(fields.to_vec()), arrays, None).map_err(arrow_err)?
    };
    let (a, _) = to_ffi(&sa.to_data()).map_err(arrow_err)?;
    Ok(a)
}

/// Import an array `plugin` filled (it keeps the plugin loaded while alive).
pub(super) fn import_array(mut out: ArrowArray, dt: &DataType, plugin: &Arc<Plugin>) -> Result<ArrayRef> {
    crate::plugin::keep_loaded(&mut out, plugin);
    let out = std::mem::replace(&mut out, ArrowArray::empty());
    // SAFETY: the callee filled `out` with an array of type `dt`.
    let data = unsafe { from_ffi_and_data_type(out, dt.clone()) }.map_err(arrow_err)?;
    Ok(arrow::array::make_array(data))
}

/// A call site's argument schema, exported once: the plugin's argument
/// fields (see [`plugin_arg_fields`]) and their struct schema for the
/// argument fields DataFusion passed.
pub(super) struct ExportedArgs {
    arg_fields: Vec<FieldRef>,
    pub fields: Vec<FieldRef>,
    pub schema: ArrowSchema,
}

// SAFETY: never written after it is made; plugins only read the schema
// during a call (function.h: inputs are borrowed).
unsafe impl Sync for ExportedArgs {}

/// The argument schema of a function's last call, kept so that a function
/// called batch after batch with the same argument fields exports it once,
/// not per batch. Thread-safe.
#[derive(Default)]
pub(super) struct ArgsSchemaCache(Mutex<Option<Arc<ExportedArgs>>>);

impl ArgsSchemaCache {
    /// The exported schema for `arg_fields`, made when they differ from the
    /// last call's.
    pub(super) fn get(&self, arg_fields: &[FieldRef]) -> Result<Arc<ExportedArgs>> {
        let mut last = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = last.as_ref().filter(|e| e.arg_fields.as_slice() == arg_fields) {
            return Ok(Arc::clone(e));
        }
        let fields = plugin_arg_fields(arg_fields);
        let schema = args_schema(&fields)?;
        let e = Arc::new(ExportedArgs { arg_fields: arg_fields.to_vec(), fields, schema });
        *last = Some(Arc::clone(&e));
        Ok(e)
    }
}

pub(super) fn return_type_via(
    plugin: &Plugin,
    name: &str,
    f: impl FnOnce(*const ArrowSchema, *mut ArrowSchema, *mut ql_error) -> i32,
    arg_types: &[DataType],
) -> Result<DataType> {
    let fields: Vec<FieldRef> = arg_types.iter().map(|t| Arc::new(Field::new("", t.clone(), true))).collect();
    Ok(return_field_via(plugin, name, f, &fields)?.data_type().clone())
}

/// The argument fields as the plugin sees them: `arg0`, `arg1`, ... with
/// each field's type and metadata (Arrow extension types such as GeoArrow's
/// travel there).
pub(super) fn plugin_arg_fields(fields: &[FieldRef]) -> Vec<FieldRef> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| Arc::new(Field::new(format!("arg{i}"), f.data_type().clone(), true).with_metadata(f.metadata().clone())))
        .collect()
}

/// The plugin's return field for arguments `fields`: its type and its
/// metadata (an extension type's name and parameters), named `name`.
pub(super) fn return_field_via(
    plugin: &Plugin,
    name: &str,
    f: impl FnOnce(*const ArrowSchema, *mut ArrowSchema, *mut ql_error) -> i32,
    fields: &[FieldRef],
) -> Result<FieldRef> {
    let args = args_schema(&plugin_arg_fields(fields))?;
    let mut out = ArrowSchema::empty();
    let mut err = ErrorSlot::new();
    let st = {
        let _g = plugin.enter();
        f(&args, &mut out, err.ptr())
    };
    err.check_with(st, || format!("{name}: return_type"))?;
    let field = Field::try_from(&out).map_err(arrow_err)?;
    Ok(Arc::new(Field::new(name, field.data_type().clone(), true).with_metadata(field.metadata().clone())))
}
