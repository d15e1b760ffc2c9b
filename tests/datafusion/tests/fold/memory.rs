// SPDX-License-Identifier: Apache-2.0
//! A memory limit on the RuntimeEnv: the fold's tables are reserved from
//! DataFusion's memory pool, so a small limit fails the query with
//! DataFusion's ResourcesExhausted error naming FoldExec, everything is
//! given back, and the process (and the session) goes on working.

use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use qlink_df_tests::*;

/// a: 60,000 x 16 (s = r / 16, k = r % 16); w: 16 x 8 — 3,750 x 8 groups.
const SETUP: [&str; 2] = [
    "CREATE TABLE a AS SELECT value / 16 AS s, value % 16 AS k, sin(value) AS val FROM generate_series(0, 59999)",
    "CREATE TABLE w AS SELECT value / 8 AS k, value % 8 AS o, cos(value) AS val FROM generate_series(0, 127)",
];
const MATMUL: &str = "SELECT a.s, w.o, SUM(a.val * w.val) FROM a JOIN w ON a.k = w.k GROUP BY a.s, w.o";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_limit_fails_the_fold_cleanly() {
    let rt = RuntimeEnvBuilder::new().with_memory_limit(256 << 10, 1.0).build_arc().unwrap();
    let ctx = session(true, 2, Some(rt.clone()));
    for q in SETUP {
        ctx.sql(q).await.unwrap().collect().await.unwrap();
    }
    let err = run(&ctx, MATMUL).await.expect_err("a 256 KiB pool cannot hold 30,000 groups");
    let root = err.find_root();
    assert!(matches!(root, DataFusionError::ResourcesExhausted(_)), "not ResourcesExhausted: {err}");
    assert!(err.to_string().contains("FoldExec"), "the error names the consumer: {err}");
    assert_eq!(rt.memory_pool.reserved(), 0, "the failed fold gave its memory back");

    // The process lives on: the same session still folds a small query ...
    let (small, fired) = run(&ctx, "SELECT w.o, SUM(w.val * w2.val) AS t FROM w JOIN w w2 ON w.k = w2.k GROUP BY w.o").await.unwrap();
    assert!(fired);
    assert_eq!(rows(&small).len(), 8);
    // ... and the big one succeeds with room, giving stock DataFusion's rows.
    let big = session(true, 2, None);
    let stock = session(false, 2, None);
    for q in SETUP {
        big.sql(q).await.unwrap().collect().await.unwrap();
        stock.sql(q).await.unwrap().collect().await.unwrap();
    }
    let (got, fired) = run(&big, MATMUL).await.unwrap();
    let (want, _) = run(&stock, MATMUL).await.unwrap();
    assert!(fired);
    let (got, want) = (rows(&got), rows(&want));
    assert_eq!(got.len(), 3750 * 8);
    assert_same_rows(&want, &got, None, "matmul 60,000 x 16 by 16 x 8");
}
