// SPDX-License-Identifier: Apache-2.0
//! One or more tests per gap G1–G8 (docs/abi.md section 4), with real DataFusion and
//! real plugins (qlink_dftest and qlink_sample, built by build.rs), plus
//! planners written against the C ABI in this file.
use std::collections::HashSet;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use qlink_datafusion::error::cstr;
use qlink_datafusion::ffi::*;
use qlink_datafusion::metrics::ENUMERATIONS;
use qlink_datafusion::planner::{table_from_handle, InstalledPlanner, QlinkQueryPlanner};
use qlink_datafusion::services::{SessionSource, SessionView, TaskView};
use qlink_datafusion::QlinkSession;

const DFTEST: &str = qlink_sys::plugins::DFTEST;
const SAMPLE: &str = qlink_sys::plugins::SAMPLE;

// ------------------------------------------------------------- helpers

fn planner_ctx(planners: Vec<Arc<InstalledPlanner>>) -> SessionContext {
    let state = SessionStateBuilder::new().with_default_features().with_query_planner(Arc::new(QlinkQueryPlanner::new(planners))).build();
    SessionContext::new_with_state(state)
}

fn rust_planner(
    interest: u32,
    plan: unsafe extern "C" fn(*const ql_planner, *const ql_planner_context, *mut ql_planner_result, *mut ql_error) -> c_int,
    private: *mut c_void,
) -> Arc<InstalledPlanner> {
    let raw = ql_planner {
        struct_size: std::mem::size_of::<ql_planner>() as u32,
        interest,
        plan: Some(plan),
        release: None,
        private_data: private,
        flags: 0,
        reserved_: 0,
    };
    InstalledPlanner::new(raw, None, "test")
}

unsafe fn nodes(view: *const ql_plan_view) -> &'static [ql_plan_node] {
    std::slice::from_raw_parts((*view).nodes, (*view).n_nodes as usize)
}

unsafe fn exprs(view: *const ql_plan_view) -> &'static [ql_expr] {
    std::slice::from_raw_parts((*view).exprs, (*view).n_exprs as usize)
}

fn mem_table(rows: usize, batch: usize) -> (Arc<MemTable>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false), Field::new("x", DataType::Float64, false)]));
    let mut batches = Vec::new();
    let mut r = 0;
    while r < rows {
        let n = batch.min(rows - r);
        let k = Int64Array::from_iter_values((r..r + n).map(|i| (i % 7) as i64));
        let x = Float64Array::from_iter_values((r..r + n).map(|i| i as f64));
        batches.push(RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(k), Arc::new(x)]).unwrap());
        r += n;
    }
    (Arc::new(MemTable::try_new(schema, vec![batches.clone()]).unwrap()), batches)
}

async fn rows_of(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql).await.unwrap().collect().await.unwrap()
}

fn pretty(b: &[RecordBatch]) -> String {
    datafusion::arrow::util::pretty::pretty_format_batches(b).unwrap().to_string()
}

fn i64_at(b: &[RecordBatch], col: &str) -> i64 {
    let a = b[0].column_by_name(col).unwrap();
    a.as_any().downcast_ref::<Int64Array>().unwrap().value(0)
}

// ------------------------------------------------------------------ G1

static G1_SEEN: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn g1_plan(
    _s: *const ql_planner,
    ctx: *const ql_planner_context,
    out: *mut ql_planner_result,
    _e: *mut ql_error,
) -> c_int {
    let view = (*ctx).plan;
    for n in nodes(view) {
        if n.kind == QL_NODE_TABLE_SCAN && !n.table.is_null() && !(*n.table).host_handle.is_null() {
            let t = table_from_handle((*n.table).host_handle);
            G1_SEEN.lock().unwrap().push(Arc::as_ptr(&t) as *const () as usize);
        }
    }
    (*out).action = QL_PLANNER_DECLINE;
    QL_OK
}

