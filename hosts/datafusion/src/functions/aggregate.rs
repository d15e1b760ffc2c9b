// SPDX-License-Identifier: Apache-2.0
//! A plugin's aggregate function as a DataFusion `AggregateUDF`, its
//! accumulator driven row batch by row batch.

use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StructArray};
use arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature};

use super::args::{args_array, args_schema, import_array, plugin_arg_fields, return_field_via, return_type_via};
use super::signature::signature_of;
use crate::error::{ErrorSlot, Result};
use crate::ffi::*;
use crate::identity::{self, Identity};
use crate::plugin::Plugin;

pub struct QlinkAggregateUdf {
    raw: Arc<RawAggregate>,
    name: String,
    signature: Signature,
}

pub struct RawAggregate {
    raw: Box<ql_aggregate_function>,
    plugin: Arc<Plugin>,
}
unsafe impl Send for RawAggregate {}
unsafe impl Sync for RawAggregate {}
impl Drop for RawAggregate {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.enter();
            unsafe { r(&mut *self.raw) };
        }
    }
}

impl std::fmt::Debug for QlinkAggregateUdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkAggregateUdf({})", self.name)
    }
}
impl Drop for QlinkAggregateUdf {
    fn drop(&mut self) {
        identity::forget(&*self);
    }
}
impl PartialEq for QlinkAggregateUdf {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.raw, &o.raw)
    }
}
impl Eq for QlinkAggregateUdf {}
impl Hash for QlinkAggregateUdf {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.name.hash(h);
    }
}

impl QlinkAggregateUdf {
    pub fn open(plugin: &Arc<Plugin>, name: &str) -> Result<AggregateUDF> {
        let open = plugin
            .descriptor()
            .aggregate_function_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no aggregate functions", plugin.name())))?;
        let c = CString::new(name).unwrap_or_default();
        let mut raw: ql_aggregate_function = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            unsafe { open(plugin.descriptor(), c.as_ptr(), &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening aggregate {}/{name}", plugin.name()))?;
        let signature = signature_of(&raw.signature);
        let q = QlinkAggregateUdf {
            raw: Arc::new(RawAggregate { raw: Box::new(raw), plugin: Arc::clone(plugin) }),
            name: name.to_string(),
            signature,
        };
        let id = q.identity(name);
        let f = AggregateUDF::new_from_impl(q);
        identity::remember(f.inner(), id);
        Ok(f)
    }

    /// The identity of this function when it is registered as `registered_as`.
    pub fn identity(&self, registered_as: &str) -> Identity {
        identity::plugin_function(QL_FUNCTION_AGGREGATE, registered_as, self.raw.plugin.name(), self.raw.raw.id.uid)
    }

    /// The state's fields for argument fields `fields` (their metadata,
    /// such as an Arrow extension type, included).
    fn state_struct(&self, fields: &[FieldRef]) -> Result<Fields> {
        let ss = self.raw.raw.state_schema.ok_or_else(|| DataFusionError::Plan(format!("{}: state_schema is NULL", self.name)))?;
        let me: *const ql_aggregate_function = &*self.raw.raw;
        match return_field_via(&self.raw.plugin, &self.name, |a, o, e| unsafe { ss(me, a, o, e) }, fields)?.data_type() {
            DataType::Struct(fields) => Ok(fields.clone()),
            other => Err(DataFusionError::Plan(format!("{}: state schema must be a struct, got {other}", self.name))),
        }
    }
}

impl AggregateUDFImpl for QlinkAggregateUdf {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let rt = self.raw.raw.return_type.ok_or_else(|| DataFusionError::Plan(format!("{}: return_type is NULL", self.name)))?;
        let me: *const ql_aggregate_function = &*self.raw.raw;
        return_type_via(&self.raw.plugin, &self.name, |a, o, e| unsafe { rt(me, a, o, e) }, arg_types)
    }
    /// The plugin's return field for these argument fields: with the
    /// metadata both carry (an Arrow extension type such as GeoArrow's).
    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        let rt = self.raw.raw.return_type.ok_or_else(|| DataFusionError::Plan(format!("{}: return_type is NULL", self.name)))?;
        let me: *const ql_aggregate_function = &*self.raw.raw;
        return_field_via(&self.raw.plugin, &self.name, |a, o, e| unsafe { rt(me, a, o, e) }, arg_fields)
    }
    fn state_fields(&self, args: datafusion::logical_expr::function::StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(self
            .state_struct(args.input_fields)?
            .iter()
            .map(|f| {
                Arc::new(
                    Field::new(format!("{}[{}]", args.name, f.name()), f.data_type().clone(), true).with_metadata(f.metadata().clone()),
                )
            })
            .collect())
    }
    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let new = self.raw.raw.accumulator_new.ok_or_else(|| DataFusionError::Plan(format!("{}: accumulator_new is NULL", self.name)))?;
        let fields = plugin_arg_fields(acc_args.expr_fields);
        let schema = args_schema(&fields)?;
        let mut acc: ql_accumulator = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.raw.plugin.enter();
            unsafe { new(&*self.raw.raw, &schema, &mut acc, err.ptr()) }
        };
        err.check_with(st, || format!("{}: accumulator_new", self.name))?;
        let state = self.state_struct(&fields)?;
        Ok(Box::new(QlinkAccumulator {
            acc,
            owner: Arc::clone(&self.raw),
            fields,
            state,
            ret: acc_args.return_field.data_type().clone(),
            name: self.name.clone(),
        }))
    }
}

