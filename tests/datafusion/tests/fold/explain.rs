// SPDX-License-Identifier: Apache-2.0
//! EXPLAIN and EXPLAIN ANALYZE plan the query under them through the qlink
//! planners, so they show the FoldExec the query really runs (with its
//! children, and with metrics under ANALYZE); and a plugin's zero-argument
//! window function (qlink_sample's `running_count()`) plans and runs.

use std::sync::Arc;

use arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use datafusion::prelude::SessionContext;
use qlink_datafusion::QlinkSession;
use qlink_df_tests::*;

const SAMPLE_PLUGIN: &str = qlink_sys::plugins::SAMPLE;

/// a: 12 rows (s = r / 3, k = r % 3); w: 6 rows (k = r / 2, o = r % 2):
/// the matmul below has 4 x 2 = 8 groups.
const SETUP: [&str; 2] = [
    "CREATE TABLE a AS SELECT value / 3 AS s, value % 3 AS k, CAST(value AS DOUBLE) - 5.5 AS val FROM generate_series(0, 11)",
    "CREATE TABLE w AS SELECT value / 2 AS k, value % 2 AS o, CAST(value AS DOUBLE) + 0.25 AS val FROM generate_series(0, 5)",
];
const MATMUL: &str = "SELECT a.s, w.o, SUM(a.val * w.val) AS t FROM a JOIN w ON a.k = w.k GROUP BY a.s, w.o";

async fn with_tables(fold: bool) -> SessionContext {
    let ctx = session(fold, 2, None);
    for q in SETUP {
        ctx.sql(q).await.unwrap().collect().await.unwrap();
    }
    ctx
}

/// The `plan` column of an EXPLAIN result for rows whose `plan_type`
/// starts with `kind`, joined by newlines.
fn plan_text(batches: &[RecordBatch], kind: &str) -> String {
    let mut out = Vec::new();
    for b in batches {
        let ty = b.column_by_name("plan_type").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
        let plan = b.column_by_name("plan").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
        for i in 0..b.num_rows() {
            if ty.value(i).starts_with(kind) {
                out.push(plan.value(i).to_string());
            }
        }
    }
    out.join("\n")
}

async fn explain(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql).await.unwrap().collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_fold_exec_over_visible_children() {
    let fold = with_tables(true).await;
    let physical = plan_text(&explain(&fold, &format!("EXPLAIN {MATMUL}")).await, "physical_plan");
    assert!(physical.contains("FoldExec"), "EXPLAIN shows the FoldExec the query runs:\n{physical}");
    // The fold's inputs stay DataFusion plans below it (G3), not one opaque node.
    let below = physical.split_once("FoldExec").unwrap().1;
    assert!(below.contains("DataSourceExec"), "the scans under FoldExec are visible:\n{physical}");
    // EXPLAIN agrees with what the query really runs.
    assert!(has_fold(&physical_plan(&fold, MATMUL).await));

    let stock = with_tables(false).await;
    let physical = plan_text(&explain(&stock, &format!("EXPLAIN {MATMUL}")).await, "physical_plan");
    assert!(!physical.contains("FoldExec") && physical.contains("HashJoinExec"), "{physical}");
    // A query the planner declines: EXPLAIN shows DataFusion's own plan.
    let avg = "SELECT a.s, AVG(a.val * w.val) FROM a JOIN w ON a.k = w.k GROUP BY a.s";
    let physical = plan_text(&explain(&fold, &format!("EXPLAIN {avg}")).await, "physical_plan");
    assert!(!physical.contains("FoldExec") && physical.contains("HashJoinExec"), "{physical}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_analyze_shows_fold_exec_with_its_metrics() {
    let fold = with_tables(true).await;
    let analyzed = plan_text(&explain(&fold, &format!("EXPLAIN ANALYZE {MATMUL}")).await, "Plan with Metrics");
    let line = analyzed.lines().find(|l| l.contains("FoldExec")).unwrap_or_else(|| panic!("no FoldExec in:\n{analyzed}"));
    assert!(line.contains("output_rows=8"), "FoldExec ran and counted its 8 groups: {line}");
    assert!(analyzed.split_once("FoldExec").unwrap().1.contains("DataSourceExec"), "{analyzed}");
    // The query itself still gives the same rows with and without the planner.
    let stock = with_tables(false).await;
    let (got, fired) = run(&fold, MATMUL).await.unwrap();
    let (want, _) = run(&stock, MATMUL).await.unwrap();
    assert!(fired);
    assert_same_rows(&rows(&want), &rows(&got), None, "matmul under EXPLAIN ANALYZE's session");
}

async fn physical_plan(ctx: &SessionContext, sql: &str) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
    physical(ctx, sql).await.unwrap()
}

fn i64s(batches: &[RecordBatch], col: usize) -> Vec<i64> {
    let mut out = Vec::new();
    for b in batches {
        let a = b.column(col).as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend((0..a.len()).map(|i| a.value(i)));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_argument_plugin_window_function_runs() {
    let mut s = QlinkSession::new(SessionContext::new());
    let p = s.load_plugin(SAMPLE_PLUGIN).unwrap();
    let names = s.register_functions(&p).unwrap();
    assert!(names.iter().any(|n| n == "running_count"), "{names:?}");
    s.register_table("q", "qlink_sample/series?stop=7").unwrap();

    let b = s
        .ctx
        .sql("SELECT value, running_count() OVER (ORDER BY value) AS rc FROM q ORDER BY value")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(i64s(&b, 0), vec![0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(i64s(&b, 1), vec![1, 2, 3, 4, 5, 6, 7]);

    // Per partition: 0,2,4,6 are even (1..4), 1,3,5 odd (1..3).
    let b = s
        .ctx
        .sql("SELECT value, running_count() OVER (PARTITION BY parity ORDER BY value) AS rc FROM q ORDER BY value")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(i64s(&b, 1), vec![1, 1, 2, 2, 3, 3, 4]);

    // Arguments to a zero-argument function are a planning error, not a crash.
    let err = s.ctx.sql("SELECT running_count(value) OVER () FROM q").await;
    let err = match err {
        Err(e) => e.to_string(),
        Ok(df) => df.collect().await.expect_err("running_count(value) must fail").to_string(),
    };
    assert!(err.contains("running_count"), "{err}");
}