#[tokio::test]
async fn g1_planner_sees_in_memory_table_by_reference() {
    let ctx = planner_ctx(vec![rust_planner(QL_NODE_BIT_TABLE_SCAN, g1_plan, std::ptr::null_mut())]);
    let (mem, _) = mem_table(1000, 100);
    let as_provider: Arc<dyn TableProvider> = mem.clone();
    ctx.register_table("t", Arc::clone(&as_provider)).unwrap();
    let b = rows_of(&ctx, "SELECT count(*) AS n, sum(x) AS s FROM t WHERE k = 3").await;
    assert_eq!(i64_at(&b, "n"), 143);
    let seen = G1_SEEN.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the planner was called with a table scan");
    // The handle is the very TableProvider registered: no codec, no copy.
    assert!(seen.iter().all(|&p| p == Arc::as_ptr(&mem) as *const () as usize));
}

const QL_NODE_BIT_TABLE_SCAN: u32 = 1 << QL_NODE_TABLE_SCAN;
const QL_NODE_BIT_AGGREGATE: u32 = 1 << QL_NODE_AGGREGATE;
const QL_NODE_BIT_JOIN: u32 = 1 << QL_NODE_JOIN;
const QL_NODE_BIT_LIMIT: u32 = 1 << QL_NODE_LIMIT;

/// REWRITE: replace `Limit(fetch=5)` over a scan by `Limit(fetch=2)` over the
/// same scan, rebuilt by the host from the plugin's view (table by reference).
unsafe extern "C" fn g1_rewrite(
    _s: *const ql_planner,
    ctx: *const ql_planner_context,
    out: *mut ql_planner_result,
    _e: *mut ql_error,
) -> c_int {
    let view = (*ctx).plan;
    let ns = nodes(view);
    let Some(limit) = ns.iter().position(|n| n.kind == QL_NODE_LIMIT && n.fetch == 5) else {
        (*out).action = QL_PLANNER_DECLINE;
        return QL_OK;
    };
    let mut b = qlink_datafusion::expr::IrBuilder::new().unwrap();
    // Copy the limit's input subtree (a scan, maybe under a projection) node by node.
    fn copy(b: &mut qlink_datafusion::expr::IrBuilder, ns: &[ql_plan_node], id: i32) -> i32 {
        let n = &ns[id as usize];
        let inputs: Vec<i32> = (0..n.n_inputs as usize).map(|i| copy(b, ns, unsafe { *n.inputs.add(i) })).collect();
        let mut m = ql_plan_node::empty(n.kind);
        m.schema = n.schema;
        m.table = n.table;
        m.name = n.name;
        m.n_projection = n.n_projection;
        m.projection = n.projection;
        m.fetch = n.fetch;
        m.n_inputs = inputs.len() as i32;
        m.inputs = if inputs.is_empty() { std::ptr::null() } else { inputs.as_ptr() };
        assert_eq!(n.n_exprs, 0, "the test query has no expressions below the limit");
        b.node(&m)
    }
    let child = copy(&mut b, ns, *ns[limit].inputs);
    let mut l = ql_plan_node::empty(QL_NODE_LIMIT);
    l.n_inputs = 1;
    l.inputs = &child;
    l.schema = ns[limit].schema;
    l.fetch = 2;
    let root = b.node(&l);
    (*out).rewrite = std::mem::replace(&mut b.finish(root).unwrap().0, zeroed());
    (*out).action = QL_PLANNER_REWRITE;
    (*out).node = limit as i32;
    QL_OK
}

#[tokio::test]
async fn g1_rewrite_reuses_the_table_by_reference() {
    let ctx = planner_ctx(vec![rust_planner(QL_NODE_BIT_LIMIT, g1_rewrite, std::ptr::null_mut())]);
    let (mem, _) = mem_table(50, 10);
    ctx.register_table("t", mem).unwrap();
    let b = rows_of(&ctx, "SELECT k, x FROM t LIMIT 5").await;
    assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 2, "the rewritten plan ran");
}

// ------------------------------------------------------------------ G2

