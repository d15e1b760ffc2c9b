// SPDX-License-Identifier: Apache-2.0
//! The SDK through the ABI alone, as a host calls it: a plugin defined here
//! with `export_plugin!`, its `qlink_plugin_init` called directly, and every
//! object it offers used through the C structs, with exact answers. Hosts
//! load the real plugins in tests/engines.

use std::ffi::{CStr, CString};
use std::sync::Arc;

use arrow::array::{Array, Int64Array, StructArray};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::ffi::{to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{MemTable, MemorySchemaProvider, SchemaProvider, TableProvider};
use datafusion::common::cast::as_int64_array;
use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use qlink_plugin::planner::{Answer, PlanContext, Planner};
use qlink_plugin::sys::*;
use qlink_plugin::{export_plugin, option, Error, Plugin};

fn numbers(count: i64) -> Arc<dyn TableProvider> {
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false), Field::new("m", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from_iter_values(1..=count)), Arc::new(Int64Array::from_iter_values((1..=count).map(|v| -v)))],
    )
    .unwrap();
    Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())
}

/// A SORT with a limit at the root, planned as one DataFusion SortExec over
/// the host's plan of its input.
struct FirstRows;

impl Planner for FirstRows {
    fn interest(&self) -> Vec<i32> {
        vec![QL_NODE_SORT]
    }
    fn plan(&self, ctx: &PlanContext<'_>) -> qlink_plugin::Result<Answer> {
        let node = ctx.node(ctx.root())?;
        let (QL_NODE_SORT, Some(k), &[input]) = (node.kind(), node.fetch(), node.inputs()) else {
            return Ok(Answer::Decline);
        };
        let keys =
            node.exprs().iter().map(|&e| ctx.physical_sort_expr(&node, &ctx.sort_expr(e)?)).collect::<qlink_plugin::Result<Vec<_>>>()?;
        let child = ctx.plan_physical(input)?;
        let sort = SortExec::new(LexOrdering::new(keys).unwrap(), Arc::new(CoalescePartitionsExec::new(child))).with_fetch(Some(k));
        Ok(Answer::Physical { node: node.id, plan: Arc::new(sort) })
    }
}

fn plugin() -> Plugin {
    let doubled = create_udf(
        "doubled",
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let a = ColumnarValue::values_to_arrays(args)?;
            let x = as_int64_array(&a[0])?;
            Ok(ColumnarValue::Array(Arc::new(x.iter().map(|v| v.map(|v| v * 2)).collect::<Int64Array>())))
        }),
    );
    Plugin::new("qlink_sdk_test", "1.2.3")
        .description("the SDK's own test plugin")
        .table_with_options("numbers", "1..=count", vec![option("count", "rows").required()], |o, _| {
            let v = o.require("count")?;
            let n: i64 = v.parse().map_err(|_| Error::invalid(format!("count {v:?} is not an integer")))?;
            Ok(numbers(n))
        })
        .table_with_options("explodes", "panics when opened", vec![], |_, _| panic!("boom"))
        .schema_with_options("pair", "two tables, the second of `count` rows", vec![option("count", "rows").required()], |o, _| {
            let v = o.require("count")?;
            let n: i64 = v.parse().map_err(|_| Error::invalid(format!("count {v:?} is not an integer")))?;
            let schema = MemorySchemaProvider::new();
            schema.register_table("two".into(), numbers(2))?;
            schema.register_table("many".into(), numbers(n))?;
            Ok(Arc::new(schema))
        })
        .planner("first_rows", "ORDER BY ... LIMIT k as one SortExec", Arc::new(FirstRows))
        .scalar_udf(doubled)
        .aggregate_udf(datafusion::functions_aggregate::sum::sum_udaf())
        .aggregate_udf(datafusion::functions_aggregate::array_agg::array_agg_udaf())
        .window_udf(datafusion::functions_window::lead_lag::lag_udwf())
        .window_udf(datafusion::functions_window::rank::rank_udwf())
}

export_plugin!(plugin);

fn load() -> ql_plugin {
    let mut p: ql_plugin = zeroed();
    let mut err = ql_error::new();
    let rc = unsafe { qlink_plugin_init(QL_ABI_VERSION_0_1, &mut p, &mut err) };
    assert_eq!(rc, QL_OK);
    p
}

fn message(err: &mut ql_error) -> String {
    let m = unsafe { CStr::from_ptr(err.message) }.to_string_lossy().into_owned();
    unsafe { err.release.unwrap()(err) };
    m
}

fn options(pairs: &[(&str, &str)]) -> (Vec<CString>, Vec<CString>, Vec<*const i8>, Vec<*const i8>) {
    let k: Vec<CString> = pairs.iter().map(|(k, _)| CString::new(*k).unwrap()).collect();
    let v: Vec<CString> = pairs.iter().map(|(_, v)| CString::new(*v).unwrap()).collect();
    let kp = k.iter().map(|c| c.as_ptr()).collect();
    let vp = v.iter().map(|c| c.as_ptr()).collect();
    (k, v, kp, vp)
}

