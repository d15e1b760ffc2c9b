// SPDX-License-Identifier: Apache-2.0
//! qlink_memtable: the Rust benchmark's plugin (`make bench-rust`): a
//! DataFusion `MemTable` and a `ScalarUDF`, exported unchanged, measured
//! against the same objects registered natively in each engine.
//!
//! - table `rows` (option `n`, default 1040): `id BIGINT` 0..n, `x DOUBLE`
//!   (id * 0.5), `label VARCHAR` ('r' || id % 100), in batches of 8,192
//!   rows, built once per n and shared by every open.
//! - `scale(x DOUBLE, k DOUBLE) -> DOUBLE`: x * k.
//! - table `views`: `id BIGINT` 0..6 and `s VARCHAR`, `b BLOB` in
//!   Arrow's view layout (Utf8View, BinaryView), short (inline) and long
//!   values and NULLs, over two batches: what the hosts read when a plugin
//!   sends view arrays (tests/engines).
//! - planner `topk` ([`topk`]): `ORDER BY ... LIMIT k` planned by the
//!   plugin over the input the host planned (tests/engines).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::arrow::array::{ArrayRef, BinaryViewArray, Float64Array, Int64Array, StringArray, StringViewArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{MemTable, TableProvider};
use datafusion::common::cast::as_float64_array;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};
use qlink_plugin::{export_plugin, option, Error, Options, Plugin, Result};

mod topk;

const BATCH: i64 = 8192;
const MAX_ROWS: i64 = 100_000_000;

/// The table's batches for `n` rows (as the benchmark's native side builds
/// them: bench/rust).
fn batches(n: i64) -> Result<(Arc<Schema>, Vec<RecordBatch>)> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, false),
        Field::new("label", DataType::Utf8, false),
    ]));
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let id: ArrayRef = Arc::new(Int64Array::from_iter_values(start..end));
        let x: ArrayRef = Arc::new(Float64Array::from_iter_values((start..end).map(|i| i as f64 * 0.5)));
        let label: ArrayRef = Arc::new(StringArray::from_iter_values((start..end).map(|i| format!("r{}", i % 100))));
        out.push(RecordBatch::try_new(schema.clone(), vec![id, x, label])?);
        start = end;
    }
    Ok((schema, out))
}

fn rows(options: &Options) -> Result<Arc<dyn TableProvider>> {
    let n: i64 = match options.get("n") {
        None => 1040,
        Some(v) => v
            .parse()
            .ok()
            .filter(|n| (0..=MAX_ROWS).contains(n))
            .ok_or_else(|| Error::invalid(format!("option 'n' must be an integer from 0 to {MAX_ROWS}, not {v:?}")))?,
    };
    static BUILT: OnceLock<Mutex<HashMap<i64, Arc<dyn TableProvider>>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = built.get(&n) {
        return Ok(t.clone());
    }
    let (schema, batches) = batches(n)?;
    // One partition per batch group, as many as the engine will read at once.
    let parts = std::thread::available_parallelism().map_or(2, |p| p.get());
    let mut partitions = vec![Vec::new(); parts];
    for (i, b) in batches.into_iter().enumerate() {
        partitions[i % parts].push(b);
    }
    let t: Arc<dyn TableProvider> = Arc::new(MemTable::try_new(schema, partitions)?);
    built.insert(n, t.clone());
    Ok(t)
}

/// Row i of `views`: NULL for i % 3 == 2, a long value (beyond a view's
/// 12 inline bytes) for odd i, a short one otherwise.
fn view_value(i: i64) -> Option<String> {
    match i {
        _ if i % 3 == 2 => None,
        _ if i % 2 == 1 => Some(format!("row {i}: longer than twelve bytes")),
        _ => Some(format!("r{i}")),
    }
}

/// `views`: strings and bytes as view arrays, in two batches.
fn views() -> Result<Arc<dyn TableProvider>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8View, true),
        Field::new("b", DataType::BinaryView, true),
    ]));
    let batch = |ids: std::ops::Range<i64>| -> Result<RecordBatch> {
        let id: ArrayRef = Arc::new(Int64Array::from_iter_values(ids.clone()));
        let s: ArrayRef = Arc::new(ids.clone().map(view_value).collect::<StringViewArray>());
        let b: ArrayRef = Arc::new(ids.map(|i| view_value(i).map(String::into_bytes)).collect::<BinaryViewArray>());
        Ok(RecordBatch::try_new(schema.clone(), vec![id, s, b])?)
    };
    Ok(Arc::new(MemTable::try_new(schema.clone(), vec![vec![batch(0..3)?, batch(3..6)?]])?))
}

/// `scale(x, k) = x * k` over Float64.
fn scale() -> ScalarUDF {
    create_udf(
        "scale",
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

fn plugin() -> Plugin {
    Plugin::new("qlink_memtable", env!("CARGO_PKG_VERSION"))
        .description("The Rust benchmark's in-memory table and UDF")
        .table_with_options("rows", "n rows of (id, x, label)", vec![option("n", "how many rows").default_value("1040")], |o, _| rows(o))
        .table_with_options("views", "strings and bytes as Arrow view arrays", vec![], |_, _| views())
        .scalar_udf(scale())
        .planner("topk", "ORDER BY ... LIMIT k planned in the plugin, over the host's input", Arc::new(topk::TopK))
}

export_plugin!(plugin);