static G2_IDS: Mutex<Vec<(i32, String, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn g2_plan(
    _s: *const ql_planner,
    ctx: *const ql_planner_context,
    out: *mut ql_planner_result,
    _e: *mut ql_error,
) -> c_int {
    for e in exprs((*ctx).plan) {
        if e.kind == QL_EXPR_AGGREGATE_FUNCTION {
            G2_IDS.lock().unwrap().push((e.function.origin, cstr(e.function.name), cstr(e.function.library)));
        }
    }
    (*out).action = QL_PLANNER_DECLINE;
    QL_OK
}

#[tokio::test]
async fn g2_shadowing_udf_sum_is_not_the_builtin() {
    // A session where `sum` is the built-in.
    let ctx = planner_ctx(vec![rust_planner(QL_NODE_BIT_AGGREGATE, g2_plan, std::ptr::null_mut())]);
    let (mem, _) = mem_table(100, 10);
    ctx.register_table("t", mem.clone()).unwrap();
    rows_of(&ctx, "SELECT sum(x) FROM t").await;
    let builtin = G2_IDS.lock().unwrap().drain(..).collect::<Vec<_>>();
    assert_eq!(builtin, vec![(QL_ORIGIN_BUILTIN, "sum".to_string(), String::new())]);

    // A session whose own `sum` (same behaviour, another implementation) shadows it.
    let ctx2 = planner_ctx(vec![rust_planner(QL_NODE_BIT_AGGREGATE, g2_plan, std::ptr::null_mut())]);
    ctx2.register_table("t", mem).unwrap();
    let shadow = datafusion::functions_aggregate::sum::sum_udaf().as_ref().clone().with_aliases(["my_total"]);
    assert_eq!(shadow.name(), "sum");
    ctx2.register_udaf(shadow);
    rows_of(&ctx2, "SELECT sum(x) FROM t").await;
    let user = G2_IDS.lock().unwrap().drain(..).collect::<Vec<_>>();
    assert_eq!(user.len(), 1);
    assert_eq!(user[0].0, QL_ORIGIN_USER, "a session UDF named sum is user-defined");
    assert_eq!(user[0].1, "sum");
    assert_eq!(user[0].2, "host");

    // The session view's lookup agrees.
    let state = ctx2.state();
    let view = SessionView::new(SessionSource::Session(&state));
    let mut info: ql_function_info = zeroed();
    let st =
        unsafe { view.raw.function_lookup.unwrap()(&view.raw, c"sum".as_ptr(), QL_FUNCTION_AGGREGATE, &mut info, std::ptr::null_mut()) };
    assert_eq!(st, QL_OK);
    assert_eq!(info.id.origin, QL_ORIGIN_USER);
    let state1 = ctx.state();
    let view1 = SessionView::new(SessionSource::Session(&state1));
    let st =
        unsafe { view1.raw.function_lookup.unwrap()(&view1.raw, c"sum".as_ptr(), QL_FUNCTION_AGGREGATE, &mut info, std::ptr::null_mut()) };
    assert_eq!(st, QL_OK);
    assert_eq!(info.id.origin, QL_ORIGIN_BUILTIN);
}

#[tokio::test]
async fn g2_plugin_function_carries_its_plugin_identity() {
    let mut s = QlinkSession::new(SessionContext::new());
    let p = s.load_plugin(SAMPLE).unwrap();
    s.register_functions(&p).unwrap();
    let state = s.ctx.state();
    let view = SessionView::new(SessionSource::Session(&state));
    let mut info: ql_function_info = zeroed();
    let st =
        unsafe { view.raw.function_lookup.unwrap()(&view.raw, c"add_one".as_ptr(), QL_FUNCTION_SCALAR, &mut info, std::ptr::null_mut()) };
    assert_eq!(st, QL_OK);
    assert_eq!(info.id.origin, QL_ORIGIN_USER);
    assert_eq!(cstr(info.id.library), "qlink_sample");
    let st = unsafe {
        view.raw.function_lookup.unwrap()(&view.raw, c"no_such_fn".as_ptr(), QL_FUNCTION_SCALAR, &mut info, std::ptr::null_mut())
    };
    assert_eq!(st, QL_ENOTFOUND);
}

// ------------------------------------------------------------------ G3

/// A plugin-side execution plan (written here against the C ABI) with one
/// child: it forwards the child's stream, so every batch it yields is the
/// child's own Arrow buffers.
struct PassThrough {
    child: ql_execution_plan,
}

unsafe fn pt(p: *const ql_execution_plan) -> &'static mut PassThrough {
    &mut *((*p).private_data as *mut PassThrough)
}
unsafe extern "C" fn pt_name(_p: *const ql_execution_plan) -> *const c_char {
    c"PassThroughExec".as_ptr()
}
unsafe extern "C" fn pt_display(_p: *const ql_execution_plan) -> *const c_char {
    c"forwards its child".as_ptr()
}
unsafe extern "C" fn pt_schema(p: *const ql_execution_plan, out: *mut ArrowSchema, e: *mut ql_error) -> c_int {
    let c = &pt(p).child;
    c.get_schema.unwrap()(c, out, e)
}
unsafe extern "C" fn pt_props(p: *const ql_execution_plan, out: *mut ql_plan_properties, e: *mut ql_error) -> c_int {
    let c = &pt(p).child;
    c.get_properties.unwrap()(c, out, e)
}
unsafe extern "C" fn pt_count(_p: *const ql_execution_plan) -> i64 {
    1
}
unsafe extern "C" fn pt_child(p: *const ql_execution_plan, _i: i64) -> *const ql_execution_plan {
    &pt(p).child
}
unsafe extern "C" fn pt_execute(
    p: *const ql_execution_plan,
    part: i64,
    ctx: *const ql_task_context,
    out: *mut ArrowArrayStream,
    e: *mut ql_error,
) -> c_int {
    let c = &pt(p).child;
    c.execute.unwrap()(c, part, ctx, out, e)
}
unsafe extern "C" fn pt_release(p: *mut ql_execution_plan) {
    let b = Box::from_raw((*p).private_data as *mut PassThrough);
    let mut child = b.child;
    if let Some(r) = child.release {
        r(&mut child);
    }
    (*p).release = None;
}

