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

use arrow::array::{make_array, Array, ArrayRef, MutableArrayData, StructArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef};
use arrow::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, Signature, TypeSignature, Volatility};
use qlink_sys::*;

use crate::error::{guard, guard_value, Error, Result};

/// A DataFusion signature as the ABI declares it (`ql_signature`): the
/// argument formats when the signature fixes them (see
/// [`fixed_arg_types`]), else any number of any type. Owns the format
/// strings the declared signature points at.
pub struct DeclaredSignature {
    formats: Vec<CString>,
    ptrs: Vec<*const std::os::raw::c_char>,
    fixed: bool,
    volatility: i32,
}

impl DeclaredSignature {
    pub fn new(sig: &Signature) -> DeclaredSignature {
        let fixed = fixed_arg_types(&sig.type_signature);
        let formats: Vec<CString> = fixed.iter().flatten().map(|t| CString::new(qlink_convert::format_of(t)).unwrap_or_default()).collect();
        let ptrs = formats.iter().map(|c| c.as_ptr()).collect();
        DeclaredSignature { formats, ptrs, fixed: fixed.is_some(), volatility: volatility_of(sig.volatility) }
    }

    /// The `ql_signature`, pointing into `self` (which must outlive it).
    pub fn abi(&self) -> ql_signature {
        match self.fixed {
            true => ql_signature { n_args: self.formats.len() as i32, volatility: self.volatility, arg_formats: self.ptrs.as_ptr() },
            false => ql_signature { n_args: -1, volatility: self.volatility, arg_formats: std::ptr::null() },
        }
    }
}

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

pub fn volatility_of(v: Volatility) -> i32 {
    match v {
        Volatility::Immutable => QL_IMMUTABLE,
        Volatility::Stable => QL_STABLE,
        Volatility::Volatile => QL_VOLATILE,
    }
}

/// The argument types a DataFusion signature fixes, when it fixes one
/// list: exact types, one type for every argument, or no arguments. A host
/// whose API fixes parameter types at registration (DuckDB) needs them;
/// None (any types, checked in return_type) otherwise.
pub fn fixed_arg_types(sig: &TypeSignature) -> Option<Vec<DataType>> {
    // A format string describes a flat type only: a union's or a list's
    // children live in the schema, so a signature over them declares none.
    let flat = |t: &DataType| !t.is_nested() && !matches!(t, DataType::Dictionary(..) | DataType::RunEndEncoded(..));
    let types = fixed_types(sig)?;
    types.iter().all(flat).then_some(types)
}

fn fixed_types(sig: &TypeSignature) -> Option<Vec<DataType>> {
    match sig {
        TypeSignature::Exact(types) => Some(types.clone()),
        TypeSignature::Uniform(n, types) if types.len() == 1 => Some(vec![types[0].clone(); *n]),
        TypeSignature::Nullary => Some(Vec::new()),
        TypeSignature::OneOf(options) if options.len() == 1 => fixed_types(&options[0]),
        _ => None,
    }
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

/// The argument fields of a struct schema the host passed.
pub fn arg_fields(args: *const ArrowSchema) -> Result<Vec<FieldRef>> {
    if args.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: borrowed for the call; arrow-rs reads it without taking it.
    let dt = DataType::try_from(unsafe { &*args })?;
    match dt {
        DataType::Struct(fields) => Ok(fields.iter().cloned().collect()),
        other => Err(Error::invalid(format!("function arguments must be a struct schema, not {other}"))),
    }
}

/// The coerced argument fields and the return field of `udf` for `fields`.
fn plan_call(udf: &ScalarUDF, fields: &[FieldRef]) -> Result<(Vec<FieldRef>, FieldRef)> {
    let coerced = fields_with_udf(fields, udf).map_err(|e| Error::invalid(format!("{}: {}", udf.name(), Error::from(e).message)))?;
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
        let field = Field::new(state(f).udf.name(), ret.data_type().clone(), true).with_metadata(ret.metadata().clone());
        std::ptr::write(out, FFI_ArrowSchema::try_from(&field)?);
        Ok(())
    })
}

/// Every buffer address range of an array and its children.
pub fn ranges(data: &arrow::array::ArrayData, out: &mut Vec<(usize, usize)>) {
    for b in data.buffers() {
        out.push((b.as_ptr() as usize, b.as_ptr() as usize + b.len()));
    }
    if let Some(n) = data.nulls() {
        let b = n.buffer();
        out.push((b.as_ptr() as usize, b.as_ptr() as usize + b.len()));
    }
    for c in data.child_data() {
        ranges(c, out);
    }
}

/// `result`, copied if any of its buffers lies in one of `borrowed`.
pub fn detach(result: ArrayRef, borrowed: &[(usize, usize)]) -> Result<ArrayRef> {
    let data = result.to_data();
    let mut mine = Vec::new();
    ranges(&data, &mut mine);
    let shares = mine.iter().any(|(s, e)| s < e && borrowed.iter().any(|(bs, be)| s < be && bs < e));
    if !shares {
        return Ok(result);
    }
    let mut m = MutableArrayData::new(vec![&data], false, data.len());
    m.try_extend(0, 0, data.len())?;
    Ok(make_array(m.freeze()))
}

/// The host's borrowed struct array, read in place (it is not released
/// here: the host still owns it).
pub fn borrow_args(args_schema: *const ArrowSchema, args: *const ArrowArray) -> Result<StructArray> {
    // SAFETY: a bitwise copy whose release is cleared: arrow-rs reads the
    // buffers in place and never calls the host's release.
    let mut shallow: FFI_ArrowArray = unsafe { std::ptr::read(args) };
    let shallow_ptr = &mut shallow as *mut FFI_ArrowArray;
    unsafe { (*shallow_ptr).release = None };
    let data = unsafe { from_ffi(shallow, &*args_schema) }?;
    Ok(StructArray::from(data))
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
        let fields = arg_fields(args_schema)?;
        if !fields.is_empty() && args.is_null() {
            return Err(Error::invalid(format!("{}: {} argument types but no arguments", st.udf.name(), fields.len())));
        }
        let (coerced, ret) = st.plan(&fields)?;
        let rows = num_rows.max(0) as usize;
        let input = if fields.is_empty() { None } else { Some(borrow_args(args_schema, args)?) };
        let mut borrowed = Vec::new();
        let mut cols = Vec::with_capacity(coerced.len());
        if let Some(input) = &input {
            ranges(&input.to_data(), &mut borrowed);
            for (i, want) in coerced.iter().enumerate() {
                let col = input.column(i);
                cols.push(if col.data_type() == want.data_type() { col.clone() } else { cast(col, want.data_type())? });
            }
        }
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