fn open(p: &ql_plugin, name: &str, pairs: &[(&str, &str)]) -> Result<ql_table_provider, (i32, String)> {
    let (_k, _v, kp, vp) = options(pairs);
    let o = ql_options { count: pairs.len() as i64, keys: kp.as_ptr(), values: vp.as_ptr() };
    let n = CString::new(name).unwrap();
    let mut t: ql_table_provider = zeroed();
    let mut err = ql_error::new();
    let rc = unsafe { p.table_provider_open.unwrap()(p, n.as_ptr(), &o, std::ptr::null(), &mut t, &mut err) };
    if rc == QL_OK {
        Ok(t)
    } else {
        Err((rc, message(&mut err)))
    }
}

#[test]
fn refuses_other_abi_versions_naming_the_one_it_serves() {
    let mut p: ql_plugin = zeroed();
    let mut err = ql_error::new();
    let rc = unsafe { qlink_plugin_init(9, &mut p, &mut err) };
    assert_eq!(rc, QL_EVERSION);
    assert_eq!(message(&mut err), "this plugin serves qlink ABI 0.1 only, not 0.9");
}

#[test]
fn the_descriptor_lists_every_item() {
    let p = load();
    assert_eq!(p.magic, QL_PLUGIN_MAGIC);
    assert_eq!(unsafe { CStr::from_ptr(p.name) }.to_str().unwrap(), "qlink_sdk_test");
    assert_eq!(unsafe { CStr::from_ptr(p.version) }.to_str().unwrap(), "1.2.3");
    let items: Vec<(i32, String, i32)> = (0..p.n_items as usize)
        .map(|i| {
            let it = unsafe { &*p.items.add(i) };
            (it.kind, unsafe { CStr::from_ptr(it.name) }.to_string_lossy().into_owned(), it.n_options)
        })
        .collect();
    assert_eq!(
        items,
        vec![
            (QL_ITEM_TABLE_PROVIDER, "numbers".into(), 1),
            (QL_ITEM_TABLE_PROVIDER, "explodes".into(), 0),
            (QL_ITEM_SCHEMA_PROVIDER, "pair".into(), 1),
            (QL_ITEM_PLANNER, "first_rows".into(), 0),
            (QL_ITEM_SCALAR_FUNCTION, "doubled".into(), 0),
            (QL_ITEM_AGGREGATE_FUNCTION, "sum".into(), 0),
            (QL_ITEM_AGGREGATE_FUNCTION, "array_agg".into(), 0),
            (QL_ITEM_WINDOW_FUNCTION, "lag".into(), 0),
            (QL_ITEM_WINDOW_FUNCTION, "rank".into(), 0)
        ]
    );
    assert!(p.aggregate_function_open.is_some() && p.window_function_open.is_some() && p.planner_open.is_some());
    assert!(p.schema_provider_open.is_some());
}

#[test]
fn options_are_checked_before_the_factory_runs() {
    let p = load();
    assert_eq!(open(&p, "numbers", &[]).err().unwrap(), (QL_EINVAL, "table 'numbers' needs option 'count'".into()));
    assert_eq!(
        open(&p, "numbers", &[("count", "3"), ("colour", "red")]).err().unwrap(),
        (QL_EINVAL, "table 'numbers' has no option 'colour' (it takes: count)".into())
    );
    assert_eq!(open(&p, "numbers", &[("count", "x")]).err().unwrap(), (QL_EINVAL, "count \"x\" is not an integer".into()));
    assert_eq!(open(&p, "nope", &[]).err().unwrap(), (QL_ENOTFOUND, "no table 'nope' in qlink_sdk_test".into()));
}

#[test]
fn a_panic_becomes_an_internal_error() {
    let p = load();
    let (rc, msg) = open(&p, "explodes", &[]).err().unwrap();
    assert_eq!(rc, QL_EINTERNAL);
    assert_eq!(msg, "panic in a Rust plugin (table_provider_open): boom");
}