static G3_CALLS: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn g3_plan(
    _s: *const ql_planner,
    ctx: *const ql_planner_context,
    out: *mut ql_planner_result,
    e: *mut ql_error,
) -> c_int {
    let ns = nodes((*ctx).plan);
    let Some(scan) = ns.iter().position(|n| n.kind == QL_NODE_TABLE_SCAN) else {
        (*out).action = QL_PLANNER_DECLINE;
        return QL_OK;
    };
    G3_CALLS.fetch_add(1, Ordering::Relaxed);
    let mut child: ql_execution_plan = zeroed();
    let st = (*ctx).plan_physical.unwrap()(ctx, scan as i32, &mut child, e);
    if st != QL_OK {
        return st;
    }
    let plan = ql_execution_plan {
        struct_size: std::mem::size_of::<ql_execution_plan>() as u32,
        name: Some(pt_name),
        display: Some(pt_display),
        get_schema: Some(pt_schema),
        get_properties: Some(pt_props),
        child_count: Some(pt_count),
        child: Some(pt_child),
        with_new_children: None,
        execute: Some(pt_execute),
        get_statistics: None,
        get_metrics: None,
        release: Some(pt_release),
        private_data: Box::into_raw(Box::new(PassThrough { child })) as *mut c_void,
    };
    (*out).physical = plan;
    (*out).action = QL_PLANNER_PHYSICAL;
    (*out).node = scan as i32;
    QL_OK
}

