// SPDX-License-Identifier: Apache-2.0
//! bench_rust: the DataFusion half of `make bench-rust` (bench/rust/README.md).
//!
//!   bench_rust PLUGIN_DIR OUT.json [--reps N]
//!
//! qlink_memtable (plugins/rust/memtable: a DataFusion `MemTable` and a
//! `ScalarUDF`, exported with qlink-plugin) loaded through the DataFusion
//! host, against the same objects registered natively in the same
//! `SessionContext`:
//! - the native table holds the very batches the plugin's table streams
//!   (read once through it, partitions kept), so both sides scan equal data;
//! - the native UDF is `scale` built from the same source as the plugin's
//!   (below, the memtable crate's `scale`, compiled into this binary).
//!
//! Queries, each pair interleaved (medians of N repetitions):
//! `SELECT * FROM t` over 1,040 rows; `SELECT sum(x) FROM t` over 10 M rows;
//! `SELECT sum(scale(x, 2.0)) FROM native` over 10 M rows (the UDF alone).
//! And the plugin's planner (`topk`, written with the SDK) installed, against
//! the same session without it, over the native tables: `ORDER BY x` over
//! 1,040 rows (the planner is asked and declines: what an installed planner
//! costs a query) and `ORDER BY x DESC LIMIT 10` over 10 M rows (it answers:
//! its TopK over the host's scan).
//! Then the crossing alone (no plugin), per batch: what the Arrow C
//! interfaces cost the scan and the UDF, and the ratios that leaves.
//! Writes the `datafusion` section of bench/results/rust.json; the Python
//! half (bench_rust.py) adds DuckDB, SQLite and datafusion-python.

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::Float64Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::as_float64_array;
use datafusion::datasource::MemTable;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};
use datafusion::prelude::SessionContext;
use qlink_datafusion::planner::{InstalledPlanner, QlinkQueryPlanner};
use qlink_datafusion::QlinkSession;