struct QlinkAccumulator {
    acc: ql_accumulator,
    owner: Arc<RawAggregate>,
    fields: Vec<FieldRef>,
    state: Fields,
    ret: DataType,
    name: String,
}
unsafe impl Send for QlinkAccumulator {}
unsafe impl Sync for QlinkAccumulator {}

impl std::fmt::Debug for QlinkAccumulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkAccumulator({})", self.name)
    }
}

impl Drop for QlinkAccumulator {
    fn drop(&mut self) {
        if let Some(r) = self.acc.release {
            let _g = self.owner.plugin.enter();
            unsafe { r(&mut self.acc) };
        }
    }
}

impl QlinkAccumulator {
    fn call_in(
        &mut self,
        what: &str,
        f: Option<unsafe extern "C" fn(*mut ql_accumulator, *const ArrowArray, *mut ql_error) -> i32>,
        fields: Vec<FieldRef>,
        arrays: &[ArrayRef],
    ) -> Result<()> {
        let f = f.ok_or_else(|| DataFusionError::Execution(format!("{}: {what} is NULL", self.name)))?;
        let n = arrays.first().map(|a| a.len()).unwrap_or(0);
        let array = args_array(&fields, arrays.to_vec(), n)?;
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.owner.plugin.enter();
            unsafe { f(&mut self.acc, &array, err.ptr()) }
        };
        drop(array);
        err.check_with(st, || format!("{}: {what}", self.name))
    }

    fn call_out(
        &mut self,
        what: &str,
        f: Option<unsafe extern "C" fn(*mut ql_accumulator, *mut ArrowArray, *mut ql_error) -> i32>,
        dt: &DataType,
    ) -> Result<ArrayRef> {
        let f = f.ok_or_else(|| DataFusionError::Execution(format!("{}: {what} is NULL", self.name)))?;
        let mut out = ArrowArray::empty();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.owner.plugin.enter();
            unsafe { f(&mut self.acc, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("{}: {what}", self.name))?;
        import_array(out, dt, &self.owner.plugin)
    }
}

impl Accumulator for QlinkAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let fields = self.fields.clone();
        self.call_in("update", self.acc.update, fields, values)
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let fields: Vec<FieldRef> = self.state.iter().cloned().collect();
        self.call_in("merge", self.acc.merge, fields, states)
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let dt = DataType::Struct(self.state.clone());
        let a = self.call_out("state", self.acc.state, &dt)?;
        let sa = a.as_any().downcast_ref::<StructArray>().ok_or_else(|| DataFusionError::Execution("state is not a struct".into()))?;
        sa.columns().iter().map(|c| ScalarValue::try_from_array(c, 0)).collect()
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        let dt = self.ret.clone();
        let a = self.call_out("evaluate", self.acc.evaluate, &dt)?;
        ScalarValue::try_from_array(&a, 0)
    }
    fn size(&self) -> usize {
        let base = std::mem::size_of::<Self>();
        match self.acc.size {
            Some(f) => base + unsafe { f(&self.acc) }.max(0) as usize,
            None => base,
        }
    }
}