#[tokio::test]
async fn g3_physical_plan_scans_800k_rows_with_zero_bytes_copied() {
    let ctx = planner_ctx(vec![rust_planner(QL_NODE_BIT_TABLE_SCAN, g3_plan, std::ptr::null_mut())]);
    let (mem, input) = mem_table(800_000, 65_536);
    ctx.register_table("t", mem).unwrap();
    // Children stay visible: EXPLAIN shows the plugin node over DataFusion's own scan.
    let explain = pretty(&rows_of(&ctx, "EXPLAIN SELECT k, x FROM t").await);
    assert!(explain.contains("PassThroughExec: forwards its child"), "{explain}");
    assert!(explain.contains("DataSourceExec"), "{explain}");
    let out = rows_of(&ctx, "SELECT k, x FROM t").await;
    assert!(G3_CALLS.load(Ordering::Relaxed) >= 2);
    assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), 800_000);
    // Zero bytes copied: every output buffer lies inside an input buffer.
    let ranges: Vec<(usize, usize)> = input
        .iter()
        .flat_map(|b| b.columns().iter().map(|c| c.to_data().buffers()[0].clone()).collect::<Vec<_>>())
        .map(|buf| (buf.as_ptr() as usize, buf.as_ptr() as usize + buf.len()))
        .collect();
    for b in &out {
        for c in b.columns() {
            let p = c.to_data().buffers()[0].as_ptr() as usize;
            assert!(ranges.iter().any(|&(lo, hi)| p >= lo && p < hi), "an output buffer was copied");
        }
    }
}

// ------------------------------------------------------------------ G4

#[tokio::test]
async fn g4_plugin_that_spawns_work_runs_on_the_hosts_executor() {
    let mut s = QlinkSession::new(SessionContext::new());
    s.register_table("p", &format!("{DFTEST}/probe?spawn=8")).unwrap();
    let b = rows_of(&s.ctx, "SELECT spawned_sum, in_hook FROM p").await;
    // Job i returns (i+1)*10 + its hook depth: each job ran, bracketed by enter/leave.
    assert_eq!(i64_at(&b, "spawned_sum"), (1..=8).map(|i| i * 10 + 1).sum::<i64>());
    assert_eq!(i64_at(&b, "in_hook"), 1, "get_next ran between the plugin's enter and leave hooks");
}

#[tokio::test]
async fn g4_plugin_error_mid_stream_fails_the_query_and_the_process_lives() {
    let mut s = QlinkSession::new(SessionContext::new());
    s.register_table("p", &format!("{DFTEST}/probe?fail=1")).unwrap();
    let err = s.ctx.sql("SELECT * FROM p").await.unwrap().collect().await.unwrap_err();
    assert!(err.to_string().contains("probe: injected failure after the first batch"), "{err}");
    // The session (and process) still works.
    s.register_table("q", &format!("{DFTEST}/probe")).unwrap();
    let b = rows_of(&s.ctx, "SELECT bytes_read FROM q").await;
    assert_eq!(i64_at(&b, "bytes_read"), 0);
}

// ------------------------------------------------------------------ G5

#[tokio::test]
async fn g5_store_registered_on_the_session_is_read_by_a_plugin() {
    use object_store::{ObjectStoreExt, PutPayload};
    let store = Arc::new(object_store::memory::InMemory::new());
    let data: Vec<u8> = (0..200u8).collect();
    store.put(&object_store::path::Path::from("dir/data.bin"), PutPayload::from(data.clone())).await.unwrap();
    let mut s = QlinkSession::new(SessionContext::new());
    s.ctx.register_object_store(&url::Url::parse("memory://").unwrap(), store);
    s.register_table("p", &format!("{DFTEST}/probe?url=memory:///dir/data.bin")).unwrap();
    let b = rows_of(&s.ctx, "SELECT bytes_read, first_byte FROM p").await;
    assert_eq!(i64_at(&b, "bytes_read"), 200);
    assert_eq!(i64_at(&b, "first_byte"), 0);
    // A URL with no registered store is a clean error naming it.
    s.register_table("q", &format!("{DFTEST}/probe?url=s3://nobucket/x")).unwrap();
    let err = s.ctx.sql("SELECT * FROM q").await.unwrap().collect().await.unwrap_err();
    assert!(err.to_string().contains("no object store registered for s3://nobucket/x"), "{err}");
}