#[test]
fn a_scan_projects_limits_and_streams_exact_rows() {
    let p = load();
    let t = open(&p, "numbers", &[("count", "5")]).unwrap();
    let mut err = ql_error::new();
    let mut schema = FFI_ArrowSchema::empty();
    assert_eq!(unsafe { t.get_schema.unwrap()(&t, &mut schema as *mut _, &mut err) }, QL_OK);
    let s = Schema::try_from(&schema).unwrap();
    assert_eq!(s.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["n", "m"]);

    let projection = [1i32];
    let mut args: ql_scan_args = zeroed();
    args.struct_size = std::mem::size_of::<ql_scan_args>() as u32;
    args.n_projection = 1;
    args.projection = projection.as_ptr();
    args.limit = 3;
    let mut plan: ql_execution_plan = zeroed();
    assert_eq!(unsafe { t.scan.unwrap()(&t, std::ptr::null(), &args, &mut plan, &mut err) }, QL_OK);
    let name = unsafe { CStr::from_ptr(plan.name.unwrap()(&plan)) }.to_str().unwrap().to_string();
    assert!(!name.is_empty());
    let mut props: ql_plan_properties = zeroed();
    assert_eq!(unsafe { plan.get_properties.unwrap()(&plan, &mut props, &mut err) }, QL_OK);
    let mut values = Vec::new();
    for part in 0..props.partition_count {
        let mut stream = FFI_ArrowArrayStream::empty();
        let out = &mut stream as *mut FFI_ArrowArrayStream;
        assert_eq!(unsafe { plan.execute.unwrap()(&plan, part, std::ptr::null(), out, &mut err) }, QL_OK);
        for batch in ArrowArrayStreamReader::try_new(stream).unwrap() {
            let b = batch.unwrap();
            assert_eq!(b.schema().field(0).name(), "m");
            values.extend(as_int64_array(b.column(0)).unwrap().values().iter().copied());
        }
    }
    values.sort();
    // The limit reached MemTable's scan, which takes it as the hint
    // DataFusion defines it to be; hosts apply LIMIT themselves.
    assert_eq!(values, [-5, -4, -3, -2, -1]);
    let mut bad = FFI_ArrowArrayStream::empty();
    let rc = unsafe { plan.execute.unwrap()(&plan, 99, std::ptr::null(), &mut bad as *mut _, &mut err) };
    assert_eq!((rc, message(&mut err)), (QL_EINVAL, format!("partition 99 of a plan with {}", props.partition_count)));
    unsafe {
        plan.release.unwrap()(&mut plan);
        let mut t = t;
        t.release.unwrap()(&mut t);
    }
}

#[test]
fn a_scalar_function_coerces_and_never_returns_borrowed_buffers() {
    let p = load();
    let name = CString::new("doubled").unwrap();
    let mut f: ql_scalar_function = zeroed();
    let mut err = ql_error::new();
    assert_eq!(unsafe { p.scalar_function_open.unwrap()(&p, name.as_ptr(), &mut f, &mut err) }, QL_OK);
    assert_eq!(f.signature.n_args, 1);
    assert_eq!(unsafe { CStr::from_ptr(*f.signature.arg_formats) }.to_str().unwrap(), "l");
    assert_eq!(f.id.origin, QL_ORIGIN_USER);
    assert_eq!(unsafe { CStr::from_ptr(f.id.library) }.to_str().unwrap(), "qlink_sdk_test");

    // Int32 arguments: coerced to the UDF's Int64.
    let fields = Fields::from(vec![Field::new("a", DataType::Int32, true)]);
    let input =
        StructArray::try_new(fields.clone(), vec![Arc::new(arrow::array::Int32Array::from(vec![Some(4), None, Some(-7)]))], None).unwrap();
    let args_schema = FFI_ArrowSchema::try_from(DataType::Struct(fields)).unwrap();
    let (args, _) = to_ffi(&input.to_data()).unwrap();
    let mut ret = FFI_ArrowSchema::empty();
    let sp = &args_schema as *const FFI_ArrowSchema;
    assert_eq!(unsafe { f.return_type.unwrap()(&f, sp, &mut ret as *mut _, &mut err) }, QL_OK);
    assert_eq!(DataType::try_from(&ret).unwrap(), DataType::Int64);
    let mut out = FFI_ArrowArray::empty();
    let rc = unsafe { f.invoke.unwrap()(&f, sp, &args as *const _, 3, &mut out as *mut _, &mut err) };
    assert_eq!(rc, QL_OK);
    drop(args); // the host frees its arguments first: the result must not need them
    let data = unsafe { arrow::ffi::from_ffi(out, &ret) }.unwrap();
    let got = Int64Array::from(data);
    assert_eq!(got.iter().collect::<Vec<_>>(), [Some(8), None, Some(-14)]);

    // A string argument cannot be coerced: the UDF's own error, as QL_EINVAL.
    let fields = Fields::from(vec![Field::new("a", DataType::Utf8, true)]);
    let s = FFI_ArrowSchema::try_from(DataType::Struct(fields)).unwrap();
    let mut ret2 = FFI_ArrowSchema::empty();
    let rc = unsafe { f.return_type.unwrap()(&f, &s as *const _, &mut ret2 as *mut _, &mut err) };
    assert_eq!(rc, QL_EINVAL);
    let m = message(&mut err);
    assert!(m.starts_with("doubled: "), "{m}");
    unsafe { f.release.unwrap()(&mut f) };
    let _ = got.len();
}

/// One accumulator's call, checked: QL_OK or the message.
fn ok(rc: i32, err: &mut ql_error) {
    if rc != QL_OK {
        panic!("{rc}: {}", message(err));
    }
}

fn open_aggregate(p: &ql_plugin, name: &str) -> ql_aggregate_function {
    let name = CString::new(name).unwrap();
    let mut f: ql_aggregate_function = zeroed();
    let mut err = ql_error::new();
    ok(unsafe { p.aggregate_function_open.unwrap()(p, name.as_ptr(), &mut f, &mut err) }, &mut err);
    f
}

