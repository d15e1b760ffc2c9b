// SPDX-License-Identifier: Apache-2.0
//! What the fold planner must leave alone, seen through real DataFusion:
//! each query plans without FoldExec (the physical plan from
//! `create_physical_plan` is walked) and gives stock DataFusion's rows.
//! A positive control shows the same tables do fold a plain SUM(x * y).

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::functions_aggregate::min_max::MaxAccumulator;
use datafusion::logical_expr::{create_udaf, Volatility};
use datafusion::prelude::SessionContext;
use qlink_df_tests::*;

/// a: 12 x 3 (s = r / 3, k = r % 3, val = r - 5.5) with a duplicate and a NULL key;
/// w: 3 x 2 (k = r / 2, o = r % 2, val = r + 0.25).
fn tables(ctx: &SessionContext) {
    let mk = |cols: [&str; 3], a: Vec<Option<i64>>, b: Vec<Option<i64>>, v: Vec<Option<f64>>| {
        let schema = Arc::new(Schema::new(vec![
            Field::new(cols[0], DataType::Int64, true),
            Field::new(cols[1], DataType::Int64, true),
            Field::new(cols[2], DataType::Float64, true),
        ]));
        let arrays: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(a)), Arc::new(Int64Array::from(b)), Arc::new(Float64Array::from(v))];
        let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).unwrap();
        Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())
    };
    let mut s: Vec<Option<i64>> = (0..12).map(|r| Some(r / 3)).collect();
    let mut k: Vec<Option<i64>> = (0..12).map(|r| Some(r % 3)).collect();
    let mut v: Vec<Option<f64>> = (0..12).map(|r| Some(r as f64 - 5.5)).collect();
    s.push(Some(1));
    k.push(Some(2));
    v.push(Some(7.0)); // a duplicate (s, k)
    s.push(Some(2));
    k.push(None);
    v.push(Some(3.0)); // a NULL key
    ctx.register_table("a", mk(["s", "k", "val"], s, k, v)).unwrap();
    let wk: Vec<Option<i64>> = (0..6).map(|r| Some(r / 2)).collect();
    let wo: Vec<Option<i64>> = (0..6).map(|r| Some(r % 2)).collect();
    let wv: Vec<Option<f64>> = (0..6).map(|r| Some(r as f64 + 0.25)).collect();
    ctx.register_table("w", mk(["k", "o", "val"], wk, wo, wv)).unwrap();
}

async fn check(stock: &SessionContext, fold: &SessionContext, sql: &str, want_fold: bool) {
    let (want, stock_fired) = run(stock, sql).await.unwrap_or_else(|e| panic!("{sql}: stock: {e}"));
    let (got, fired) = run(fold, sql).await.unwrap_or_else(|e| panic!("{sql}: with the planner: {e}"));
    assert!(!stock_fired);
    assert_eq!(fired, want_fold, "{sql}: FoldExec in the plan = {fired}, expected {want_fold}");
    let (want, got) = (rows(&want), rows(&got));
    assert!(!want.is_empty(), "{sql}: the query returns rows");
    assert_same_rows(&want, &got, None, sql);
}

