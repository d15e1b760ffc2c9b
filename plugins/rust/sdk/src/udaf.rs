// SPDX-License-Identifier: Apache-2.0
//! A DataFusion `AggregateUDF` as a `ql_aggregate_function`
//! (qlink/function.h), with one `ql_accumulator` per group over the UDF's
//! own `Accumulator`.
//!
//! Types: the host's argument types are coerced by DataFusion's own rules
//! for the UDF's signature (`args::coerce`) and the columns
//! cast to them; the return field (with its extension metadata) and the
//! state fields are the UDF's for those types. A signature that fixes its
//! argument types is declared to the host as argument formats.
//!
//! Memory: the host's argument and state arrays are borrowed for the call
//! only, while an `Accumulator` may keep what it is given (`array_agg`
//! keeps the arrays), so each call copies them first: an accumulator never
//! points into host memory after the call returns.
//!
//! Groups: when the UDF has a `GroupsAccumulator` for the call's types,
//! `groups_accumulator_new` offers it (every group's state in one object,
//! DataFusion's fast path for GROUP BY; the DataFusion host drives it), its
//! arguments copied in as an accumulator's are.
//!
//! Not offered: DISTINCT and ORDER BY inside the aggregate's call (the host
//! plans those), and retract (sliding window frames).

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StructArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, FieldRef, Fields, Schema};
use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDF, EmitTo, GroupsAccumulator};
use qlink_sys::*;

use crate::args::{arg_columns, arg_fields, arg_type, coerce, column_exprs, detach, fields_of, write_return_field, DeclaredSignature};
use crate::error::{guard, guard_value, Error, Result};

struct UdafState {
    udaf: Arc<AggregateUDF>,
    name: CString,
    signature: DeclaredSignature,
}

/// The coerced argument fields and the return field of `udaf` for `fields`.
fn plan_call(udaf: &AggregateUDF, fields: &[FieldRef]) -> Result<(Vec<FieldRef>, FieldRef)> {
    let coerced = coerce(fields, udaf)?;
    let ret = udaf.return_field(&coerced)?;
    Ok((coerced, ret))
}

/// The state fields of `udaf` for these argument and return fields, each
/// nullable (one row per group, which may have seen no value).
fn state_fields(udaf: &AggregateUDF, coerced: &[FieldRef], ret: &FieldRef) -> Result<Fields> {
    let fields = udaf.state_fields(StateFieldsArgs {
        name: udaf.name(),
        input_fields: coerced,
        return_field: ret.clone(),
        ordering_fields: &[],
        is_distinct: false,
    })?;
    Ok(fields.iter().map(|f| f.as_ref().clone().with_nullable(true)).collect())
}

/// `udaf` as a `ql_aggregate_function` the caller owns, identified as
/// (`library`, `uid`) and registered as `name`.
pub fn export_udaf(udaf: Arc<AggregateUDF>, name: &str, library: &'static CStr, uid: u64) -> ql_aggregate_function {
    let st =
        Box::new(UdafState { signature: DeclaredSignature::new(udaf.signature()), udaf, name: CString::new(name).unwrap_or_default() });
    let mut out: ql_aggregate_function = unsafe { std::mem::zeroed() };
    out.struct_size = std::mem::size_of::<ql_aggregate_function>() as u32;
    out.id = ql_function_id { origin: QL_ORIGIN_USER, kind: QL_FUNCTION_AGGREGATE, name: st.name.as_ptr(), library: library.as_ptr(), uid };
    out.signature = st.signature.abi();
    out.return_type = Some(udaf_return_type);
    out.state_schema = Some(udaf_state_schema);
    out.accumulator_new = Some(udaf_accumulator_new);
    out.groups_accumulator_new = Some(udaf_groups_accumulator_new);
    out.release = Some(udaf_release);
    out.private_data = crate::private::into_private(st);
    out
}

fn state(f: *const ql_aggregate_function) -> &'static UdafState {
    // SAFETY: private_data is the UdafState this module boxed.
    unsafe { crate::private::borrow((*f).private_data) }
}