/// An Int32 argument column as the host passes it: a struct array and its schema.
fn int32_args(values: Vec<Option<i32>>) -> (FFI_ArrowSchema, FFI_ArrowArray) {
    let fields = Fields::from(vec![Field::new("a", DataType::Int32, true)]);
    let input = StructArray::try_new(fields.clone(), vec![Arc::new(arrow::array::Int32Array::from(values))], None).unwrap();
    (FFI_ArrowSchema::try_from(DataType::Struct(fields)).unwrap(), to_ffi(&input.to_data()).unwrap().0)
}

#[test]
fn an_aggregate_coerces_merges_states_and_evaluates() {
    let p = load();
    let mut f = open_aggregate(&p, "sum");
    assert_eq!(f.id.kind, QL_FUNCTION_AGGREGATE);
    assert_eq!(unsafe { CStr::from_ptr(f.id.library) }.to_str().unwrap(), "qlink_sdk_test");
    let mut err = ql_error::new();
    let (schema, _) = int32_args(vec![]);
    let sp = &schema as *const FFI_ArrowSchema;
    let mut ret = FFI_ArrowSchema::empty();
    ok(unsafe { f.return_type.unwrap()(&f, sp, &mut ret as *mut _, &mut err) }, &mut err);
    assert_eq!(DataType::try_from(&ret).unwrap(), DataType::Int64); // sum(Int32) is Int64
    let mut state_schema = FFI_ArrowSchema::empty();
    ok(unsafe { f.state_schema.unwrap()(&f, sp, &mut state_schema as *mut _, &mut err) }, &mut err);
    let DataType::Struct(state_fields) = DataType::try_from(&state_schema).unwrap() else { panic!("state is not a struct") };
    assert_eq!(state_fields.iter().map(|f| f.data_type().clone()).collect::<Vec<_>>(), [DataType::Int64]);

    // two groups' accumulators: [1, 2, NULL, 4] and [10]; the second's state merged into the first
    let new_acc = || {
        let mut a: ql_accumulator = zeroed();
        let mut err = ql_error::new();
        ok(unsafe { f.accumulator_new.unwrap()(&f, sp, &mut a, &mut err) }, &mut err);
        a
    };
    let (mut a, mut b) = (new_acc(), new_acc());
    for (acc, values) in [(&mut a, vec![Some(1), Some(2), None, Some(4)]), (&mut b, vec![Some(10)])] {
        let (_, array) = int32_args(values);
        ok(unsafe { acc.update.unwrap()(acc, &array as *const _, &mut err) }, &mut err);
    }
    let mut state = FFI_ArrowArray::empty();
    ok(unsafe { b.state.unwrap()(&mut b, &mut state as *mut _, &mut err) }, &mut err);
    ok(unsafe { a.merge.unwrap()(&mut a, &state as *const _, &mut err) }, &mut err);
    drop(state);
    let mut out = FFI_ArrowArray::empty();
    ok(unsafe { a.evaluate.unwrap()(&mut a, &mut out as *mut _, &mut err) }, &mut err);
    let got = Int64Array::from(unsafe { arrow::ffi::from_ffi(out, &ret) }.unwrap());
    assert_eq!(got.iter().collect::<Vec<_>>(), [Some(17)]);
    assert!(unsafe { a.size.unwrap()(&a) } > 0);
    unsafe {
        a.release.unwrap()(&mut a);
        b.release.unwrap()(&mut b);
    }

    // a string argument: sum's own error, as QL_EINVAL naming it
    let fields = Fields::from(vec![Field::new("a", DataType::Utf8, true)]);
    let s = FFI_ArrowSchema::try_from(DataType::Struct(fields)).unwrap();
    let mut a: ql_accumulator = zeroed();
    let rc = unsafe { f.accumulator_new.unwrap()(&f, &s as *const _, &mut a, &mut err) };
    assert_eq!(rc, QL_EINVAL);
    let m = message(&mut err);
    assert!(m.starts_with("sum: "), "{m}");
    unsafe { f.release.unwrap()(&mut f) };
}

