// SPDX-License-Identifier: Apache-2.0
//! REWRITE answers rebuilt by the host: a planner that hands back an exact
//! copy of the whole plan view (built with libqlink's builder) must give the
//! rows DataFusion gives without it, for joins (with keys, extra conditions,
//! outer and semi types), VALUES, aggregates, filters, sorts and limits;
//! a node the host cannot rebuild (a window) fails the query with a clear
//! error naming it.
use std::os::raw::c_int;
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use qlink_datafusion::expr::IrBuilder;
use qlink_datafusion::ffi::*;
use qlink_datafusion::planner::{InstalledPlanner, QlinkQueryPlanner};

/// REWRITE the root with a copy of the view: every expression, then every
/// node, in id order (so each copy gets the id of its original).
unsafe extern "C" fn copy_all(
    _s: *const ql_planner,
    ctx: *const ql_planner_context,
    out: *mut ql_planner_result,
    _e: *mut ql_error,
) -> c_int {
    let view = &*(*ctx).plan;
    let mut b = IrBuilder::new().unwrap();
    for i in 0..view.n_exprs {
        assert_eq!(b.expr(&*view.exprs.add(i as usize)), i);
    }
    for i in 0..view.n_nodes {
        assert_eq!(b.node(&*view.nodes.add(i as usize)), i);
    }
    (*out).rewrite = std::mem::replace(&mut b.finish(view.root).unwrap().0, zeroed());
    (*out).action = QL_PLANNER_REWRITE;
    (*out).node = view.root;
    QL_OK
}

fn table(cols: [&str; 2], rows: &[(i64, i64)]) -> Arc<MemTable> {
    let schema = Arc::new(Schema::new(vec![Field::new(cols[0], DataType::Int64, true), Field::new(cols[1], DataType::Int64, true)]));
    let a = Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>());
    let b = Int64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>());
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(a), Arc::new(b)]).unwrap();
    Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())
}

fn sessions() -> (SessionContext, SessionContext) {
    let mut raw: ql_planner = zeroed();
    raw.struct_size = std::mem::size_of::<ql_planner>() as u32;
    raw.plan = Some(copy_all);
    let planner = InstalledPlanner::new(raw, None, "copy_all");
    let state =
        SessionStateBuilder::new().with_default_features().with_query_planner(Arc::new(QlinkQueryPlanner::new(vec![planner]))).build();
    let copied = SessionContext::new_with_state(state);
    let plain = SessionContext::new();
    for ctx in [&copied, &plain] {
        ctx.register_table("t", table(["k", "x"], &[(1, 10), (2, 20), (2, 21), (3, 30), (5, 50)])).unwrap();
        ctx.register_table("u", table(["k", "y"], &[(1, 4), (2, 6), (2, 7), (4, 8)])).unwrap();
    }
    (copied, plain)
}

async fn pretty(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<String> {
    let b = ctx.sql(sql).await?.collect().await?;
    Ok(datafusion::arrow::util::pretty::pretty_format_batches(&b)?.to_string())
}

#[tokio::test]
async fn a_copied_view_rebuilds_joins_values_and_the_rest() {
    let (copied, plain) = sessions();
    let queries = [
        "SELECT t.k, t.x, u.y FROM t JOIN u ON t.k = u.k WHERE t.x > 10 ORDER BY t.k, t.x, u.y",
        "SELECT t.k, u.y FROM t LEFT JOIN u ON t.k = u.k AND u.y > 5 ORDER BY t.k, u.y",
        "SELECT t.k, u.y FROM t FULL JOIN u ON t.k = u.k ORDER BY t.k, u.y",
        "SELECT t.k, u.k AS uk FROM t JOIN u ON t.k = u.k AND t.x > u.y * 3 ORDER BY t.k, uk",
        "SELECT k FROM t WHERE k IN (SELECT k FROM u) ORDER BY k",
        "SELECT k FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k) ORDER BY k",
        "SELECT n, s FROM (VALUES (1, 'a'), (2, 'b'), (3, NULL)) AS v(n, s) ORDER BY n",
        "SELECT t.k, sum(t.x * u.y) AS p, count(*) AS c FROM t JOIN u ON t.k = u.k GROUP BY t.k ORDER BY t.k",
        "SELECT k, x FROM t ORDER BY x DESC LIMIT 2",
    ];
    for q in queries {
        let want = pretty(&plain, q).await.unwrap();
        let got = pretty(&copied, q).await.unwrap_or_else(|e| panic!("{q}: {e}"));
        assert_eq!(got, want, "{q}");
    }
}

#[tokio::test]
async fn a_node_the_host_cannot_rebuild_is_a_clear_error() {
    let (copied, _) = sessions();
    let err = pretty(&copied, "SELECT k, row_number() OVER (ORDER BY x) AS r FROM t").await.expect_err("windows are not rebuilt");
    let msg = err.to_string();
    assert!(msg.contains("planner rewrite") && msg.contains("cannot be rebuilt"), "{msg}");
}