unsafe extern "C" fn udaf_return_type(
    f: *const ql_aggregate_function,
    args: *const ArrowSchema,
    out: *mut ArrowSchema,
    error: *mut ql_error,
) -> c_int {
    guard(error, "return type", || {
        let udaf = &state(f).udaf;
        let (_, ret) = plan_call(udaf, &arg_fields(args)?)?;
        write_return_field(udaf.name(), &ret, out)
    })
}

unsafe extern "C" fn udaf_state_schema(
    f: *const ql_aggregate_function,
    args: *const ArrowSchema,
    out: *mut ArrowSchema,
    error: *mut ql_error,
) -> c_int {
    guard(error, "state schema", || {
        let udaf = &state(f).udaf;
        let (coerced, ret) = plan_call(udaf, &arg_fields(args)?)?;
        let fields = state_fields(udaf, &coerced, &ret)?;
        std::ptr::write(out, FFI_ArrowSchema::try_from(&DataType::Struct(fields))?);
        Ok(())
    })
}

/// What an accumulator's calls need to read the host's arrays and write
/// their own: the call's types, as planned once.
struct Call {
    name: String,
    /// The host's argument types (as it passes them) and the coerced ones.
    args_type: DataType,
    coerced: Vec<FieldRef>,
    /// The state's struct type, as `state` writes it and `merge` reads it.
    state_fields: Fields,
    state_type: DataType,
    ret: FieldRef,
}

impl Call {
    /// The call of `udaf` over the host's argument schema `args`.
    fn of(udaf: &AggregateUDF, args: *const ArrowSchema) -> Result<Call> {
        let args_type = arg_type(args)?;
        let (coerced, ret) = plan_call(udaf, fields_of(&args_type))?;
        let state_fields = state_fields(udaf, &coerced, &ret)?;
        Ok(Call {
            name: udaf.name().to_string(),
            args_type,
            coerced,
            state_type: DataType::Struct(state_fields.clone()),
            state_fields,
            ret,
        })
    }

    /// `f` given DataFusion's AccumulatorArgs for this call.
    fn with_args<T>(&self, udaf: &AggregateUDF, f: impl FnOnce(AccumulatorArgs) -> datafusion::error::Result<T>) -> Result<T> {
        let schema = Schema::new(self.coerced.clone());
        let exprs = column_exprs(&self.coerced);
        Ok(f(AccumulatorArgs {
            return_field: self.ret.clone(),
            schema: &schema,
            ignore_nulls: false,
            order_bys: &[],
            is_reversed: false,
            name: udaf.name(),
            is_distinct: false,
            exprs: &exprs,
            expr_fields: &self.coerced,
        })?)
    }

    /// The argument columns of the host's struct array (copied).
    fn args(&self, array: *const ArrowArray) -> Result<Vec<ArrayRef>> {
        columns(&self.args_type, array, &self.coerced, &self.name)
    }

    /// The state columns of the host's struct array (copied).
    fn states(&self, array: *const ArrowArray) -> Result<Vec<ArrayRef>> {
        columns(&self.state_type, array, &self.state_fields, &self.name)
    }

    /// State columns (`rows` each) as the state's struct array.
    fn state_array(&self, cols: Vec<ArrayRef>) -> Result<StructArray> {
        if cols.len() != self.state_fields.len() {
            return Err(Error::new(
                QL_EINTERNAL,
                format!("{}: {} state values for {} state fields", self.name, cols.len(), self.state_fields.len()),
            ));
        }
        let mut out = Vec::with_capacity(cols.len());
        for (col, f) in cols.into_iter().zip(self.state_fields.iter()) {
            out.push(if col.data_type() == f.data_type() { col } else { cast(&col, f.data_type())? });
        }
        Ok(StructArray::try_new(self.state_fields.clone(), out, None)?)
    }

    /// A result column in the return type.
    fn result(&self, col: ArrayRef) -> Result<ArrayRef> {
        Ok(if col.data_type() == self.ret.data_type() { col } else { cast(&col, self.ret.data_type())? })
    }
}

/// One group's accumulator.
struct AccState {
    acc: Box<dyn Accumulator>,
    call: Call,
}

