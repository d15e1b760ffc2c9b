// SPDX-License-Identifier: Apache-2.0
//! A DataFusion `WindowUDF` as a `ql_window_function` (qlink/function.h):
//! one `ql_partition_evaluator` per window partition over the UDF's own
//! `PartitionEvaluator`, evaluated whole (`evaluate_all`: the partition's
//! rows in window order, one value out per row).
//!
//! Types are coerced as for scalar functions (DataFusion's rules for the
//! UDF's signature), and the return field (with its metadata) is the
//! UDF's. The arguments are read in place; a result that still points into
//! them is copied before it is returned.
//!
//! Refused at `evaluator_new` (QL_ENOTSUP, naming the function): an
//! evaluator that needs the window frame or the ORDER BY peers' ranks
//! (RANK, NTH_VALUE over a frame...), which `evaluate_all` does not carry.
//! Window functions that take literal arguments (LAG's offset) see their
//! defaults: the ABI passes argument columns, not expressions.

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::sync::Arc;

use arrow::array::Array;
use arrow::compute::cast;
use arrow::datatypes::{DataType, FieldRef};
use arrow::ffi::FFI_ArrowArray;
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};
use qlink_sys::*;

use crate::args::{arg_columns, arg_fields, arg_type, coerce, column_exprs, detach, fields_of, write_return_field, DeclaredSignature};
use crate::error::{guard, guard_value, Error, Result};

struct UdwfState {
    udwf: Arc<WindowUDF>,
    name: CString,
    signature: DeclaredSignature,
}

/// The coerced argument fields and the return field of `udwf` for `fields`.
fn plan_call(udwf: &WindowUDF, fields: &[FieldRef]) -> Result<(Vec<FieldRef>, FieldRef)> {
    let coerced = coerce(fields, udwf)?;
    let ret = udwf.field(WindowUDFFieldArgs::new(&coerced, udwf.name()))?;
    Ok((coerced, ret))
}

/// `udwf` as a `ql_window_function` the caller owns, identified as
/// (`library`, `uid`) and registered as `name`.
pub fn export_udwf(udwf: Arc<WindowUDF>, name: &str, library: &'static CStr, uid: u64) -> ql_window_function {
    let st =
        Box::new(UdwfState { signature: DeclaredSignature::new(udwf.signature()), udwf, name: CString::new(name).unwrap_or_default() });
    let mut out: ql_window_function = unsafe { std::mem::zeroed() };
    out.struct_size = std::mem::size_of::<ql_window_function>() as u32;
    out.id = ql_function_id { origin: QL_ORIGIN_USER, kind: QL_FUNCTION_WINDOW, name: st.name.as_ptr(), library: library.as_ptr(), uid };
    out.signature = st.signature.abi();
    out.return_type = Some(udwf_return_type);
    out.evaluator_new = Some(udwf_evaluator_new);
    out.release = Some(udwf_release);
    out.private_data = crate::private::into_private(st);
    out
}

fn state(f: *const ql_window_function) -> &'static UdwfState {
    // SAFETY: private_data is the UdwfState this module boxed.
    unsafe { crate::private::borrow((*f).private_data) }
}

unsafe extern "C" fn udwf_return_type(
    f: *const ql_window_function,
    args: *const ArrowSchema,
    out: *mut ArrowSchema,
    error: *mut ql_error,
) -> c_int {
    guard(error, "return type", || {
        let udwf = &state(f).udwf;
        let (_, ret) = plan_call(udwf, &arg_fields(args)?)?;
        write_return_field(udwf.name(), &ret, out)
    })
}

/// One partition's evaluator and what its call needs to read the host's arrays.
struct EvalState {
    ev: Box<dyn PartitionEvaluator>,
    name: String,
    /// The host's argument types (as it passes them) and the coerced ones.
    args_type: DataType,
    coerced: Vec<FieldRef>,
    ret: FieldRef,
}

unsafe extern "C" fn udwf_evaluator_new(
    f: *const ql_window_function,
    args: *const ArrowSchema,
    out: *mut ql_partition_evaluator,
    error: *mut ql_error,
) -> c_int {
    guard(error, "evaluator", || {
        let udwf = &state(f).udwf;
        let args_type = arg_type(args)?;
        let (coerced, ret) = plan_call(udwf, fields_of(&args_type))?;
        let exprs = column_exprs(&coerced);
        let ev = udwf.partition_evaluator_factory(PartitionEvaluatorArgs::new(&exprs, &coerced, false, false))?;
        if ev.uses_window_frame() || ev.include_rank() {
            return Err(Error::unsupported(format!(
                "{}: it needs the window frame or the ORDER BY peers' ranks, which a plugin's window function is not \
                 given (it evaluates whole partitions)",
                udwf.name()
            )));
        }
        let st = Box::new(EvalState { ev, name: udwf.name().to_string(), args_type, coerced, ret });
        let mut e: ql_partition_evaluator = std::mem::zeroed();
        e.struct_size = std::mem::size_of::<ql_partition_evaluator>() as u32;
        e.evaluate_all = Some(eval_all);
        e.release = Some(eval_release);
        e.private_data = crate::private::into_private(st);
        std::ptr::write(out, e);
        Ok(())
    })
}

unsafe extern "C" fn eval_all(
    e: *mut ql_partition_evaluator,
    args: *const ArrowArray,
    num_rows: i64,
    out: *mut ArrowArray,
    error: *mut ql_error,
) -> c_int {
    guard(error, "evaluate_all", || {
        // SAFETY: private_data is the EvalState this module boxed; an
        // evaluator has a single owner, so no other call runs on it.
        let st = &mut *((*e).private_data as *mut EvalState);
        let rows = num_rows.max(0) as usize;
        let mut borrowed = Vec::new();
        let cols = arg_columns(&st.name, &st.args_type, args, &st.coerced, &mut borrowed)?;
        let result = st.ev.evaluate_all(&cols, rows)?;
        if result.len() != rows {
            return Err(Error::new(QL_EINTERNAL, format!("{} returned {} rows for {rows}", st.name, result.len())));
        }
        let result = if result.data_type() == st.ret.data_type() { result } else { cast(&result, st.ret.data_type())? };
        let result = detach(result, &borrowed)?;
        std::ptr::write(out, FFI_ArrowArray::new(&result.to_data()));
        Ok(())
    })
}

unsafe extern "C" fn eval_release(e: *mut ql_partition_evaluator) {
    guard_value((), || {
        crate::private::drop_box::<EvalState>(&mut (*e).private_data);
        (*e).release = None;
    })
}

unsafe extern "C" fn udwf_release(f: *mut ql_window_function) {
    guard_value((), || {
        crate::private::drop_box::<UdwfState>(&mut (*f).private_data);
        (*f).release = None;
    })
}
