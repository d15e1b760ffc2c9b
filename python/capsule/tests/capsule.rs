// SPDX-License-Identifier: Apache-2.0
//! The datafusion-ffi capsule route (hosts/datafusion/src/capsule): qlink
//! objects exported as datafusion-ffi 55.2.0 structs and imported back with
//! datafusion-ffi's own consumer types (`ForeignTableProvider`,
//! `ForeignScalarUDF`, ...), the way datafusion-python imports them. The
//! capsule marker differs from datafusion-ffi's, so even in this one process
//! every call takes the foreign path through the exported function pointers.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::execution::{SessionStateBuilder, TaskContext, TaskContextProvider};
use datafusion::logical_expr::{AggregateUDF, AggregateUDFImpl, ScalarUDF, ScalarUDFImpl, WindowUDF, WindowUDFImpl};
use datafusion::prelude::SessionContext;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::{FFI_TableProvider, ForeignTableProvider};
use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;
use qlink_capsule as capsule;
use qlink_capsule::ExportOptions;
use qlink_datafusion::metrics::HOOK_NANOS;
use qlink_datafusion::planner::InstalledPlanner;
use qlink_datafusion::{Plugin, QlinkTableProvider};

const SAMPLE: &str = qlink_sys::plugins::SAMPLE;
const DFTEST: &str = qlink_sys::plugins::DFTEST;

/// The consumer's session, counting how often anyone asks for its task
/// context (each request is a full enumeration of its functions once it
/// crosses datafusion-ffi).
struct Consumer {
    ctx: SessionContext,
    requests: AtomicU64,
}

impl TaskContextProvider for Consumer {
    fn task_ctx(&self) -> Arc<TaskContext> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.ctx.task_ctx()
    }
}

struct Fixture {
    consumer: Arc<Consumer>,
    /// Keeps the weakly held provider alive.
    _as_provider: Arc<dyn TaskContextProvider>,
    codec: FFI_LogicalExtensionCodec,
}

fn consumer() -> Fixture {
    let consumer = Arc::new(Consumer { ctx: SessionContext::new(), requests: AtomicU64::new(0) });
    let as_provider: Arc<dyn TaskContextProvider> = Arc::clone(&consumer) as _;
    let codec =
        FFI_LogicalExtensionCodec::new(Arc::new(DefaultLogicalExtensionCodec {}), None, FFI_TaskContextProvider::from(&as_provider));
    Fixture { consumer, _as_provider: as_provider, codec }
}

fn open(plugin_path: &str, provider: &str, options: &[(&str, &str)]) -> Arc<QlinkTableProvider> {
    let plugin = Plugin::load(plugin_path).unwrap();
    let opts: Vec<(String, String)> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let state = SessionContext::new().state();
    Arc::new(QlinkTableProvider::open(&plugin, provider, &opts, &state).unwrap())
}

fn export(f: &Fixture, table: Arc<QlinkTableProvider>) -> FFI_TableProvider {
    let rt = tokio::runtime::Handle::try_current().ok();
    capsule::export_table(table, &f.codec, ExportOptions { runtime: rt, runtime_env: None })
}

/// Import the way datafusion-python does, and check it is the foreign path.
fn import(ffi: &FFI_TableProvider) -> Arc<dyn TableProvider> {
    let t: Arc<dyn TableProvider> = ffi.into();
    assert!(t.downcast_ref::<ForeignTableProvider>().is_some(), "capsule tables are imported as foreign");
    t
}

fn series_memtable(start: i64, stop: i64) -> Arc<MemTable> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("value", DataType::Int64, false),
        Field::new("square", DataType::Int64, false),
        Field::new("parity", DataType::Utf8, false),
    ]));
    let v: Vec<i64> = (start..stop).collect();
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

async fn pretty(ctx: &SessionContext, sql: &str) -> String {
    let b = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&b).unwrap().to_string()
}

async fn rows(ctx: &SessionContext, sql: &str) -> usize {
    ctx.sql(sql).await.unwrap().collect().await.unwrap().iter().map(|b| b.num_rows()).sum()
}