unsafe extern "C" fn udaf_accumulator_new(
    f: *const ql_aggregate_function,
    args: *const ArrowSchema,
    out: *mut ql_accumulator,
    error: *mut ql_error,
) -> c_int {
    guard(error, "accumulator", || {
        let udaf = &state(f).udaf;
        let call = Call::of(udaf, args)?;
        let acc = call.with_args(udaf, |a| udaf.accumulator(a))?;
        let st = Box::new(AccState { acc, call });
        let mut acc: ql_accumulator = std::mem::zeroed();
        acc.struct_size = std::mem::size_of::<ql_accumulator>() as u32;
        acc.update = Some(acc_update);
        acc.merge = Some(acc_merge);
        acc.state = Some(acc_state);
        acc.evaluate = Some(acc_evaluate);
        acc.size = Some(acc_size);
        acc.release = Some(acc_release);
        acc.private_data = crate::private::into_private(st);
        std::ptr::write(out, acc);
        Ok(())
    })
}

fn acc(a: *mut ql_accumulator) -> &'static mut AccState {
    // SAFETY: private_data is the AccState this module boxed; the ABI gives
    // an accumulator a single owner, so no other call runs on it meanwhile.
    unsafe { &mut *((*a).private_data as *mut AccState) }
}

/// The columns of the host's borrowed struct array, each cast to `want`,
/// with buffers of their own: an accumulator may keep what it is given.
fn columns(input: &DataType, array: *const ArrowArray, want: &[FieldRef], what: &str) -> Result<Vec<ArrayRef>> {
    let mut borrowed = Vec::new();
    let cols = arg_columns(what, input, array, want, &mut borrowed)?;
    cols.into_iter().map(|c| detach(c, &borrowed)).collect()
}

unsafe extern "C" fn acc_update(a: *mut ql_accumulator, args: *const ArrowArray, error: *mut ql_error) -> c_int {
    guard(error, "update", || {
        let st = acc(a);
        let cols = st.call.args(args)?;
        st.acc.update_batch(&cols)?;
        Ok(())
    })
}

unsafe extern "C" fn acc_merge(a: *mut ql_accumulator, states: *const ArrowArray, error: *mut ql_error) -> c_int {
    guard(error, "merge", || {
        let st = acc(a);
        let cols = st.call.states(states)?;
        st.acc.merge_batch(&cols)?;
        Ok(())
    })
}

unsafe extern "C" fn acc_state(a: *mut ql_accumulator, out: *mut ArrowArray, error: *mut ql_error) -> c_int {
    guard(error, "state", || {
        let st = acc(a);
        let cols = st.acc.state()?.iter().map(|v| v.to_array_of_size(1)).collect::<datafusion::error::Result<Vec<_>>>()?;
        let array = st.call.state_array(cols)?;
        std::ptr::write(out, FFI_ArrowArray::new(&array.to_data()));
        Ok(())
    })
}

unsafe extern "C" fn acc_evaluate(a: *mut ql_accumulator, out: *mut ArrowArray, error: *mut ql_error) -> c_int {
    guard(error, "evaluate", || {
        let st = acc(a);
        let col = st.call.result(st.acc.evaluate()?.to_array_of_size(1)?)?;
        std::ptr::write(out, FFI_ArrowArray::new(&col.to_data()));
        Ok(())
    })
}

unsafe extern "C" fn acc_size(a: *const ql_accumulator) -> i64 {
    guard_value(0, || acc(a as *mut ql_accumulator).acc.size() as i64)
}

unsafe extern "C" fn acc_release(a: *mut ql_accumulator) {
    guard_value((), || {
        crate::private::drop_box::<AccState>(&mut (*a).private_data);
        (*a).release = None;
    })
}

/// Every group's state in one `GroupsAccumulator`.
struct GroupsState {
    acc: Box<dyn GroupsAccumulator>,
    call: Call,
}

