//! A plugin's functions as DataFusion functions: `ScalarUDF`, `AggregateUDF`
//! (row accumulator), `WindowUDF` (evaluate_all over a partition) and table
//! functions. Arguments cross as one Arrow struct array (function.h); the
//! function's identity (plugin name + uid) stays attached (gap G2).

use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StructArray};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema};
use arrow::ffi::{from_ffi, to_ffi};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::function::{AccumulatorArgs, PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Expr, PartitionEvaluator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TypeSignature, Volatility, WindowUDF, WindowUDFImpl,
};

use crate::convert::data_type_of_format;
use crate::error::{cstr, ErrorSlot, Result};
use crate::ffi::*;
use crate::identity::{intern, Identity};
use crate::plugin::Plugin;

/// One function of a plugin's catalogue, opened for a DataFusion session.
#[derive(Debug)]
pub enum PluginFunction {
    Scalar(ScalarUDF),
    Aggregate(AggregateUDF),
    Window(WindowUDF),
    Table(String, Arc<QlinkTableFunction>),
}

impl PluginFunction {
    /// The name it is registered (and called) by: the catalogue's.
    pub fn name(&self) -> &str {
        match self {
            PluginFunction::Scalar(f) => f.name(),
            PluginFunction::Aggregate(f) => f.name(),
            PluginFunction::Window(f) => f.name(),
            PluginFunction::Table(name, _) => name,
        }
    }
}

/// Every function the plugin's catalogue lists, opened, in catalogue
/// order. The first that fails to open is the error (naming it).
pub fn open_functions(plugin: &Arc<Plugin>) -> Result<Vec<PluginFunction>> {
    let mut out = Vec::new();
    for item in plugin.items() {
        out.push(match item.kind {
            QL_ITEM_SCALAR_FUNCTION => PluginFunction::Scalar(QlinkScalarUdf::open(plugin, &item.name)?),
            QL_ITEM_AGGREGATE_FUNCTION => PluginFunction::Aggregate(QlinkAggregateUdf::open(plugin, &item.name)?),
            QL_ITEM_WINDOW_FUNCTION => PluginFunction::Window(QlinkWindowUdf::open(plugin, &item.name)?),
            QL_ITEM_TABLE_FUNCTION => {
                PluginFunction::Table(item.name.clone(), Arc::new(QlinkTableFunction::open(plugin, &item.name)?))
            }
            _ => continue,
        });
    }
    Ok(out)
}

pub fn volatility_of(v: Volatility) -> i32 {
    match v {
        Volatility::Immutable => QL_IMMUTABLE,
        Volatility::Stable => QL_STABLE,
        Volatility::Volatile => QL_VOLATILE,
    }
}

fn df_volatility(v: i32) -> Volatility {
    match v {
        QL_STABLE => Volatility::Stable,
        QL_VOLATILE => Volatility::Volatile,
        _ => Volatility::Immutable,
    }
}

fn signature_of(s: &ql_signature) -> Signature {
    let vol = df_volatility(s.volatility);
    if s.n_args < 0 {
        return Signature::variadic_any(vol);
    }
    if s.n_args == 0 {
        return Signature::new(TypeSignature::Nullary, vol);
    }
    if s.arg_formats.is_null() {
        return Signature::any(s.n_args as usize, vol);
    }
    let mut types = Vec::new();
    for i in 0..s.n_args as usize {
        // SAFETY: n_args format strings.
        let f = cstr(unsafe { *s.arg_formats.add(i) });
        match data_type_of_format(&f) {
            Some(t) => types.push(t),
            None => return Signature::any(s.n_args as usize, vol),
        }
    }
    if types.is_empty() {
        return Signature::new(TypeSignature::Nullary, vol);
    }
    Signature::exact(types, vol)
}

fn arrow_err(e: arrow::error::ArrowError) -> DataFusionError {
    DataFusionError::ArrowError(Box::new(e), None)
}

/// A struct schema with one child per argument field.
fn args_schema(fields: &[FieldRef]) -> Result<ArrowSchema> {
    ArrowSchema::try_from(DataType::Struct(Fields::from(fields.to_vec()))).map_err(arrow_err)
}

/// Arguments as one struct array (zero-copy export).
fn args_array(fields: &[FieldRef], arrays: Vec<ArrayRef>, num_rows: usize) -> Result<ArrowArray> {
    let sa = if arrays.is_empty() {
        StructArray::new_empty_fields(num_rows, None)
    } else {
        StructArray::try_new(Fields::from(fields.to_vec()), arrays, None).map_err(arrow_err)?
    };
    let (a, _) = to_ffi(&sa.to_data()).map_err(arrow_err)?;
    Ok(a)
}