#[tokio::test]
async fn g5_memory_limit_stops_a_plugins_reservation() {
    let rt = RuntimeEnvBuilder::new().with_memory_limit(1 << 20, 1.0).build_arc().unwrap();
    let ctx = SessionContext::new_with_config_rt(SessionConfig::new(), rt);
    let mut s = QlinkSession::new(ctx);
    s.register_table("small", &format!("{DFTEST}/probe?reserve=4096")).unwrap();
    let b = rows_of(&s.ctx, "SELECT reserved FROM small").await;
    assert_eq!(i64_at(&b, "reserved"), 4096, "a reservation within the limit succeeds");
    s.register_table("big", &format!("{DFTEST}/probe?reserve=10000000")).unwrap();
    let err = s.ctx.sql("SELECT reserved FROM big").await.unwrap().collect().await.unwrap_err();
    assert!(matches!(err.find_root(), DataFusionError::ResourcesExhausted(_)), "{err:?}");
    assert_eq!(s.ctx.runtime_env().memory_pool.reserved(), 0, "the refused reservation left nothing behind");
}

#[tokio::test]
async fn g5_temp_files_come_from_the_disk_manager() {
    let mut s = QlinkSession::new(SessionContext::new());
    s.register_table("p", &format!("{DFTEST}/probe?temp=1")).unwrap();
    let b = rows_of(&s.ctx, "SELECT temp_ok FROM p").await;
    assert_eq!(i64_at(&b, "temp_ok"), 1);
}

// ------------------------------------------------------------------ G6

/// Tests that read or bump the process-wide ENUMERATIONS counter run one at a time.
static ENUM_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn add_udfs(ctx: &SessionContext, n: usize) {
    for i in 0..n {
        let f = datafusion::logical_expr::create_udf(
            &format!("extra_fn_{i}"),
            vec![DataType::Int64],
            DataType::Int64,
            datafusion::logical_expr::Volatility::Immutable,
            Arc::new(|args: &[datafusion::logical_expr::ColumnarValue]| Ok(args[0].clone())),
        );
        ctx.register_udf(f);
    }
}

#[tokio::test]
async fn g6_scan_and_execute_enumerate_no_functions() {
    let _lock = ENUM_LOCK.lock().await;
    let mut s = QlinkSession::new(SessionContext::new());
    add_udfs(&s.ctx, 1000);
    s.register_table("t", &format!("{DFTEST}/grid?rows=65&cols=16")).unwrap();
    let before = ENUMERATIONS.load(Ordering::Relaxed);
    for _ in 0..5 {
        let b = rows_of(&s.ctx, "SELECT c0, c15 FROM t WHERE c0 > 100").await;
        assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 58);
    }
    assert_eq!(ENUMERATIONS.load(Ordering::Relaxed), before, "per-scan and per-execute paths walked a registry");
}

#[tokio::test]
async fn g6_session_view_is_lazy_config_by_key_generation_changes() {
    let _lock = ENUM_LOCK.lock().await;
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_batch_size(1234));
    let get = |ctx: &SessionContext, key: &std::ffi::CStr| -> (c_int, String) {
        let state = ctx.state();
        let view = SessionView::new(SessionSource::Session(&state));
        let mut buf = [0 as c_char; 64];
        let mut len = 0usize;
        let st =
            unsafe { view.raw.config_get.unwrap()(&view.raw, key.as_ptr(), buf.as_mut_ptr(), buf.len(), &mut len, std::ptr::null_mut()) };
        (st, cstr(buf.as_ptr()))
    };
    assert_eq!(get(&ctx, c"datafusion.execution.batch_size"), (QL_OK, "1234".to_string()));
    assert_eq!(get(&ctx, c"datafusion.sql_parser.dialect").0, QL_OK);
    assert_eq!(get(&ctx, c"datafusion.no.such.key").0, QL_ENOTFOUND);
    let generation = |ctx: &SessionContext| {
        let state = ctx.state();
        let view = SessionView::new(SessionSource::Session(&state));
        unsafe { view.raw.generation.unwrap()(&view.raw) }
    };
    let g0 = generation(&ctx);
    assert_eq!(generation(&ctx), g0, "nothing changed, same generation");
    add_udfs(&ctx, 1);
    let g1 = generation(&ctx);
    assert_ne!(g1, g0, "registering a function changes the generation");
    ctx.sql("SET datafusion.execution.batch_size = 999").await.unwrap();
    assert_ne!(generation(&ctx), g1, "changing a config option changes the generation");
}