#[test]
fn a_groups_accumulator_takes_every_group_at_once() {
    let p = load();
    let mut f = open_aggregate(&p, "sum");
    let mut err = ql_error::new();
    let (schema, _) = int32_args(vec![]);
    let sp = &schema as *const FFI_ArrowSchema;
    let new_groups = || {
        let mut g: ql_groups_accumulator = zeroed();
        let mut err = ql_error::new();
        ok(unsafe { f.groups_accumulator_new.unwrap()(&f, sp, &mut g, &mut err) }, &mut err);
        g
    };
    // Rows [1, 2, NULL, 4, 10] in groups [0, 2, 0, 2, 1] of 3; a second
    // accumulator's groups [5] and [7] merged into groups 1 and 0.
    let (mut a, mut b) = (new_groups(), new_groups());
    let (_, rows) = int32_args(vec![Some(1), Some(2), None, Some(4), Some(10)]);
    let idx = [0u32, 2, 0, 2, 1];
    ok(unsafe { a.update.unwrap()(&mut a, &rows, idx.as_ptr(), 3, &mut err) }, &mut err);
    let (_, rows) = int32_args(vec![Some(5), Some(7)]);
    ok(unsafe { b.update.unwrap()(&mut b, &rows, [0u32, 1].as_ptr(), 2, &mut err) }, &mut err);
    let mut state = FFI_ArrowArray::empty();
    ok(unsafe { b.state.unwrap()(&mut b, &mut state as *mut _, &mut err) }, &mut err);
    assert_eq!(state.len(), 2);
    ok(unsafe { a.merge.unwrap()(&mut a, &state as *const _, [1u32, 0].as_ptr(), 3, &mut err) }, &mut err);
    drop(state);
    assert!(unsafe { a.size.unwrap()(&a) } > 0);
    let mut out = FFI_ArrowArray::empty();
    ok(unsafe { a.evaluate.unwrap()(&mut a, &mut out as *mut _, &mut err) }, &mut err);
    let ret = FFI_ArrowSchema::try_from(DataType::Int64).unwrap();
    let got = Int64Array::from(unsafe { arrow::ffi::from_ffi(out, &ret) }.unwrap());
    assert_eq!(got.iter().collect::<Vec<_>>(), [Some(8), Some(15), Some(6)]);
    // A group index beyond the groups named is refused, not read.
    let (_, rows) = int32_args(vec![Some(1)]);
    let rc = unsafe { b.update.unwrap()(&mut b, &rows, [3u32].as_ptr(), 3, &mut err) };
    assert_eq!((rc, message(&mut err)), (QL_EINVAL, "sum: group index 3 of row 0 >= total_groups 3".to_string()));
    unsafe {
        a.release.unwrap()(&mut a);
        b.release.unwrap()(&mut b);
        f.release.unwrap()(&mut f);
    }
}

#[test]
fn an_accumulator_keeps_no_host_buffer_after_the_call() {
    let p = load();
    let mut f = open_aggregate(&p, "array_agg");
    let mut err = ql_error::new();
    let (schema, array) = int32_args(vec![Some(3), None, Some(5)]);
    let sp = &schema as *const FFI_ArrowSchema;
    let mut a: ql_accumulator = zeroed();
    ok(unsafe { f.accumulator_new.unwrap()(&f, sp, &mut a, &mut err) }, &mut err);
    ok(unsafe { a.update.unwrap()(&mut a, &array as *const _, &mut err) }, &mut err);
    drop(array); // the host frees its arguments after the call: array_agg kept a copy
    let mut ret = FFI_ArrowSchema::empty();
    ok(unsafe { f.return_type.unwrap()(&f, sp, &mut ret as *mut _, &mut err) }, &mut err);
    let mut out = FFI_ArrowArray::empty();
    ok(unsafe { a.evaluate.unwrap()(&mut a, &mut out as *mut _, &mut err) }, &mut err);
    let list = arrow::array::ListArray::from(unsafe { arrow::ffi::from_ffi(out, &ret) }.unwrap());
    let values = list.value(0);
    let values = values.as_any().downcast_ref::<arrow::array::Int32Array>().unwrap();
    assert_eq!(values.iter().collect::<Vec<_>>(), [Some(3), None, Some(5)]);
    unsafe {
        a.release.unwrap()(&mut a);
        f.release.unwrap()(&mut f);
    }
}

fn open_window(p: &ql_plugin, name: &str) -> ql_window_function {
    let name = CString::new(name).unwrap();
    let mut f: ql_window_function = zeroed();
    let mut err = ql_error::new();
    ok(unsafe { p.window_function_open.unwrap()(p, name.as_ptr(), &mut f, &mut err) }, &mut err);
    f
}

#[test]
fn a_window_function_evaluates_a_whole_partition() {
    let p = load();
    let mut f = open_window(&p, "lag");
    assert_eq!(f.id.kind, QL_FUNCTION_WINDOW);
    let mut err = ql_error::new();
    let (schema, array) = int32_args(vec![Some(5), None, Some(7), Some(8)]);
    let sp = &schema as *const FFI_ArrowSchema;
    let mut ret = FFI_ArrowSchema::empty();
    ok(unsafe { f.return_type.unwrap()(&f, sp, &mut ret, &mut err) }, &mut err);
    assert_eq!(DataType::try_from(&ret).unwrap(), DataType::Int32);
    let mut e: ql_partition_evaluator = zeroed();
    ok(unsafe { f.evaluator_new.unwrap()(&f, sp, &mut e, &mut err) }, &mut err);
    let mut out = FFI_ArrowArray::empty();
    ok(unsafe { e.evaluate_all.unwrap()(&mut e, &array, 4, &mut out, &mut err) }, &mut err);
    drop(array); // the host frees its arguments first: lag's shifted result must not need them
    let got = arrow::array::Int32Array::from(unsafe { arrow::ffi::from_ffi(out, &ret) }.unwrap());
    assert_eq!(got.iter().collect::<Vec<_>>(), [None, Some(5), None, Some(7)]);
    unsafe {
        e.release.unwrap()(&mut e);
        f.release.unwrap()(&mut f);
    }

    // RANK needs the ORDER BY peers, which a whole-partition call does not carry: refused, named
    let mut f = open_window(&p, "rank");
    let empty = FFI_ArrowSchema::try_from(DataType::Struct(Fields::empty())).unwrap();
    let mut e: ql_partition_evaluator = zeroed();
    let rc = unsafe { f.evaluator_new.unwrap()(&f, &empty, &mut e, &mut err) };
    assert_eq!(rc, QL_ENOTSUP);
    let m = message(&mut err);
    assert!(m.starts_with("rank: it needs the window frame or the ORDER BY peers' ranks"), "{m}");
    unsafe { f.release.unwrap()(&mut f) };
}

