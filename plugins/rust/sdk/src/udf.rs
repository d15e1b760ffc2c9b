// SPDX-License-Identifier: Apache-2.0
//! A DataFusion `ScalarUDF` as a `ql_scalar_function` (qlink/function.h).
//!
//! The host passes argument types without coercing them (the signature
//! accepts any types); `return_type` coerces them with the UDF's own
//! DataFusion signature, and `invoke` casts the argument columns to those
//! types, so the function sees exactly what DataFusion would give it.
//! Arguments are borrowed from the host for the call and read without
//! copies; a result that still points into them is copied before it is
//! handed back, because the host may free its arguments first.

use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::FieldRef;
use arrow::ffi::FFI_ArrowArray;
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF};
use qlink_sys::*;

use crate::args::{arg_columns, arg_fields, arg_type, coerce, detach, fields_of, write_return_field, DeclaredSignature};
use crate::error::{guard, guard_value, Error, Result};

struct UdfState {
    udf: Arc<ScalarUDF>,
    name: CString,
    signature: DeclaredSignature,
    library: &'static std::ffi::CStr,
    config: Arc<datafusion::config::ConfigOptions>,
    /// The coerced argument fields and return field per argument fields
    /// seen (a handful per call site), so a call coerces once, not per batch.
    plans: std::sync::Mutex<Vec<CallPlan>>,
}

/// (argument fields, coerced argument fields, return field).
type CallPlan = (Vec<FieldRef>, Vec<FieldRef>, FieldRef);

/// At most this many argument-type combinations are remembered per function.
const PLANS_KEPT: usize = 16;

impl UdfState {
    fn plan(&self, fields: &[FieldRef]) -> Result<(Vec<FieldRef>, FieldRef)> {
        let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, coerced, ret)) = plans.iter().find(|(f, _, _)| f.as_slice() == fields) {
            return Ok((coerced.clone(), ret.clone()));
        }
        let (coerced, ret) = plan_call(&self.udf, fields)?;
        if plans.len() >= PLANS_KEPT {
            plans.remove(0);
        }
        plans.push((fields.to_vec(), coerced.clone(), ret.clone()));
        Ok((coerced, ret))
    }
}

fn state(f: *const ql_scalar_function) -> &'static UdfState {
    // SAFETY: private_data is the UdfState this module boxed.
    unsafe { crate::private::borrow((*f).private_data) }
}

/// `udf` as a `ql_scalar_function` the caller owns, identified as
/// (`library`, `uid`) and registered as `name`.
pub fn export_udf(udf: Arc<ScalarUDF>, name: &str, library: &'static std::ffi::CStr, uid: u64) -> ql_scalar_function {
    let st = Box::new(UdfState {
        signature: DeclaredSignature::new(udf.signature()),
        udf,
        name: CString::new(name).unwrap_or_default(),
        library,
        config: Arc::new(datafusion::config::ConfigOptions::default()),
        plans: Default::default(),
    });
    let mut out: ql_scalar_function = zeroed();
    out.struct_size = std::mem::size_of::<ql_scalar_function>() as u32;
    out.id = ql_function_id { origin: QL_ORIGIN_USER, kind: QL_FUNCTION_SCALAR, name: st.name.as_ptr(), library: st.library.as_ptr(), uid };
    out.signature = st.signature.abi();
    out.return_type = Some(udf_return_type);
    out.invoke = Some(udf_invoke);
    out.release = Some(udf_release);
    out.private_data = crate::private::into_private(st);
    out
}

/// The coerced argument fields and the return field of `udf` for `fields`.
fn plan_call(udf: &ScalarUDF, fields: &[FieldRef]) -> Result<(Vec<FieldRef>, FieldRef)> {
    let coerced = coerce(fields, udf)?;
    let scalars = vec![None; coerced.len()];
    let ret = udf.return_field_from_args(ReturnFieldArgs { arg_fields: &coerced, scalar_arguments: &scalars })?;
    Ok((coerced, ret))
}

unsafe extern "C" fn udf_return_type(
    f: *const ql_scalar_function,
    args: *const ArrowSchema,
    out: *mut ArrowSchema,
    error: *mut ql_error,
) -> c_int {
    guard(error, "return type", || {
        let (_, ret) = plan_call(&state(f).udf, &arg_fields(args)?)?;
        write_return_field(state(f).udf.name(), &ret, out)
    })
}

unsafe extern "C" fn udf_invoke(
    f: *const ql_scalar_function,
    args_schema: *const ArrowSchema,
    args: *const ArrowArray,
    num_rows: i64,
    out: *mut ArrowArray,
    error: *mut ql_error,
) -> c_int {
    guard(error, "invoke", || {
        let st = state(f);
        if out.is_null() {
            return Err(Error::invalid("invoke: out is NULL"));
        }
        let input = arg_type(args_schema)?;
        let (coerced, ret) = st.plan(fields_of(&input))?;
        let rows = num_rows.max(0) as usize;
        let mut borrowed = Vec::new();
        let cols = arg_columns(st.udf.name(), &input, args, &coerced, &mut borrowed)?;
        let value = st.udf.invoke_with_args(ScalarFunctionArgs {
            args: cols.into_iter().map(ColumnarValue::Array).collect(),
            arg_fields: coerced,
            number_rows: rows,
            return_field: ret.clone(),
            config_options: st.config.clone(),
        })?;
        let array = value.into_array(rows)?;
        if array.len() != rows {
            return Err(Error::new(QL_EINTERNAL, format!("{} returned {} rows for {rows}", st.udf.name(), array.len())));
        }
        let array = detach(array, &borrowed)?;
        std::ptr::write(out, FFI_ArrowArray::new(&array.to_data()));
        Ok(())
    })
}

unsafe extern "C" fn udf_release(f: *mut ql_scalar_function) {
    guard_value((), || {
        crate::private::drop_box::<UdfState>(&mut (*f).private_data);
        (*f).release = None;
    })
}