// ------------------------------------------------------------------ G7

static G7_CALLS: AtomicI64 = AtomicI64::new(0);

unsafe extern "C" fn g7_plan(
    _s: *const ql_planner,
    _c: *const ql_planner_context,
    out: *mut ql_planner_result,
    _e: *mut ql_error,
) -> c_int {
    G7_CALLS.fetch_add(1, Ordering::Relaxed);
    (*out).action = QL_PLANNER_DECLINE;
    QL_OK
}

#[tokio::test]
async fn g7_decline_fast_path_calls_a_planner_only_for_plans_it_wants() {
    let ctx = planner_ctx(vec![rust_planner(QL_NODE_BIT_JOIN, g7_plan, std::ptr::null_mut())]);
    let (mem, _) = mem_table(100, 10);
    ctx.register_table("t", mem).unwrap();
    rows_of(&ctx, "SELECT 1").await;
    rows_of(&ctx, "SELECT sum(x) FROM t").await;
    assert_eq!(G7_CALLS.load(Ordering::Relaxed), 0, "no join: the planner is not called");
    let b = rows_of(&ctx, "SELECT count(*) AS n FROM t a JOIN t b ON a.k = b.k").await;
    assert_eq!(G7_CALLS.load(Ordering::Relaxed), 1, "one call for a plan with a join");
    let native = SessionContext::new();
    let (mem2, _) = mem_table(100, 10);
    native.register_table("t", mem2).unwrap();
    let n = rows_of(&native, "SELECT count(*) AS n FROM t a JOIN t b ON a.k = b.k").await;
    assert_eq!(pretty(&b), pretty(&n), "declining leaves results unchanged");
}

#[tokio::test]
async fn g7_declining_plugin_planner_from_a_shared_library() {
    let p = qlink_datafusion::Plugin::load(DFTEST).unwrap();
    let planner = InstalledPlanner::open(&p, "decline", &[]).unwrap();
    let ctx = planner_ctx(vec![planner]);
    let b = rows_of(&ctx, "SELECT 1 AS one").await;
    assert_eq!(i64_at(&b, "one"), 1);
}

// ------------------------------------------------------------------ G8

#[tokio::test]
async fn g8_task_context_is_pointers_no_conversion() {
    let _lock = ENUM_LOCK.lock().await;
    let ctx = SessionContext::new();
    add_udfs(&ctx, 1000);
    let task = ctx.task_ctx();
    let before = ENUMERATIONS.load(Ordering::Relaxed);
    let tv = TaskView::new(Arc::clone(&task), 3, None);
    assert_eq!(ENUMERATIONS.load(Ordering::Relaxed), before);
    assert_eq!(tv.raw.partition, 3);
    assert_eq!(tv.raw.batch_size, 8192);
    // The view carries DataFusion's own TaskContext: handed back, it is the same object.
    let back = qlink_datafusion::services::task_context_of(&tv.raw).unwrap();
    assert!(Arc::ptr_eq(&back, &task));
    let env = unsafe { &*tv.raw.runtime_env };
    assert!(!env.memory_pool.is_null() && !env.object_stores.is_null() && !env.temp_files.is_null());
    assert!(!tv.raw.executor.is_null());
}

// -------------------------------------------- sample plugin == MemTable

fn series_table(stop: i64) -> Arc<MemTable> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("value", DataType::Int64, true),
        Field::new("square", DataType::Int64, true),
        Field::new("parity", DataType::Utf8, true),
    ]));
    let v: Vec<i64> = (0..stop).collect();
    let b = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(v.clone())),
            Arc::new(Int64Array::from(v.iter().map(|x| x * x).collect::<Vec<_>>())),
            Arc::new(StringArray::from(v.iter().map(|x| if x % 2 == 0 { "even" } else { "odd" }).collect::<Vec<_>>())),
        ],
    )
    .unwrap();
    Arc::new(MemTable::try_new(schema, vec![vec![b]]).unwrap())
}