/// Every value of column `n` of `t`, over all partitions, sorted.
fn column_n(t: &ql_table_provider) -> Vec<i64> {
    let mut err = ql_error::new();
    let mut args: ql_scan_args = zeroed();
    args.struct_size = std::mem::size_of::<ql_scan_args>() as u32;
    args.n_projection = -1;
    args.limit = -1;
    let mut plan: ql_execution_plan = zeroed();
    ok(unsafe { t.scan.unwrap()(t, std::ptr::null(), &args, &mut plan, &mut err) }, &mut err);
    let mut props: ql_plan_properties = zeroed();
    ok(unsafe { plan.get_properties.unwrap()(&plan, &mut props, &mut err) }, &mut err);
    let mut values = Vec::new();
    for part in 0..props.partition_count {
        let mut stream = FFI_ArrowArrayStream::empty();
        ok(unsafe { plan.execute.unwrap()(&plan, part, std::ptr::null(), &mut stream as *mut _, &mut err) }, &mut err);
        for batch in ArrowArrayStreamReader::try_new(stream).unwrap() {
            values.extend(as_int64_array(batch.unwrap().column(0)).unwrap().values().iter().copied());
        }
    }
    unsafe { plan.release.unwrap()(&mut plan) };
    values.sort();
    values
}

#[test]
fn a_schema_lists_its_tables_and_opens_each_by_name() {
    let p = load();
    let (_k, _v, kp, vp) = options(&[("count", "4")]);
    let o = ql_options { count: 1, keys: kp.as_ptr(), values: vp.as_ptr() };
    let name = CString::new("pair").unwrap();
    let mut s: ql_schema_provider = zeroed();
    let mut err = ql_error::new();
    ok(unsafe { p.schema_provider_open.unwrap()(&p, name.as_ptr(), &o, std::ptr::null(), &mut s, &mut err) }, &mut err);
    let n = unsafe { s.table_count.unwrap()(&s) };
    let names: Vec<String> =
        (0..n).map(|i| unsafe { CStr::from_ptr(s.table_name.unwrap()(&s, i)) }.to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["many", "two"]);
    assert!(unsafe { s.table_name.unwrap()(&s, 2) }.is_null() && unsafe { s.table_name.unwrap()(&s, -1) }.is_null());
    for (table, want) in [("two", vec![1, 2]), ("many", vec![1, 2, 3, 4])] {
        let c = CString::new(table).unwrap();
        let mut t: ql_table_provider = zeroed();
        ok(unsafe { s.table.unwrap()(&s, c.as_ptr(), &mut t, &mut err) }, &mut err);
        assert_eq!(column_n(&t), want);
        unsafe { t.release.unwrap()(&mut t) };
    }
    let c = CString::new("three").unwrap();
    let mut t: ql_table_provider = zeroed();
    let rc = unsafe { s.table.unwrap()(&s, c.as_ptr(), &mut t, &mut err) };
    assert_eq!((rc, message(&mut err)), (QL_ENOTFOUND, "no table 'three' in schema qlink_sdk_test.pair".into()));
    unsafe { s.release.unwrap()(&mut s) };
    // options are checked as a table's are, naming the schema
    let mut s: ql_schema_provider = zeroed();
    let empty = ql_options { count: 0, keys: std::ptr::null(), values: std::ptr::null() };
    let rc = unsafe { p.schema_provider_open.unwrap()(&p, name.as_ptr(), &empty, std::ptr::null(), &mut s, &mut err) };
    assert_eq!((rc, message(&mut err)), (QL_EINVAL, "schema 'pair' needs option 'count'".into()));
    let other = CString::new("numbers").unwrap();
    let rc = unsafe { p.schema_provider_open.unwrap()(&p, other.as_ptr(), &o, std::ptr::null(), &mut s, &mut err) };
    assert_eq!((rc, message(&mut err)), (QL_ENOTFOUND, "no schema 'numbers' in qlink_sdk_test".into()));
}

