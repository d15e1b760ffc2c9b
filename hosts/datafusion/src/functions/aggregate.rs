// SPDX-License-Identifier: Apache-2.0
//! A plugin's aggregate function as a DataFusion `AggregateUDF`, its
//! accumulator driven row batch by row batch: the plugin's groups
//! accumulator (every group at once) when it offers one, else one
//! accumulator per group.

use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::BooleanArray;
use arrow::array::{Array, ArrayRef, StructArray};
use arrow::compute::filter as filter_kernel;
use arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature};

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
    /// The plugin's groups accumulator when it offers one for these types
    /// (asked by making one: QL_ENOTSUP, or any error, leaves the query to
    /// one accumulator per group); never for DISTINCT, which DataFusion
    /// serves through one accumulator per group.
    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.raw.raw.groups_accumulator_new.is_some()
            && !args.is_distinct
            && self.new_groups_accumulator(plugin_arg_fields(args.expr_fields), args.return_field.data_type().clone()).is_ok()
    }
    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let fields = plugin_arg_fields(args.expr_fields);
        Ok(Box::new(self.new_groups_accumulator(fields, args.return_field.data_type().clone())?))
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

/// The plugin's groups accumulator (`ql_groups_accumulator`): every group's
/// state in one object, DataFusion's fast path for GROUP BY. Rows that a
/// FILTER clause drops are removed before the call (the ABI passes none).
/// The ABI emits every group at once; DataFusion's `EmitTo::First(n)`
/// (sorted input, spilling) is served by taking every group's state, and
/// merging the groups that stay into a fresh accumulator.
struct QlinkGroupsAccumulator {
    acc: ql_groups_accumulator,
    owner: Arc<RawAggregate>,
    /// The argument schema the accumulator was made for (to make another).
    args: Vec<FieldRef>,
    state: Fields,
    ret: DataType,
    name: String,
    /// Groups the accumulator holds (the largest total_num_groups given).
    groups: usize,
}
unsafe impl Send for QlinkGroupsAccumulator {}
unsafe impl Sync for QlinkGroupsAccumulator {}

impl std::fmt::Debug for QlinkGroupsAccumulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkGroupsAccumulator({})", self.name)
    }
}

impl Drop for QlinkGroupsAccumulator {
    fn drop(&mut self) {
        if let Some(r) = self.acc.release {
            let _g = self.owner.plugin.enter();
            unsafe { r(&mut self.acc) };
        }
    }
}

impl QlinkAggregateUdf {
    fn new_groups_accumulator(&self, args: Vec<FieldRef>, ret: DataType) -> Result<QlinkGroupsAccumulator> {
        let state = self.state_struct(&args)?;
        QlinkGroupsAccumulator::new(&self.raw, &self.name, args, state, ret)
    }
}

type GroupsIn = Option<unsafe extern "C" fn(*mut ql_groups_accumulator, *const ArrowArray, *const u32, i64, *mut ql_error) -> i32>;
type GroupsOut = Option<unsafe extern "C" fn(*mut ql_groups_accumulator, *mut ArrowArray, *mut ql_error) -> i32>;

/// One call's rows: their columns, each row's group, the FILTER's verdict
/// per row (if any), and how many groups there are.
struct Rows<'a> {
    values: &'a [ArrayRef],
    groups: &'a [usize],
    filter: Option<&'a BooleanArray>,
    total: usize,
}