/// The memtable plugin's `scale(x, k) = x * k` (plugins/rust/memtable), the
/// same source compiled natively.
fn scale_native() -> ScalarUDF {
    create_udf(
        "scale_native",
        vec![DataType::Float64, DataType::Float64],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let (x, k) = (as_float64_array(&arrays[0])?, as_float64_array(&arrays[1])?);
            let out: Float64Array = x.iter().zip(k.iter()).map(|(x, k)| Some(x? * k?)).collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

async fn run(ctx: &SessionContext, sql: &str) -> usize {
    ctx.sql(sql).await.unwrap().collect().await.unwrap().iter().map(|b| b.num_rows()).sum()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Medians (ms) of `a` and `b`, interleaved, after `reps / 5 + 3` warm-ups.
async fn pair(ctx: &SessionContext, a: &str, b: &str, reps: usize) -> (f64, f64) {
    pair_in([(ctx, a), (ctx, b)], reps).await
}

/// Medians (ms) of `q` in `a` and in `b`, likewise.
async fn pair2(a: &SessionContext, b: &SessionContext, q: &str, reps: usize) -> (f64, f64) {
    pair_in([(a, q), (b, q)], reps).await
}

async fn pair_in(sides: [(&SessionContext, &str); 2], reps: usize) -> (f64, f64) {
    for _ in 0..reps / 5 + 3 {
        for (ctx, q) in sides {
            run(ctx, q).await;
        }
    }
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for i in 0..reps {
        let order = if i % 2 == 0 { [(sides[0], 0), (sides[1], 1)] } else { [(sides[1], 1), (sides[0], 0)] };
        for ((ctx, q), side) in order {
            let t = Instant::now();
            run(ctx, q).await;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if side == 0 {
                ta.push(ms)
            } else {
                tb.push(ms)
            }
        }
    }
    (median(ta), median(tb))
}

/// Register the plugin's `rows?n=N` as `plugin_N` and its batches as `native_N`.
async fn tables(s: &mut QlinkSession, dir: &str, n: usize) {
    s.register_table(&format!("plugin_{n}"), &format!("{dir}/qlink_memtable.so/rows?n={n}")).unwrap();
    let df = s.ctx.table(format!("plugin_{n}")).await.unwrap();
    let schema = df.schema().inner().clone();
    let parts = df.collect_partitioned().await.unwrap();
    s.ctx.register_table(format!("native_{n}"), Arc::new(MemTable::try_new(schema, parts).unwrap())).unwrap();
}

/// What a batch's crossing costs apart from any plugin, over the 10 M-row
/// table's batches (single thread, medians of 9 passes):
/// - the scan's: each batch exported and imported through the Arrow C
///   Stream Interface (arrow-rs on both sides, as the SDK and the host);
/// - the UDF's: the arguments (x and the constant k, expanded before the
///   call as in the native UDF) as a struct through the C Data Interface,
///   their schema imported (exported once), and the result back;
/// - Tokio's `block_in_place`, per call, from a worker task.
///
/// Returns (scan µs per batch, UDF µs per batch, block_in_place µs, batches).
async fn crossing(ctx: &SessionContext) -> (f64, f64, f64, usize) {
    use datafusion::arrow::array::{Array, ArrayRef, RecordBatchIterator, StructArray};
    use datafusion::arrow::datatypes::{Field, Fields};
    use datafusion::arrow::ffi::{from_ffi, from_ffi_and_data_type, to_ffi, FFI_ArrowSchema};
    use datafusion::arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
    let batches = ctx.table("native_10000000").await.unwrap().collect().await.unwrap();
    let (n, schema) = (batches.len(), batches[0].schema());
    let per_batch = |f: &mut dyn FnMut()| {
        median(
            (0..9)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64() * 1e6 / n as f64
                })
                .collect(),
        )
    };
    let scan = per_batch(&mut || {
        let it = RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone());
        let reader = ArrowArrayStreamReader::try_new(FFI_ArrowArrayStream::new(Box::new(it))).unwrap();
        assert_eq!(reader.map(|b| b.unwrap().num_rows()).sum::<usize>(), 10_000_000);
    });
    let fields = Fields::from(vec![Field::new("arg0", DataType::Float64, true), Field::new("arg1", DataType::Float64, true)]);
    // The arguments as the host has them before the call (the constant
    // expanded, as the native UDF expands it too): only the crossing is timed.
    let args: Vec<StructArray> = batches
        .iter()
        .map(|b| {
            let x = Arc::clone(b.column_by_name("x").unwrap());
            let k: ArrayRef = Arc::new(Float64Array::from(vec![2.0; x.len()]));
            StructArray::try_new(fields.clone(), vec![x, k], None).unwrap()
        })
        .collect();
    let arg_schema = FFI_ArrowSchema::try_from(DataType::Struct(fields.clone())).unwrap();
    let udf = per_batch(&mut || {
        for a in &args {
            let (c, _) = to_ffi(&a.to_data()).unwrap();
            let dt = DataType::try_from(&arg_schema).unwrap();
            let imported = unsafe { from_ffi_and_data_type(c, dt) }.unwrap();
            let result = StructArray::from(imported).column(0).to_data();
            let (r, rs) = to_ffi(&result).unwrap();
            assert_eq!(unsafe { from_ffi(r, &rs) }.unwrap().len(), a.len());
        }
    });
    let bip = tokio::spawn(async {
        const CALLS: u32 = 20_000;
        let t = Instant::now();
        for _ in 0..CALLS {
            tokio::task::block_in_place(|| std::hint::black_box(0));
        }
        t.elapsed().as_secs_f64() * 1e6 / CALLS as f64
    })
    .await
    .unwrap();
    (scan, udf, bip, n)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, out) = (args.first().expect("PLUGIN_DIR").clone(), args.get(1).expect("OUT.json").clone());
    let reps: usize = match args.iter().position(|a| a == "--reps") {
        Some(i) => args[i + 1].parse().expect("--reps N"),
        None => 60,
    };
    let mut s = QlinkSession::new(SessionContext::new());
    let plugin = s.load_plugin(&format!("{dir}/qlink_memtable.so")).unwrap();
    s.register_functions(&plugin).unwrap();
    s.ctx.register_udf(scale_native());
    tables(&mut s, &dir, 1040).await;
    tables(&mut s, &dir, 10_000_000).await;
    assert_eq!(run(&s.ctx, "SELECT * FROM plugin_1040").await, 1040);
    let check = "SELECT sum(x) = (SELECT sum(x) FROM native_10000000) AS same FROM plugin_10000000";
    let b = s.ctx.sql(check).await.unwrap().collect().await.unwrap();
    assert_eq!(datafusion::arrow::util::pretty::pretty_format_batches(&b).unwrap().to_string().matches("true").count(), 1);

    let rows = [
        ("scan_1040_rows", "SELECT * FROM native_1040", "SELECT * FROM plugin_1040", reps * 5),
        ("sum_10m_rows", "SELECT sum(x) FROM native_10000000", "SELECT sum(x) FROM plugin_10000000", reps),
        ("udf_10m_rows", "SELECT sum(scale_native(x, 2.0)) FROM native_10000000", "SELECT sum(scale(x, 2.0)) FROM native_10000000", reps),
    ];
    println!("{:<16} {:>12} {:>12} {:>8}", "DataFusion", "native ms", "qlink ms", "ratio");
    let mut json = Vec::new();
    let mut measured = std::collections::HashMap::new();
    for (name, native, plugin, n) in rows {
        let (a, b) = pair(&s.ctx, native, plugin, n).await;
        measured.insert(name, (a, b));
        println!("{name:<16} {a:>12.3} {b:>12.3} {:>8.3}", b / a);
        json.push(format!("\"{name}\": {{\"native_ms\": {a:.4}, \"qlink_ms\": {b:.4}, \"ratio\": {:.4}}}", b / a));
    }

    // The crossing alone, per batch: how far below the measured overhead a
    // plugin scan or UDF could go with the Arrow C interfaces.
    let (scan_us, udf_us, bip_us, n) = crossing(&s.ctx).await;
    let parts = s.ctx.table("native_10000000").await.unwrap().collect_partitioned().await.unwrap().len().max(1);
    let per = |ms: f64| ms * 1e3 * parts as f64 / n as f64;
    let (sum, udf) = (measured["sum_10m_rows"], measured["udf_10m_rows"]);
    let floor = |(native, _): (f64, f64), us: f64| (native + us * n as f64 / parts as f64 / 1e3) / native;
    println!("\nper batch of 8,192 rows, each partition's thread ({n} batches, {parts} partitions), microseconds:");
    println!("{:<16} {:>10} {:>10} {:>10} {:>14} {:>12}", "", "native", "qlink", "crossing", "ratio floor", "ratio");
    println!(
        "{:<16} {:>10.2} {:>10.2} {:>10.2} {:>14.3} {:>12.3}",
        "sum_10m_rows",
        per(sum.0),
        per(sum.1),
        scan_us,
        floor(sum, scan_us),
        sum.1 / sum.0
    );
    println!(
        "{:<16} {:>10.2} {:>10.2} {:>10.2} {:>14.3} {:>12.3}",
        "udf_10m_rows",
        per(udf.0),
        per(udf.1),
        udf_us,
        floor(udf, udf_us),
        udf.1 / udf.0
    );
    println!("block_in_place, per call: {bip_us:.2} us");
    let crossing_json = format!(
        "\"crossing\": {{\"batches\": {n}, \"partitions\": {parts}, \"scan_c_stream_us_per_batch\": {scan_us:.3}, \"udf_c_data_us_per_batch\": {udf_us:.3}, \"block_in_place_us\": {bip_us:.3}, \"sum_10m_ratio_floor\": {:.4}, \"udf_10m_ratio_floor\": {:.4}}}",
        floor(sum, scan_us),
        floor(udf, udf_us)
    );

    // The same native tables in a session with the plugin's planner.
    let planner = InstalledPlanner::open(&plugin, "topk", &[]).unwrap();
    let state =
        SessionStateBuilder::new().with_default_features().with_query_planner(Arc::new(QlinkQueryPlanner::new(vec![planner]))).build();
    let planned = SessionContext::new_with_state(state);
    for n in ["native_1040", "native_10000000"] {
        planned.register_table(n, s.ctx.table_provider(n).await.unwrap()).unwrap();
    }
    let sort = "SELECT * FROM native_1040 ORDER BY x";
    let topk = "SELECT id FROM native_10000000 ORDER BY x DESC LIMIT 10";
    for q in [sort, topk] {
        let a = s.ctx.sql(q).await.unwrap().collect().await.unwrap();
        let b = planned.sql(q).await.unwrap().collect().await.unwrap();
        assert_eq!(a, b, "{q}: the planner changed the answer");
    }
    let explain = planned.sql(&format!("EXPLAIN {topk}")).await.unwrap().collect().await.unwrap();
    assert!(datafusion::arrow::util::pretty::pretty_format_batches(&explain).unwrap().to_string().contains("TopK(fetch=10)"));
    for (name, q, n) in [("planner_declines_sort_1040", sort, reps * 5), ("planner_topk_10m", topk, reps)] {
        let (a, b) = pair2(&s.ctx, &planned, q, n).await;
        println!("{name:<16} {a:>12.3} {b:>12.3} {:>8.3}", b / a);
        json.push(format!("\"{name}\": {{\"native_ms\": {a:.4}, \"qlink_ms\": {b:.4}, \"ratio\": {:.4}}}", b / a));
    }
    json.push(crossing_json);
    std::fs::write(&out, format!("{{{}}}\n", json.join(", "))).unwrap();
}