const QUERIES: &[&str] = &[
    "SELECT * FROM {t} ORDER BY value",
    "SELECT count(*) AS n, sum(value) AS s, min(square) AS lo, max(square) AS hi FROM {t}",
    "SELECT parity, count(*) AS n, sum(square) AS s FROM {t} GROUP BY parity ORDER BY parity",
    "SELECT value, square FROM {t} WHERE value > 40 AND value <= 77 ORDER BY value DESC",
    "SELECT value FROM {t} WHERE parity = 'odd' AND value < 20 ORDER BY value LIMIT 4",
    "SELECT value FROM {t} WHERE abs(value - 500) < 3 ORDER BY value",
    "SELECT a.value, b.square FROM {t} a JOIN {t} b ON a.value = b.value + 3 WHERE a.value < 10 ORDER BY a.value",
    "SELECT value FROM {t} ORDER BY value DESC LIMIT 3",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_is_a_real_ffi_table_provider() {
    let f = consumer();
    let ffi = export(&f, open(SAMPLE, "series", &[("stop", "10")]));
    // The public members, read through the real type.
    assert_eq!(unsafe { (ffi.version)() }, datafusion_ffi::version());
    assert_eq!(capsule::ffi_major_version(), 55);
    assert_eq!((ffi.library_marker_id)(), capsule::capsule_marker_id());
    assert_ne!((ffi.library_marker_id)(), datafusion_ffi::get_library_marker_id());
    assert!(unsafe { (ffi.statistics)(&ffi) }.as_ref().is_none());
    // Clones share the provider; each is released on its own.
    let copy = ffi.clone();
    drop(ffi);
    let t = import(&copy);
    assert_eq!(t.schema().fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["value", "square", "parity"]);
    let ctx = &f.consumer.ctx;
    ctx.register_table("t", t).unwrap();
    assert_eq!(rows(ctx, "SELECT * FROM t").await, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_equal_a_native_memtable() {
    let f = consumer();
    let ffi = export(&f, open(SAMPLE, "series", &[("start", "-5"), ("stop", "1000"), ("partitions", "3")]));
    let ctx = &f.consumer.ctx;
    ctx.register_table("q", import(&ffi)).unwrap();
    ctx.register_table("m", series_memtable(-5, 1000)).unwrap();
    for q in QUERIES {
        let a = pretty(ctx, &q.replace("{t}", "q")).await;
        let m = pretty(ctx, &q.replace("{t}", "m")).await;
        assert!(a.lines().count() > 4, "{q}: {a}");
        assert_eq!(a, m, "{q}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_pushdown_reaches_the_plugin() {
    let f = consumer();
    let ffi = export(&f, open(SAMPLE, "series", &[("stop", "1000"), ("partitions", "1")]));
    let ctx = &f.consumer.ctx;
    ctx.register_table("t", import(&ffi)).unwrap();
    let sql = "SELECT value FROM t WHERE value >= 990 AND square > 5";
    let plan = pretty(ctx, &format!("EXPLAIN {sql}")).await;
    // The plugin answered Exact for `value >= 990` (no FilterExec left for
    // it) and Unsupported for `square > 5` (kept above the foreign scan).
    assert!(plan.contains("full_filters=[t.value >= Int64(990)]"), "{plan}");
    assert!(plan.contains("FilterExec: square@1 > 5"), "{plan}");
    assert!(!plan.contains("value@0 >= 990"), "{plan}");
    assert!(plan.contains("FFI_ExecutionPlan: SeriesScanExec"), "{plan}");
    // The scan itself made only the rows the plugin kept.
    let analyze = pretty(ctx, &format!("EXPLAIN ANALYZE {sql}")).await;
    let scan_line = analyze.lines().find(|l| l.contains("SeriesScanExec")).unwrap().to_string();
    assert!(scan_line.contains("output_rows=10"), "{scan_line}");
    let b = ctx.sql(&format!("{sql} ORDER BY value")).await.unwrap().collect().await.unwrap();
    let got: Vec<i64> = b.iter().flat_map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()).collect();
    assert_eq!(got, (990..1000).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_scan_path_enumerates_no_functions() {
    let f = consumer();
    let ctx = &f.consumer.ctx;
    for i in 0..1000 {
        ctx.register_udf(datafusion::logical_expr::create_udf(
            &format!("extra_fn_{i}"),
            vec![DataType::Int64],
            DataType::Int64,
            datafusion::logical_expr::Volatility::Immutable,
            Arc::new(|args: &[datafusion::logical_expr::ColumnarValue]| Ok(args[0].clone())),
        ));
    }
    let ffi = export(&f, open(SAMPLE, "series", &[("stop", "1000"), ("partitions", "2")]));
    ctx.register_table("t", import(&ffi)).unwrap();
    let before = capsule::CONSUMER_LOOKUPS.load(Ordering::Relaxed);
    for _ in 0..5 {
        // Built-ins only (abs is this library's own abs, gap G2).
        assert_eq!(rows(ctx, "SELECT value FROM t WHERE value > 100 AND abs(value) < 200").await, 99);
        assert_eq!(rows(ctx, "SELECT * FROM t").await, 1000);
    }
    assert_eq!(f.consumer.requests.load(Ordering::Relaxed), 0, "scan or execute fetched the consumer's task context");
    // A filter naming a function only the consumer has: fetched on demand.
    assert_eq!(rows(ctx, "SELECT value FROM t WHERE extra_fn_7(value) < 5").await, 5);
    assert!(f.consumer.requests.load(Ordering::Relaxed) >= 1, "the consumer's function was looked up");
    assert!(capsule::CONSUMER_LOOKUPS.load(Ordering::Relaxed) > before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_errors_cross_with_the_plugins_message() {
    let f = consumer();
    let ctx = &f.consumer.ctx;
    let ffi = export(&f, open(DFTEST, "probe", &[("fail", "1")]));
    ctx.register_table("p", import(&ffi)).unwrap();
    let err = ctx.sql("SELECT * FROM p").await.unwrap().collect().await.unwrap_err();
    assert!(err.to_string().contains("probe: injected failure after the first batch"), "{err}");
    // The table and the process are still usable.
    let ffi = export(&f, open(DFTEST, "grid", &[("rows", "65"), ("cols", "16")]));
    ctx.register_table("g", import(&ffi)).unwrap();
    assert_eq!(rows(ctx, "SELECT * FROM g").await, 65);
    let err = ctx.sql("INSERT INTO g SELECT * FROM g").await.unwrap().collect().await.unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_through_the_standard_structs() {
    let plugin = Plugin::load(SAMPLE).unwrap();
    let ctx = SessionContext::new();
    ctx.register_table("m", series_memtable(1, 7)).unwrap();

    let mut udf = capsule::export_scalar_udf(&plugin, "add_one").unwrap();
    udf.library_marker_id = capsule::capsule_marker_id;
    let udf: Arc<dyn ScalarUDFImpl> = (&udf).into();
    ctx.register_udf(ScalarUDF::new_from_shared_impl(udf));
    let mut udaf = capsule::export_aggregate_udf(&plugin, "sum_sq").unwrap();
    udaf.library_marker_id = capsule::capsule_marker_id;
    let udaf: Arc<dyn AggregateUDFImpl> = (&udaf).into();
    ctx.register_udaf(AggregateUDF::new_from_shared_impl(udaf));
    let mut udwf = capsule::export_window_udf(&plugin, "running_count").unwrap();
    udwf.library_marker_id = capsule::capsule_marker_id;
    let udwf: Arc<dyn WindowUDFImpl> = (&udwf).into();
    ctx.register_udwf(WindowUDF::new_from_shared_impl(udwf));

    assert_eq!(
        pretty(&ctx, "SELECT value, add_one(value) AS a FROM m ORDER BY value").await,
        pretty(&ctx, "SELECT value, value + 1 AS a FROM m ORDER BY value").await
    );
    assert_eq!(
        pretty(&ctx, "SELECT parity, sum_sq(value) AS s FROM m GROUP BY parity ORDER BY parity").await,
        pretty(&ctx, "SELECT parity, sum(value * value) AS s FROM m GROUP BY parity ORDER BY parity").await
    );
    assert_eq!(
        pretty(&ctx, "SELECT value, running_count() OVER (PARTITION BY parity ORDER BY value) AS rc FROM m ORDER BY value").await,
        pretty(&ctx, "SELECT value, count(*) OVER (PARTITION BY parity ORDER BY value) AS rc FROM m ORDER BY value").await
    );
    assert!(capsule::export_scalar_udf(&plugin, "no_such_function").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planner_through_the_standard_struct() {
    let plugin = Plugin::load(SAMPLE).unwrap();
    let planners = vec![InstalledPlanner::open(&plugin, "decline_all", &[]).unwrap()];
    let host = Arc::new(SessionContext::new());
    let tasks: Arc<dyn TaskContextProvider> = Arc::clone(&host) as _;
    let mut ffi = capsule::export_planner_for(planners, &tasks, None);
    ffi.library_marker_id = capsule::capsule_marker_id;
    let planner: Arc<dyn datafusion::execution::context::QueryPlanner + Send + Sync> = (&ffi).into();
    let state = SessionStateBuilder::new().with_default_features().with_query_planner(planner).build();
    let ctx = SessionContext::new_with_state(state);
    let plain = SessionContext::new();
    let before = HOOK_NANOS.load(Ordering::Relaxed);
    let sql = "SELECT column1 * 2 AS d, column2 FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) WHERE column1 > 1 ORDER BY d";
    assert_eq!(pretty(&ctx, sql).await, pretty(&plain, sql).await);
    assert!(HOOK_NANOS.load(Ordering::Relaxed) > before, "the plugin's planner was offered the plan");
}