impl QlinkGroupsAccumulator {
    /// The plugin's groups accumulator for argument fields `args`, whose
    /// state has `state`'s fields.
    fn new(owner: &Arc<RawAggregate>, name: &str, args: Vec<FieldRef>, state: Fields, ret: DataType) -> Result<QlinkGroupsAccumulator> {
        let new = owner.raw.groups_accumulator_new.ok_or_else(|| DataFusionError::Plan(format!("{name}: no groups accumulator")))?;
        let schema = args_schema(&args)?;
        let mut acc: ql_groups_accumulator = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = owner.plugin.enter();
            unsafe { new(&*owner.raw, &schema, &mut acc, err.ptr()) }
        };
        err.check_with(st, || format!("{name}: groups_accumulator_new"))?;
        Ok(QlinkGroupsAccumulator { acc, owner: Arc::clone(owner), args, state, ret, name: name.to_string(), groups: 0 })
    }

    fn call_in(&mut self, what: &str, f: GroupsIn, fields: Vec<FieldRef>, rows: Rows<'_>) -> Result<()> {
        let Rows { values, groups: group_indices, filter, total } = rows;
        let f = f.ok_or_else(|| DataFusionError::Execution(format!("{}: {what} is NULL", self.name)))?;
        if u32::try_from(total).is_err() {
            return Err(DataFusionError::Execution(format!("{}: {total} groups is more than the ABI's 2^32", self.name)));
        }
        if group_indices.iter().any(|&g| g >= total) {
            return Err(DataFusionError::Internal(format!("{}: a group index beyond total_num_groups {total}", self.name)));
        }
        // Each index is below total, so fits in u32.
        let (values, indices): (Vec<ArrayRef>, Vec<u32>) = match filter {
            None => (values.to_vec(), group_indices.iter().map(|&g| g as u32).collect()),
            Some(keep) => {
                let values = values.iter().map(|v| filter_kernel(v, keep)).collect::<std::result::Result<Vec<_>, _>>()?;
                let idx = group_indices.iter().zip(keep.iter()).filter(|(_, k)| k.unwrap_or(false)).map(|(&g, _)| g as u32).collect();
                (values, idx)
            }
        };
        let array = args_array(&fields, values, indices.len())?;
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.owner.plugin.enter();
            unsafe { f(&mut self.acc, &array, indices.as_ptr(), total as i64, err.ptr()) }
        };
        drop(array);
        err.check_with(st, || format!("{}: {what}", self.name))?;
        self.groups = self.groups.max(total);
        Ok(())
    }

    /// Every group's state or value: an array of one row per group.
    fn call_out(&mut self, what: &str, f: GroupsOut, dt: &DataType) -> Result<ArrayRef> {
        let f = f.ok_or_else(|| DataFusionError::Execution(format!("{}: {what} is NULL", self.name)))?;
        let mut out = ArrowArray::empty();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.owner.plugin.enter();
            unsafe { f(&mut self.acc, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("{}: {what}", self.name))?;
        let a = import_array(out, dt, &self.owner.plugin)?;
        if a.len() != self.groups {
            return Err(DataFusionError::Execution(format!("{}: {what} gave {} rows for {} groups", self.name, a.len(), self.groups)));
        }
        Ok(a)
    }

    /// Every group's state as a struct array, the accumulator left empty.
    fn take_state(&mut self) -> Result<StructArray> {
        let dt = DataType::Struct(self.state.clone());
        let a = self.call_out("state", self.acc.state, &dt)?;
        a.as_any()
            .downcast_ref::<StructArray>()
            .cloned()
            .ok_or_else(|| DataFusionError::Execution(format!("{}: state is not a struct", self.name)))
    }

    /// A new, empty accumulator like this one.
    fn fresh(&self) -> Result<QlinkGroupsAccumulator> {
        QlinkGroupsAccumulator::new(&self.owner, &self.name, self.args.clone(), self.state.clone(), self.ret.clone())
    }

    /// A fresh accumulator holding `state`'s rows as groups 0.. (in order).
    fn fresh_with(&self, state: &StructArray) -> Result<QlinkGroupsAccumulator> {
        let mut fresh = self.fresh()?;
        if state.is_empty() {
            return Ok(fresh);
        }
        let idx: Vec<usize> = (0..state.len()).collect();
        let fields: Vec<FieldRef> = self.state.iter().cloned().collect();
        fresh.call_in(
            "merge",
            fresh.acc.merge,
            fields,
            Rows { values: state.columns(), groups: &idx, filter: None, total: state.len() },
        )?;
        Ok(fresh)
    }

    /// Split off the first `n` groups' state; the rest stay here.
    fn split_first(&mut self, n: usize) -> Result<StructArray> {
        let all = self.take_state()?;
        let n = n.min(all.len());
        let rest = self.fresh_with(&all.slice(n, all.len() - n))?;
        // The spent accumulator is released as it drops.
        drop(std::mem::replace(self, rest));
        Ok(all.slice(0, n))
    }
}

impl GroupsAccumulator for QlinkGroupsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], filter: Option<&BooleanArray>, total: usize) -> Result<()> {
        let fields = self.args.clone();
        self.call_in("update", self.acc.update, fields, Rows { values, groups: group_indices, filter, total })
    }
    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total: usize) -> Result<()> {
        let fields: Vec<FieldRef> = self.state.iter().cloned().collect();
        self.call_in("merge", self.acc.merge, fields, Rows { values, groups: group_indices, filter: None, total })
    }
    /// Each row as its own group's state (a fresh accumulator updated with
    /// group i for row i; rows the filter drops stay empty groups).
    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let n = values.first().map_or(0, |v| v.len());
        let mut one = self.fresh()?;
        let idx: Vec<usize> = (0..n).collect();
        let fields = self.args.clone();
        one.call_in("update", one.acc.update, fields, Rows { values, groups: &idx, filter, total: n })?;
        Ok(one.take_state()?.columns().to_vec())
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        match emit_to {
            EmitTo::All => {
                let dt = self.ret.clone();
                let a = self.call_out("evaluate", self.acc.evaluate, &dt)?;
                self.groups = 0;
                Ok(a)
            }
            EmitTo::First(n) => {
                let first = self.split_first(n)?;
                let mut head = self.fresh_with(&first)?;
                head.evaluate(EmitTo::All)
            }
        }
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let s = match emit_to {
            EmitTo::All => {
                let s = self.take_state()?;
                self.groups = 0;
                s
            }
            EmitTo::First(n) => self.split_first(n)?,
        };
        Ok(s.columns().to_vec())
    }
    fn size(&self) -> usize {
        let base = std::mem::size_of::<Self>();
        match self.acc.size {
            Some(f) => base + unsafe { f(&self.acc) }.max(0) as usize,
            None => base,
        }
    }
}
