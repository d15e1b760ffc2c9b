// SPDX-License-Identifier: Apache-2.0
//! What the SDK's scalar, aggregate and window functions share (udf.rs,
//! udaf.rs, udwf.rs): the signature declared to the host, the argument
//! fields and columns read from the host's borrowed Arrow C structs and
//! coerced by DataFusion's rules for the function's signature, the return
//! field written back, and results that never point into borrowed buffers.

use std::ffi::CString;
use std::sync::Arc;

use arrow::array::{make_array, Array, ArrayRef, MutableArrayData, StructArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Fields};
use arrow::ffi::{from_ffi_and_data_type, FFI_ArrowArray, FFI_ArrowSchema};
use datafusion::logical_expr::type_coercion::functions::{fields_with_udf, UDFCoercionExt};
use datafusion::logical_expr::{Signature, TypeSignature, Volatility};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use qlink_sys::*;

use crate::error::{Error, Result};

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

/// The struct type of the arguments the host passed (`args`, a struct
/// schema; NULL is no arguments), parsed once per call: [`arg_columns`]
/// reads the arrays with it.
pub fn arg_type(args: *const ArrowSchema) -> Result<DataType> {
    if args.is_null() {
        return Ok(DataType::Struct(Fields::empty()));
    }
    // SAFETY: borrowed for the call; arrow-rs reads it without taking it.
    match DataType::try_from(unsafe { &*args })? {
        dt @ DataType::Struct(_) => Ok(dt),
        other => Err(Error::invalid(format!("function arguments must be a struct schema, not {other}"))),
    }
}

/// The fields of an argument struct type from [`arg_type`].
pub fn fields_of(args: &DataType) -> &[FieldRef] {
    match args {
        DataType::Struct(fields) => fields,
        _ => &[],
    }
}

/// The argument fields of a struct schema the host passed.
pub fn arg_fields(args: *const ArrowSchema) -> Result<Vec<FieldRef>> {
    Ok(fields_of(&arg_type(args)?).to_vec())
}

/// `fields` coerced to the types `f`'s signature takes (DataFusion's own
/// rules); QL_EINVAL prefixed with the function's name when it takes none.
pub fn coerce<F: UDFCoercionExt>(fields: &[FieldRef], f: &F) -> Result<Vec<FieldRef>> {
    fields_with_udf(fields, f).map_err(|e| Error::invalid(format!("{}: {}", f.name(), Error::from(e).message)))
}

/// The return field `ret` written to `out` (owned by the caller) as the
/// field `name`: nullable, with `ret`'s metadata (an Arrow extension type).
///
/// # Safety
/// `out` is valid for a write.
pub unsafe fn write_return_field(name: &str, ret: &FieldRef, out: *mut ArrowSchema) -> Result<()> {
    let field = Field::new(name, ret.data_type().clone(), true).with_metadata(ret.metadata().clone());
    std::ptr::write(out, FFI_ArrowSchema::try_from(&field)?);
    Ok(())
}

/// A column expression per argument field, in order (what DataFusion's
/// accumulator and evaluator factories take to name their inputs).
pub fn column_exprs(fields: &[FieldRef]) -> Vec<Arc<dyn PhysicalExpr>> {
    fields.iter().enumerate().map(|(i, f)| Arc::new(Column::new(f.name(), i)) as Arc<dyn PhysicalExpr>).collect()
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

/// The host's borrowed struct array of type `input` (from [`arg_type`]),
/// read in place (it is not released here: the host still owns it).
pub fn borrow_args(input: &DataType, args: *const ArrowArray) -> Result<StructArray> {
    // SAFETY: a bitwise copy whose release is cleared: arrow-rs reads the
    // buffers in place and never calls the host's release.
    let mut shallow: FFI_ArrowArray = unsafe { std::ptr::read(args) };
    let shallow_ptr = &mut shallow as *mut FFI_ArrowArray;
    unsafe { (*shallow_ptr).release = None };
    let data = unsafe { from_ffi_and_data_type(shallow, input.clone()) }?;
    Ok(StructArray::from(data))
}

/// The columns of the host's borrowed struct array `args` (of type
/// `input`, from [`arg_type`]), each cast to its field in `want`, read in place: the ranges
/// of the buffers they borrow are appended to `borrowed` (see [`detach`]).
/// No columns wanted reads nothing. QL_EINVAL naming `what` when `args` is
/// NULL or has another number of columns.
pub fn arg_columns(
    what: &str,
    input: &DataType,
    args: *const ArrowArray,
    want: &[FieldRef],
    borrowed: &mut Vec<(usize, usize)>,
) -> Result<Vec<ArrayRef>> {
    if want.is_empty() {
        return Ok(Vec::new());
    }
    if args.is_null() {
        return Err(Error::invalid(format!("{what}: {} columns expected, but no array was passed", want.len())));
    }
    let input = borrow_args(input, args)?;
    if input.num_columns() != want.len() {
        return Err(Error::invalid(format!("{what}: {} columns, expected {}", input.num_columns(), want.len())));
    }
    ranges(&input.to_data(), borrowed);
    want.iter()
        .enumerate()
        .map(|(i, w)| {
            let col = input.column(i);
            Ok(if col.data_type() == w.data_type() { col.clone() } else { cast(col, w.data_type())? })
        })
        .collect()
}