fn sessions() -> (SessionContext, SessionContext) {
    let (stock, fold) = (session(false, 2, None), session(true, 2, None));
    tables(&stock);
    tables(&fold);
    (stock, fold)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_sum_of_products_folds() {
    let (stock, fold) = sessions();
    check(&stock, &fold, "SELECT a.s, w.o, SUM(a.val * w.val) FROM a JOIN w ON a.k = w.k GROUP BY a.s, w.o", true).await;
    check(&stock, &fold, "SELECT SUM(w.val * a.val) FROM a JOIN w ON a.k = w.k", true).await;
    // A filter on one input is pushed below the join: still a contraction.
    check(&stock, &fold, "SELECT a.s, SUM(a.val * w.val) FROM a JOIN w ON a.k = w.k WHERE a.s > 0 GROUP BY a.s", true).await;
    // HAVING filters above the aggregate.
    check(&stock, &fold, "SELECT a.s, SUM(a.val * w.val) AS t FROM a JOIN w ON a.k = w.k GROUP BY a.s HAVING SUM(a.val * w.val) > 0", true)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_einsum_aggregates_decline() {
    let (stock, fold) = sessions();
    for agg in [
        "AVG(a.val * w.val)",
        "MIN(a.val * w.val)",
        "MAX(a.val * w.val)",
        "COUNT(a.val * w.val)",
        "SUM(a.val + w.val)",
        "SUM(a.val * a.val)",
        "SUM(a.val * w.val * 2)",
        "SUM(a.val * w.val), COUNT(*)",
        "SUM(a.val * w.val), AVG(a.val * w.val)",
        "SUM(a.val * w.val) FILTER (WHERE a.s > 1)",
    ] {
        let sql = format!("SELECT a.s, {agg} FROM a JOIN w ON a.k = w.k GROUP BY a.s");
        check(&stock, &fold, &sql, false).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outer_and_non_equi_joins_decline() {
    let (stock, fold) = sessions();
    for from in [
        "a LEFT JOIN w ON a.k = w.k",
        "a RIGHT JOIN w ON a.k = w.k",
        "a FULL JOIN w ON a.k = w.k",
        "a JOIN w ON a.k = w.k AND a.val < w.val",
        "a JOIN w ON a.k < w.k",
        "a JOIN w ON a.k = w.k OR a.s = w.o",
        "a, w",
    ] {
        let sql = format!("SELECT a.s, w.o, SUM(a.val * w.val) FROM {from} GROUP BY a.s, w.o");
        check(&stock, &fold, &sql, false).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distinct_declines() {
    let (stock, fold) = sessions();
    check(&stock, &fold, "SELECT a.s, SUM(DISTINCT a.val * w.val) FROM a JOIN w ON a.k = w.k GROUP BY a.s", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contraction_under_an_opaque_node_declines() {
    let (stock, fold) = sessions();
    // Unnest is lowered to an opaque node (QL_NODE_OTHER) above the aggregate.
    let sql = "SELECT unnest(make_array(t.total)) AS u FROM \
               (SELECT a.s, SUM(a.val * w.val) AS total FROM a JOIN w ON a.k = w.k GROUP BY a.s) t";
    check(&stock, &fold, sql, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_udaf_named_sum_is_not_folded() {
    let (stock, fold) = sessions();
    let sql = "SELECT a.s, w.o, sum(a.val * w.val) AS t FROM a JOIN w ON a.k = w.k GROUP BY a.s, w.o";
    // The same query through the built-in computes a sum ...
    check(&stock, &fold, sql, true).await;
    // ... until a session UDAF named `sum` (computing MAX) shadows it: then
    // the planner must not fold, and the rows are the UDAF's maxima.
    let shadow = create_udaf(
        "sum",
        vec![DataType::Float64],
        Arc::new(DataType::Float64),
        Volatility::Immutable,
        Arc::new(|_| Ok(Box::new(MaxAccumulator::try_new(&DataType::Float64)?))),
        Arc::new(vec![DataType::Float64]),
    );
    fold.register_udaf(shadow);
    let (got, fired) = run(&fold, sql).await.unwrap();
    assert!(!fired, "a session UDAF named sum was folded as the built-in");
    let (want, _) = run(&stock, "SELECT a.s, w.o, MAX(a.val * w.val) AS t FROM a JOIN w ON a.k = w.k GROUP BY a.s, w.o").await.unwrap();
    let (builtin, _) = run(&stock, sql).await.unwrap();
    let (got, want, builtin) = (rows(&got), rows(&want), rows(&builtin));
    assert_eq!(got.len(), 8);
    assert_same_rows(&want, &got, None, "shadowing sum = MAX");
    // The UDAF really replaced the built-in (its maxima differ from the sums).
    assert!(format!("{builtin:?}") != format!("{got:?}"));
}