#[tokio::test]
async fn sample_plugin_sql_equals_native_memtable() {
    let mut s = QlinkSession::new(SessionContext::new());
    s.register_table("q", &format!("{SAMPLE}/series?start=0&stop=1000&partitions=4")).unwrap();
    s.ctx.register_table("m", series_table(1000)).unwrap();
    let queries = [
        "SELECT * FROM {t} ORDER BY value",
        "SELECT count(*) AS n FROM {t}",
        "SELECT value, square FROM {t} WHERE value BETWEEN 10 AND 20 ORDER BY value",
        "SELECT parity, count(*) AS n, sum(square) AS s FROM {t} GROUP BY parity ORDER BY parity",
        "SELECT value FROM {t} WHERE value IN (3, 5, 999) OR parity = 'odd' AND value < 9 ORDER BY value",
        "SELECT min(value) AS lo, max(value) AS hi FROM {t} WHERE NOT (value < 500)",
        "SELECT value FROM {t} WHERE CAST(value AS DOUBLE) > 990.5 ORDER BY value",
        "SELECT value FROM {t} ORDER BY value DESC LIMIT 3",
        "SELECT value FROM {t} WHERE value % 100 = 0 AND value IS NOT NULL ORDER BY value",
    ];
    for q in queries {
        let a = pretty(&rows_of(&s.ctx, &q.replace("{t}", "q")).await);
        let m = pretty(&rows_of(&s.ctx, &q.replace("{t}", "m")).await);
        assert_eq!(a, m, "{q}");
    }
}

#[tokio::test]
async fn sample_statistics_answer_count_star_without_a_scan() {
    let mut s = QlinkSession::new(SessionContext::new());
    s.register_table("q", &format!("{SAMPLE}/series?stop=1000")).unwrap();
    let explain = pretty(&rows_of(&s.ctx, "EXPLAIN SELECT count(*) FROM q").await);
    assert!(!explain.contains("SeriesScanExec"), "exact statistics answer COUNT(*): {explain}");
    let b = rows_of(&s.ctx, "SELECT count(*) AS n FROM q").await;
    assert_eq!(i64_at(&b, "n"), 1000);
}

/// One plugin UDF at two call sites whose argument fields differ (a column,
/// and a cast the host coerces), called batch after batch: the host keeps
/// the last argument schema it exported, and each call gets its own.
#[tokio::test]
async fn one_udf_at_two_call_sites_with_different_argument_fields() {
    let mut s = QlinkSession::new(SessionContext::new());
    let p = s.load_plugin(SAMPLE).unwrap();
    s.register_functions(&p).unwrap();
    s.register_table("q", "qlink_sample/series?stop=100000").unwrap();
    let b = rows_of(&s.ctx, "SELECT sum(add_one(value)) AS a, sum(add_one(CAST(value % 7 AS INT))) AS b FROM q").await;
    assert_eq!(i64_at(&b, "a"), (1..=100_000).sum::<i64>());
    assert_eq!(i64_at(&b, "b"), (0..100_000i64).map(|v| v % 7 + 1).sum::<i64>());
}

#[tokio::test]
async fn sample_functions_and_explain_analyze_metrics() {
    let mut s = QlinkSession::new(SessionContext::new());
    let p = s.load_plugin(SAMPLE).unwrap();
    s.register_functions(&p).unwrap();
    s.register_table("q", "qlink_sample/series?stop=10").unwrap();
    let b = rows_of(&s.ctx, "SELECT add_one(value) AS a, sum_sq(value) OVER () AS w FROM q ORDER BY a LIMIT 1").await;
    assert_eq!(i64_at(&b, "a"), 1);
    let b = rows_of(&s.ctx, "SELECT sum_sq(value) AS ss FROM q").await;
    assert_eq!(i64_at(&b, "ss"), 285);
    let analyze = pretty(&rows_of(&s.ctx, "EXPLAIN ANALYZE SELECT value FROM q WHERE value > 4").await);
    assert!(analyze.contains("SeriesScanExec") && analyze.contains("output_rows"), "{analyze}");
    let _unused: HashSet<i32> = HashSet::new();
}