/// Import an array `plugin` filled (it keeps the plugin loaded while alive).
fn import_array(mut out: ArrowArray, dt: &DataType, plugin: &Arc<Plugin>) -> Result<ArrayRef> {
    let schema = ArrowSchema::try_from(dt).map_err(arrow_err)?;
    crate::plugin::keep_loaded(&mut out, plugin);
    let out = std::mem::replace(&mut out, ArrowArray::empty());
    // SAFETY: the callee filled `out` with an array of type `dt`.
    let data = unsafe { from_ffi(out, &schema) }.map_err(arrow_err)?;
    Ok(arrow::array::make_array(data))
}

fn return_type_via(
    plugin: &Plugin,
    name: &str,
    f: impl FnOnce(*const ArrowSchema, *mut ArrowSchema, *mut ql_error) -> i32,
    arg_types: &[DataType],
) -> Result<DataType> {
    let fields: Vec<FieldRef> =
        arg_types.iter().enumerate().map(|(i, t)| Arc::new(Field::new(format!("arg{i}"), t.clone(), true))).collect();
    let args = args_schema(&fields)?;
    let mut out = ArrowSchema::empty();
    let mut err = ErrorSlot::new();
    let st = {
        let _g = plugin.enter();
        f(&args, &mut out, err.ptr())
    };
    err.check_with(st, || format!("{name}: return_type"))?;
    DataType::try_from(&out).map_err(arrow_err)
}

// ------------------------------------------------------------ scalar UDF

pub struct QlinkScalarUdf {
    raw: Box<ql_scalar_function>,
    plugin: Arc<Plugin>,
    name: String,
    signature: Signature,
    uid: u64,
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
        Ok(ScalarUDF::new_from_impl(QlinkScalarUdf {
            raw: Box::new(raw),
            plugin: Arc::clone(plugin),
            name: name.to_string(),
            signature,
            uid,
        }))
    }

    pub fn identity(&self, registered_as: &str) -> Identity {
        Identity {
            origin: QL_ORIGIN_USER,
            kind: QL_FUNCTION_SCALAR,
            name: intern(registered_as),
            library: Some(intern(self.plugin.name())),
            uid: self.uid,
        }
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
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let invoke = self.raw.invoke.ok_or_else(|| DataFusionError::Execution(format!("{}: invoke is NULL", self.name)))?;
        let n = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let fields: Vec<FieldRef> = args
            .arg_fields
            .iter()
            .enumerate()
            .map(|(i, f)| Arc::new(Field::new(format!("arg{i}"), f.data_type().clone(), true)))
            .collect();
        let schema = args_schema(&fields)?;
        let array = args_array(&fields, arrays, n)?;
        let mut out = ArrowArray::empty();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            unsafe { invoke(&*self.raw, &schema, &array, n as i64, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("{}: invoke", self.name))?;
        Ok(ColumnarValue::Array(import_array(out, args.return_field.data_type(), &self.plugin)?))
    }
}

// ------------------------------------------------------------ aggregate

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
        Ok(AggregateUDF::new_from_impl(QlinkAggregateUdf {
            raw: Arc::new(RawAggregate { raw: Box::new(raw), plugin: Arc::clone(plugin) }),
            name: name.to_string(),
            signature,
        }))
    }

    pub fn identity(&self, registered_as: &str) -> Identity {
        Identity {
            origin: QL_ORIGIN_USER,
            kind: QL_FUNCTION_AGGREGATE,
            name: intern(registered_as),
            library: Some(intern(self.raw.plugin.name())),
            uid: self.raw.raw.id.uid,
        }
    }

    fn state_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let ss = self.raw.raw.state_schema.ok_or_else(|| DataFusionError::Plan(format!("{}: state_schema is NULL", self.name)))?;
        let me: *const ql_aggregate_function = &*self.raw.raw;
        return_type_via(&self.raw.plugin, &self.name, |a, o, e| unsafe { ss(me, a, o, e) }, arg_types)
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
    fn state_fields(&self, args: datafusion::logical_expr::function::StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let types: Vec<DataType> = args.input_fields.iter().map(|f| f.data_type().clone()).collect();
        match self.state_type(&types)? {
            DataType::Struct(fields) => Ok(fields
                .iter()
                .map(|f| Arc::new(Field::new(format!("{}[{}]", args.name, f.name()), f.data_type().clone(), true)))
                .collect()),
            other => Err(DataFusionError::Plan(format!("{}: state schema must be a struct, got {other}", self.name))),
        }
    }
    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let new = self.raw.raw.accumulator_new.ok_or_else(|| DataFusionError::Plan(format!("{}: accumulator_new is NULL", self.name)))?;
        let fields: Vec<FieldRef> = acc_args
            .expr_fields
            .iter()
            .enumerate()
            .map(|(i, f)| Arc::new(Field::new(format!("arg{i}"), f.data_type().clone(), true)))
            .collect();
        let schema = args_schema(&fields)?;
        let mut acc: ql_accumulator = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.raw.plugin.enter();
            unsafe { new(&*self.raw.raw, &schema, &mut acc, err.ptr()) }
        };
        err.check_with(st, || format!("{}: accumulator_new", self.name))?;
        let types: Vec<DataType> = fields.iter().map(|f| f.data_type().clone()).collect();
        let state = match self.state_type(&types)? {
            DataType::Struct(f) => f,
            other => return Err(DataFusionError::Plan(format!("{}: state schema must be a struct, got {other}", self.name))),
        };
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