/// A host's plan view of `SELECT * FROM numbers ORDER BY n DESC LIMIT 2`:
/// node 0 SORT (fetch 2) over node 1 TABLE_SCAN, both of schema (n, m).
struct View {
    _schema: Box<FFI_ArrowSchema>,
    _names: Vec<CString>,
    _ids: Vec<Box<[i32]>>,
    _nodes: Vec<ql_plan_node>,
    _exprs: Vec<ql_expr>,
    view: ql_plan_view,
}

fn sort_view(root: i32) -> View {
    let fields = vec![Field::new("n", DataType::Int64, false), Field::new("m", DataType::Int64, false)];
    let schema = Box::new(FFI_ArrowSchema::try_from(&Schema::new(fields)).unwrap());
    let names = vec![CString::new("n").unwrap(), CString::new("numbers").unwrap()];
    let ids: Vec<Box<[i32]>> = vec![Box::new([0]), Box::new([1]), Box::new([1])];
    let mut column: ql_expr = zeroed();
    column.kind = QL_EXPR_COLUMN;
    column.name = names[0].as_ptr();
    column.column_index = 0;
    column.filter = -1;
    let mut sort: ql_expr = zeroed();
    sort.kind = QL_EXPR_SORT;
    sort.flags = QL_SORT_DESC;
    sort.n_args = 1;
    sort.args = ids[0].as_ptr();
    sort.filter = -1;
    let exprs = vec![column, sort];
    let node = |kind: i32, fetch: i64| {
        let mut n: ql_plan_node = zeroed();
        n.kind = kind;
        n.schema = &*schema;
        n.condition = -1;
        n.n_projection = -1;
        n.fetch = fetch;
        n
    };
    let mut sort_node = node(QL_NODE_SORT, 2);
    sort_node.n_inputs = 1;
    sort_node.inputs = ids[1].as_ptr();
    sort_node.n_exprs = 1;
    sort_node.exprs = ids[2].as_ptr();
    let mut scan = node(QL_NODE_TABLE_SCAN, -1);
    scan.name = names[1].as_ptr();
    let nodes = vec![sort_node, scan];
    let mut view: ql_plan_view = zeroed();
    view.struct_size = std::mem::size_of::<ql_plan_view>() as u32;
    view.n_nodes = 2;
    view.n_exprs = 2;
    view.root = root;
    view.nodes = nodes.as_ptr();
    view.exprs = exprs.as_ptr();
    View { _schema: schema, _names: names, _ids: ids, _nodes: nodes, _exprs: exprs, view }
}

/// The host's physical planner: node 1 is a scan of `numbers` (the
/// ql_table_provider in private_data, NULL: it fails).
unsafe extern "C" fn fake_plan_physical(
    ctx: *const ql_planner_context,
    node: ql_node_id,
    out: *mut ql_execution_plan,
    err: *mut ql_error,
) -> i32 {
    let t = (*ctx).private_data as *const ql_table_provider;
    if t.is_null() || node != 1 {
        let m = CString::new(format!("the host cannot plan node {node}")).unwrap();
        (*err).status = QL_ENOTSUP;
        (*err).message = m.into_raw();
        (*err).release = Some(release_message);
        return QL_ENOTSUP;
    }
    scan_all(&*t, out)
}

unsafe extern "C" fn release_message(e: *mut ql_error) {
    drop(CString::from_raw((*e).message));
    (*e).release = None;
}

fn scan_all(t: &ql_table_provider, out: *mut ql_execution_plan) -> i32 {
    let mut args: ql_scan_args = zeroed();
    args.struct_size = std::mem::size_of::<ql_scan_args>() as u32;
    args.n_projection = -1;
    args.limit = -1;
    let mut err = ql_error::new();
    unsafe { t.scan.unwrap()(t, std::ptr::null(), &args, out, &mut err) }
}

/// Every row of partition 0 of `plan`, as (n, m).
fn rows_of(plan: &ql_execution_plan) -> Vec<(i64, i64)> {
    let mut err = ql_error::new();
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(unsafe { plan.execute.unwrap()(plan, 0, std::ptr::null(), &mut stream as *mut _, &mut err) }, QL_OK);
    let mut out = Vec::new();
    for b in ArrowArrayStreamReader::try_new(stream).unwrap() {
        let b = b.unwrap();
        let (n, m) = (as_int64_array(b.column(0)).unwrap(), as_int64_array(b.column(1)).unwrap());
        out.extend(n.values().iter().copied().zip(m.values().iter().copied()));
    }
    out
}

fn open_planner(p: &ql_plugin) -> ql_planner {
    let mut pl: ql_planner = zeroed();
    let mut err = ql_error::new();
    let n = CString::new("first_rows").unwrap();
    ok(unsafe { p.planner_open.unwrap()(p, n.as_ptr(), std::ptr::null(), &mut pl, &mut err) }, &mut err);
    pl
}