unsafe extern "C" fn udaf_groups_accumulator_new(
    f: *const ql_aggregate_function,
    args: *const ArrowSchema,
    out: *mut ql_groups_accumulator,
    error: *mut ql_error,
) -> c_int {
    guard(error, "groups accumulator", || {
        let udaf = &state(f).udaf;
        let call = Call::of(udaf, args)?;
        if !call.with_args(udaf, |a| Ok(udaf.groups_accumulator_supported(a)))? {
            return Err(Error::unsupported(format!("{} has no groups accumulator for these types", udaf.name())));
        }
        let acc = call.with_args(udaf, |a| udaf.create_groups_accumulator(a))?;
        let st = Box::new(GroupsState { acc, call });
        let mut g: ql_groups_accumulator = std::mem::zeroed();
        g.struct_size = std::mem::size_of::<ql_groups_accumulator>() as u32;
        g.update = Some(groups_update);
        g.merge = Some(groups_merge);
        g.state = Some(groups_state);
        g.evaluate = Some(groups_evaluate);
        g.size = Some(groups_size);
        g.release = Some(groups_release);
        g.private_data = crate::private::into_private(st);
        std::ptr::write(out, g);
        Ok(())
    })
}

fn groups(g: *mut ql_groups_accumulator) -> &'static mut GroupsState {
    // SAFETY: private_data is the GroupsState this module boxed; single owner.
    unsafe { &mut *((*g).private_data as *mut GroupsState) }
}

/// The host's group indices for `rows` rows, each below `total`.
fn group_indices(indices: *const u32, rows: usize, total: i64, name: &str) -> Result<(Vec<usize>, usize)> {
    let total = usize::try_from(total).map_err(|_| Error::invalid(format!("{name}: total_groups {total}")))?;
    if rows > 0 && indices.is_null() {
        return Err(Error::invalid(format!("{name}: group_indices is NULL")));
    }
    // SAFETY: one index per row (qlink/function.h).
    let idx = if rows == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(indices, rows) } };
    if let Some((row, g)) = idx.iter().enumerate().find(|(_, g)| **g as usize >= total) {
        return Err(Error::invalid(format!("{name}: group index {g} of row {row} >= total_groups {total}")));
    }
    Ok((idx.iter().map(|&g| g as usize).collect(), total))
}

unsafe extern "C" fn groups_update(
    g: *mut ql_groups_accumulator,
    args: *const ArrowArray,
    indices: *const u32,
    total: i64,
    error: *mut ql_error,
) -> c_int {
    guard(error, "groups update", || {
        let st = groups(g);
        let cols = st.call.args(args)?;
        let (idx, total) = group_indices(indices, (*args).length.max(0) as usize, total, &st.call.name)?;
        st.acc.update_batch(&cols, &idx, None, total)?;
        Ok(())
    })
}

unsafe extern "C" fn groups_merge(
    g: *mut ql_groups_accumulator,
    states: *const ArrowArray,
    indices: *const u32,
    total: i64,
    error: *mut ql_error,
) -> c_int {
    guard(error, "groups merge", || {
        let st = groups(g);
        let cols = st.call.states(states)?;
        let (idx, total) = group_indices(indices, (*states).length.max(0) as usize, total, &st.call.name)?;
        st.acc.merge_batch(&cols, &idx, total)?;
        Ok(())
    })
}

unsafe extern "C" fn groups_state(g: *mut ql_groups_accumulator, out: *mut ArrowArray, error: *mut ql_error) -> c_int {
    guard(error, "groups state", || {
        let st = groups(g);
        let array = st.call.state_array(st.acc.state(EmitTo::All)?)?;
        std::ptr::write(out, FFI_ArrowArray::new(&array.to_data()));
        Ok(())
    })
}

unsafe extern "C" fn groups_evaluate(g: *mut ql_groups_accumulator, out: *mut ArrowArray, error: *mut ql_error) -> c_int {
    guard(error, "groups evaluate", || {
        let st = groups(g);
        let col = st.call.result(st.acc.evaluate(EmitTo::All)?)?;
        std::ptr::write(out, FFI_ArrowArray::new(&col.to_data()));
        Ok(())
    })
}

unsafe extern "C" fn groups_size(g: *const ql_groups_accumulator) -> i64 {
    guard_value(0, || groups(g as *mut ql_groups_accumulator).acc.size() as i64)
}

unsafe extern "C" fn groups_release(g: *mut ql_groups_accumulator) {
    guard_value((), || {
        crate::private::drop_box::<GroupsState>(&mut (*g).private_data);
        (*g).release = None;
    })
}

unsafe extern "C" fn udaf_release(f: *mut ql_aggregate_function) {
    guard_value((), || {
        crate::private::drop_box::<UdafState>(&mut (*f).private_data);
        (*f).release = None;
    })
}