// --------------------------------------------------------------- window

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
        Ok(WindowUDF::new_from_impl(QlinkWindowUdf {
            raw: Arc::new(RawWindow { raw: Box::new(raw), plugin: Arc::clone(plugin) }),
            name: name.to_string(),
            signature,
        }))
    }

    pub fn identity(&self, registered_as: &str) -> Identity {
        Identity {
            origin: QL_ORIGIN_USER,
            kind: QL_FUNCTION_WINDOW,
            name: intern(registered_as),
            library: Some(intern(self.raw.plugin.name())),
            uid: self.raw.raw.id.uid,
        }
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

// ------------------------------------------------------- table functions

pub struct QlinkTableFunction {
    raw: Box<ql_table_function>,
    plugin: Arc<Plugin>,
    name: String,
}
unsafe impl Send for QlinkTableFunction {}
unsafe impl Sync for QlinkTableFunction {}
impl std::fmt::Debug for QlinkTableFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QlinkTableFunction({})", self.name)
    }
}
impl Drop for QlinkTableFunction {
    fn drop(&mut self) {
        if let Some(r) = self.raw.release {
            let _g = self.plugin.enter();
            unsafe { r(&mut *self.raw) };
        }
    }
}

impl QlinkTableFunction {
    pub fn open(plugin: &Arc<Plugin>, name: &str) -> Result<QlinkTableFunction> {
        let open = plugin
            .descriptor()
            .table_function_open
            .ok_or_else(|| DataFusionError::Plan(format!("plugin {} offers no table functions", plugin.name())))?;
        let c = CString::new(name).unwrap_or_default();
        let mut raw: ql_table_function = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = plugin.enter();
            unsafe { open(plugin.descriptor(), c.as_ptr(), &mut raw, err.ptr()) }
        };
        err.check_with(st, || format!("opening table function {}/{name}", plugin.name()))?;
        Ok(QlinkTableFunction { raw: Box::new(raw), plugin: Arc::clone(plugin), name: name.to_string() })
    }
}

impl QlinkTableFunction {
    /// Call the function with `args` in the session `source` stands for:
    /// the provider it returns, remembering the call (so its scans can be
    /// rebuilt on a worker).
    pub fn call_in(&self, args: &[Expr], source: crate::services::SessionSource) -> Result<crate::table::QlinkTableProvider> {
        let call = self.raw.call.ok_or_else(|| DataFusionError::Plan(format!("{}: call is NULL", self.name)))?;
        let empty = Arc::new(Schema::empty());
        let refs: Vec<&Expr> = args.iter().collect();
        let list = crate::expr::FilterList::new(&empty, &refs)?;
        let raw = list.raw();
        let view = crate::services::SessionView::new(source);
        let mut out: ql_table_provider = zeroed();
        let mut err = ErrorSlot::new();
        let st = {
            let _g = self.plugin.enter();
            unsafe { call(&*self.raw, &view.raw, &raw, &mut out, err.ptr()) }
        };
        err.check_with(st, || format!("table function {}", self.name))?;
        let origin = crate::table::TableOrigin::Function { function: self.name.clone(), args: args.to_vec() };
        Ok(crate::table::QlinkTableProvider::from_raw(out, Arc::clone(&self.plugin), &self.name)?.with_origin(origin))
    }
}

impl TableFunctionImpl for QlinkTableFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let source = crate::services::SessionSource::Session(args.session());
        Ok(Arc::new(self.call_in(args.exprs(), source)?))
    }
}