fn ask(pl: &ql_planner, view: &View, table: *const ql_table_provider) -> Result<ql_planner_result, (i32, String)> {
    let ctx = ql_planner_context {
        struct_size: std::mem::size_of::<ql_planner_context>() as u32,
        reserved_: 0,
        session: std::ptr::null(),
        plan: &view.view,
        plan_physical: Some(fake_plan_physical),
        private_data: table as *mut _,
    };
    let mut out: ql_planner_result = zeroed();
    let mut err = ql_error::new();
    let rc = unsafe { pl.plan.unwrap()(pl, &ctx, &mut out, &mut err) };
    if rc == QL_OK {
        Ok(out)
    } else {
        Err((rc, message(&mut err)))
    }
}

#[test]
fn a_planner_answers_with_its_plan_over_the_hosts_subtree() {
    let p = load();
    let mut pl = open_planner(&p);
    assert_eq!(pl.interest, 1u32 << QL_NODE_SORT);
    assert_eq!(pl.flags, QL_PLANNER_LAZY_VIEW);
    let t = open(&p, "numbers", &[("count", "5")]).unwrap();
    let view = sort_view(0);
    let mut answer = ask(&pl, &view, &t).unwrap();
    assert_eq!((answer.action, answer.node), (QL_PLANNER_PHYSICAL, 0));
    let plan = &mut answer.physical;
    assert_eq!(unsafe { CStr::from_ptr(plan.name.unwrap()(plan)) }.to_str().unwrap(), "SortExec(TopK)");
    let display = unsafe { CStr::from_ptr(plan.display.unwrap()(plan)) }.to_str().unwrap().to_string();
    assert!(
        display.starts_with("TopK(fetch=2), expr=[n@0 DESC NULLS LAST]") && display.contains(" <- CoalescePartitionsExec"),
        "{display}"
    );
    // The host's scan is the plan's one child, shown to the host.
    assert_eq!(unsafe { plan.child_count.unwrap()(plan) }, 1);
    let child = unsafe { plan.child.unwrap()(plan, 0) };
    assert_eq!(unsafe { CStr::from_ptr((*child).name.unwrap()(child)) }.to_str().unwrap(), "DataSourceExec");
    assert!(unsafe { plan.child.unwrap()(plan, 1) }.is_null());
    assert_eq!(rows_of(plan), [(5, -5), (4, -4)]);

    // New children from the host's optimizer (before it runs the plan: a
    // TopK's dynamic filter is the plan's own state): the plan runs over them.
    let mut again = ask(&pl, &view, &t).unwrap();
    let mut err = ql_error::new();
    let mut fresh: ql_execution_plan = zeroed();
    assert_eq!(scan_all(&t, &mut fresh), QL_OK);
    let mut replaced: ql_execution_plan = zeroed();
    let first = &again.physical;
    ok(unsafe { first.with_new_children.unwrap()(first, &mut fresh, 1, &mut replaced, &mut err) }, &mut err);
    assert_eq!(rows_of(&replaced), [(5, -5), (4, -4)]);
    unsafe { again.physical.release.unwrap()(&mut again.physical) };
    let mut two: [ql_execution_plan; 2] = [zeroed(), zeroed()];
    assert_eq!(scan_all(&t, &mut two[0]), QL_OK);
    assert_eq!(scan_all(&t, &mut two[1]), QL_OK);
    let mut none: ql_execution_plan = zeroed();
    let rc = unsafe { plan.with_new_children.unwrap()(plan, two.as_mut_ptr(), 2, &mut none, &mut err) };
    assert_eq!((rc, message(&mut err)), (QL_EINVAL, "2 new children for a plan with 1".to_string()));
    unsafe {
        replaced.release.unwrap()(&mut replaced);
        plan.release.unwrap()(plan);
        pl.release.unwrap()(&mut pl);
        let mut t = t;
        t.release.unwrap()(&mut t);
    }
}

#[test]
fn a_planner_declines_and_refuses_with_clear_errors() {
    let p = load();
    let mut pl = open_planner(&p);
    let t = open(&p, "numbers", &[("count", "5")]).unwrap();
    // A plan whose root is the scan: nothing to do.
    assert_eq!(ask(&pl, &sort_view(1), &t).unwrap().action, QL_PLANNER_DECLINE);
    // A root outside the view is an error, not a read out of bounds.
    assert_eq!(ask(&pl, &sort_view(7), &t).err(), Some((QL_EINVAL, "plan node 7 of a view with 2 nodes".to_string())));
    // The host's refusal to plan a subtree reaches the host as its error.
    assert_eq!(ask(&pl, &sort_view(0), std::ptr::null()).err(), Some((QL_ENOTSUP, "the host cannot plan node 1".to_string())));
    let n = CString::new("nope").unwrap();
    let mut err = ql_error::new();
    let mut other: ql_planner = zeroed();
    let rc = unsafe { p.planner_open.unwrap()(&p, n.as_ptr(), std::ptr::null(), &mut other, &mut err) };
    assert_eq!((rc, message(&mut err)), (QL_ENOTFOUND, "no planner 'nope' in qlink_sdk_test".to_string()));
    unsafe {
        pl.release.unwrap()(&mut pl);
        let mut t = t;
        t.release.unwrap()(&mut t);
    }
}
