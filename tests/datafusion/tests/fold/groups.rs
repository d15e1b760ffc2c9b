// SPDX-License-Identifier: Apache-2.0
//! A plugin's groups accumulator (qlink_sample's `sum_sq`) driven by the
//! DataFusion host on each of DataFusion's paths, with exact sums: plain
//! two-phase GROUP BY; sorted input, where groups are emitted as they
//! complete (`EmitTo::First`); a partial phase that gives up pre-aggregating
//! and turns rows into states (`convert_to_state`); and a FILTER clause.

use std::sync::Arc;

use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::col;
use datafusion::prelude::{SessionConfig, SessionContext};
use qlink_datafusion::QlinkSession;

const SAMPLE_PLUGIN: &str = qlink_sys::plugins::SAMPLE;
const ROWS: i64 = 600;
const KEYS: i64 = 40;

/// `t(k, v)`: v = 0..ROWS, k = v * KEYS / ROWS (sorted on k), in batches of
/// 7 rows over two partitions.
fn table(sorted: bool) -> MemTable {
    let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false), Field::new("v", DataType::Int64, false)]));
    let batch = |r: std::ops::Range<i64>| {
        let k = Int64Array::from_iter_values(r.clone().map(|v| v * KEYS / ROWS));
        RecordBatch::try_new(schema.clone(), vec![Arc::new(k), Arc::new(Int64Array::from_iter_values(r))]).unwrap()
    };
    let cuts: Vec<i64> = (0..=ROWS).step_by(7).chain([ROWS]).collect();
    let batches: Vec<RecordBatch> = cuts.windows(2).filter(|w| w[0] < w[1]).map(|w| batch(w[0]..w[1])).collect();
    let half = batches.len() / 2;
    let parts = if sorted { vec![batches] } else { vec![batches[..half].to_vec(), batches[half..].to_vec()] };
    let t = MemTable::try_new(schema, parts).unwrap();
    if sorted {
        t.with_sort_order(vec![vec![col("k").sort(true, false)]])
    } else {
        t
    }
}

/// Sum of v * v per key, over the rows `keep` accepts.
fn want(keep: impl Fn(i64) -> bool) -> Vec<(i64, i64)> {
    (0..KEYS).map(|k| (k, (0..ROWS).filter(|v| v * KEYS / ROWS == k && keep(*v)).map(|v| v * v).sum())).collect()
}

async fn sums(config: SessionConfig, sorted: bool, sql: &str) -> (Vec<(i64, i64)>, String) {
    let mut s = QlinkSession::new(SessionContext::new_with_config(config));
    let p = s.load_plugin(SAMPLE_PLUGIN).unwrap();
    s.register_functions(&p).unwrap();
    s.ctx.register_table("t", Arc::new(table(sorted))).unwrap();
    let plan = s.ctx.sql(&format!("EXPLAIN {sql}")).await.unwrap().collect().await.unwrap();
    let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan).unwrap().to_string();
    let batches = s.ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let mut out = Vec::new();
    for b in &batches {
        let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let v = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend((0..b.num_rows()).map(|i| (k.value(i), v.value(i))));
    }
    out.sort();
    (out, plan)
}

fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(2).with_batch_size(8)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_accumulator_in_two_phases() {
    let (got, _) = sums(config(), false, "SELECT k, sum_sq(v) FROM t GROUP BY k").await;
    assert_eq!(got, want(|_| true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_accumulator_emits_groups_of_sorted_input_as_they_complete() {
    let (got, plan) = sums(config().with_target_partitions(1), true, "SELECT k, sum_sq(v) FROM t GROUP BY k").await;
    assert!(plan.contains("ordering_mode=Sorted"), "{plan}");
    assert_eq!(got, want(|_| true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_accumulator_turns_rows_into_states_when_pre_aggregation_is_skipped() {
    let mut c = config();
    let o = c.options_mut();
    o.execution.skip_partial_aggregation_probe_rows_threshold = 1;
    o.execution.skip_partial_aggregation_probe_ratio_threshold = 0.0;
    let (got, _) = sums(c, false, "SELECT k, sum_sq(v) FROM t GROUP BY k").await;
    assert_eq!(got, want(|_| true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_accumulator_takes_only_the_rows_a_filter_keeps() {
    let sql = "SELECT k, sum_sq(v) FILTER (WHERE v % 3 = 0) FROM t GROUP BY k";
    let (got, _) = sums(config(), false, sql).await;
    assert_eq!(got, want(|v| v % 3 == 0));
    let mut c = config();
    c.options_mut().execution.skip_partial_aggregation_probe_rows_threshold = 1;
    c.options_mut().execution.skip_partial_aggregation_probe_ratio_threshold = 0.0;
    let (got, _) = sums(c, false, sql).await;
    assert_eq!(got, want(|v| v % 3 == 0));
}
