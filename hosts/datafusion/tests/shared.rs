// SPDX-License-Identifier: Apache-2.0
//! Shared subqueries (qlink_datafusion::shared): a subquery used twice runs
//! once, with the same rows as DataFusion's own inlining; what may differ
//! between references, or is used once, stays inlined.
use std::sync::Arc;

use datafusion::arrow::array::Int64Array;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{collect, displayable, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use qlink_datafusion::planner::QlinkQueryPlanner;
use qlink_datafusion::shared::{share_repeated_subplans, ShareRepeatedSubplans, SharedSubplanNode};

/// A session as qlink's tools build it: the rule and qlink's planner.
fn shared_ctx(memory_limit: Option<usize>) -> SessionContext {
    let mut rt = RuntimeEnvBuilder::new();
    if let Some(limit) = memory_limit {
        rt = rt.with_memory_limit(limit, 1.0);
    }
    let state = SessionStateBuilder::new()
        .with_config(SessionConfig::new().with_target_partitions(2))
        .with_runtime_env(rt.build_arc().unwrap())
        .with_default_features()
        .with_analyzer_rule(Arc::new(ShareRepeatedSubplans))
        .with_query_planner(Arc::new(QlinkQueryPlanner::new(vec![])))
        .build();
    SessionContext::new_with_state(state)
}

fn plain_ctx() -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2))
}

async fn setup(ctx: &SessionContext) {
    ctx.sql("CREATE TABLE t(g BIGINT, x BIGINT) AS VALUES (1, 10), (2, 20), (1, 30), (3, 40), (2, 50), (3, 60)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
}

async fn run(ctx: &SessionContext, sql: &str) -> (String, Arc<dyn ExecutionPlan>) {
    let df = ctx.sql(sql).await.unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    (pretty_format_batches(&batches).unwrap().to_string(), plan)
}

/// (name, references) of every SharedSubplanExec in `plan`.
fn shared_nodes(plan: &Arc<dyn ExecutionPlan>) -> Vec<String> {
    let text = displayable(plan.as_ref()).indent(false).to_string();
    text.lines()
        .filter(|l| !l.trim_start().starts_with('|'))
        .filter_map(|l| l.trim().strip_prefix("SharedSubplanExec: ").map(str::to_string))
        .collect()
}

/// Rows from the shared session equal DataFusion's own; the shared nodes.
async fn same_rows(sql: &str) -> Vec<String> {
    let (shared, plain) = (shared_ctx(None), plain_ctx());
    setup(&shared).await;
    setup(&plain).await;
    let (want, _) = run(&plain, sql).await;
    let (got, plan) = run(&shared, sql).await;
    assert_eq!(got, want, "{sql}");
    shared_nodes(&plan)
}

const TWICE: &str = "WITH s AS (SELECT g, SUM(x) AS total FROM t GROUP BY g) \
     SELECT a.g, a.total, b.total AS again FROM s a JOIN s b ON a.g = b.g ORDER BY a.g";

#[tokio::test]
async fn cte_used_twice_runs_once() {
    let nodes = same_rows(TWICE).await;
    // Both references are the same node (the plan shows it under each join side).
    assert_eq!(nodes, vec!["name=s, references=2".to_string(); 2]);
    let (shared, _) = (shared_ctx(None), ());
    setup(&shared).await;
    let (rows, plan) = run(&shared, TWICE).await;
    // EXPLAIN VERBOSE shows the subquery's plan under each reference.
    let text = displayable(plan.as_ref()).indent(true).to_string();
    assert!(text.lines().any(|l| l.trim_start().starts_with("| ") && l.contains("AggregateExec")), "{text}");
    assert_eq!(
        rows,
        "+---+-------+-------+\n| g | total | again |\n+---+-------+-------+\n| 1 | 40    | 40    |\n| 2 | 70    | 70    |\n| 3 | 100   | 100   |\n+---+-------+-------+"
    );
}

#[tokio::test]
async fn cte_used_once_stays_inlined() {
    let nodes = same_rows("WITH s AS (SELECT g, SUM(x) AS total FROM t GROUP BY g) SELECT * FROM s ORDER BY g").await;
    assert!(nodes.is_empty(), "{nodes:?}");
}

#[tokio::test]
async fn scans_alone_stay_inlined() {
    let nodes = same_rows("WITH s AS (SELECT g, x FROM t WHERE x > 15) SELECT a.g, b.x FROM s a JOIN s b ON a.x = b.x ORDER BY 1, 2").await;
    assert!(nodes.is_empty(), "{nodes:?}");
}

#[tokio::test]
async fn volatile_cte_stays_inlined() {
    let ctx = shared_ctx(None);
    setup(&ctx).await;
    let sql = "WITH s AS (SELECT g, SUM(x) + random() AS r FROM t GROUP BY g) \
               SELECT a.g FROM s a JOIN s b ON a.g = b.g ORDER BY a.g";
    let (_, plan) = run(&ctx, sql).await;
    assert!(shared_nodes(&plan).is_empty());
}

#[tokio::test]
async fn inner_cte_used_by_one_shared_cte_is_not_kept_twice() {
    // `inner` is used once, by `outer`, which is used twice: only `outer` is kept.
    let nodes = same_rows(
        "WITH inner_s AS (SELECT g, SUM(x) AS total FROM t GROUP BY g), \
              outer_s AS (SELECT i.g, i.total * 2 AS doubled FROM inner_s i JOIN t ON t.g = i.g) \
         SELECT a.g, SUM(a.doubled + b.doubled) AS s FROM outer_s a JOIN outer_s b ON a.g = b.g GROUP BY a.g ORDER BY a.g",
    )
    .await;
    assert_eq!(nodes, vec!["name=outer_s, references=2".to_string(); 2]);
}

#[tokio::test]
async fn nested_ctes_each_shared() {
    let nodes = same_rows(
        "WITH a AS (SELECT g, SUM(x) AS s FROM t GROUP BY g), \
              b AS (SELECT p.g, p.s + q.s AS s FROM a p JOIN a q ON p.g = q.g) \
         SELECT x.g, x.s, y.s AS s2 FROM b x JOIN b y ON x.g = y.g ORDER BY x.g",
    )
    .await;
    assert_eq!(nodes, vec!["name=b, references=2".to_string(); 2]);
}

#[tokio::test]
async fn recursive_query_is_left_alone() {
    let nodes = same_rows(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5), \
              s AS (SELECT g, SUM(x) AS total FROM t GROUP BY g) \
         SELECT a.g, COUNT(*) AS c FROM s a JOIN s b ON a.g = b.g JOIN n ON n.i = a.g GROUP BY a.g ORDER BY a.g",
    )
    .await;
    assert!(nodes.is_empty(), "{nodes:?}");
}

/// A subquery that refers to the row outside it has one answer per row:
/// subquery expressions are left as they are.
#[tokio::test]
async fn correlated_subqueries_are_left_alone() {
    let ctx = plain_ctx();
    setup(&ctx).await;
    let sql = "SELECT t1.g FROM t t1 WHERE EXISTS (SELECT 1 FROM \
                 (SELECT g, SUM(x) AS s FROM t WHERE t.g = t1.g GROUP BY g) a JOIN \
                 (SELECT g, SUM(x) AS s FROM t WHERE t.g = t1.g GROUP BY g) b ON a.g = b.g)";
    let plan = ctx.state().create_logical_plan(sql).await.unwrap();
    assert!(!share_repeated_subplans(plan, false).unwrap().transformed);
}

#[tokio::test]
async fn a_plan_runs_twice_with_the_same_rows() {
    let ctx = shared_ctx(None);
    setup(&ctx).await;
    let (first, plan) = run(&ctx, TWICE).await;
    let again = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    assert_eq!(pretty_format_batches(&again).unwrap().to_string(), first);
    // reset_state forgets the kept batches; the rows are the same after it.
    let reset = datafusion::physical_plan::execution_plan::reset_plan_states(Arc::clone(&plan)).unwrap();
    let third = collect(reset, ctx.task_ctx()).await.unwrap();
    assert_eq!(pretty_format_batches(&third).unwrap().to_string(), first);
}

#[tokio::test]
async fn kept_rows_are_held_against_the_memory_pool() {
    let ctx = shared_ctx(Some(64 * 1024));
    let sql = "WITH s AS (SELECT v % 1000 AS k, COUNT(*) AS c, MAX(v) AS m FROM generate_series(1, 200000) AS g(v) GROUP BY v % 1000) \
               SELECT COUNT(*) FROM s a JOIN s b ON a.k = b.k";
    let err = ctx.sql(sql).await.unwrap().collect().await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("Resources exhausted"), "{text}");
    // Without a limit, the same statement answers.
    let ctx = shared_ctx(None);
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let n = batches[0].column(0).as_any().downcast_ref::<Int64Array>().unwrap().value(0);
    assert_eq!(n, 1000);
}

/// The optimized plan DataFusion hands a planner: common subexpressions
/// are numbered across the whole plan, so copies differ in those names.
#[tokio::test]
async fn optimized_copies_differing_in_common_expression_names_are_shared() {
    let ctx = plain_ctx();
    setup(&ctx).await;
    let sql = "WITH s AS (SELECT g, SUM((x + 1) * (x + 1)) AS a, SUM((x + 1) * (x + 1) + 2) AS b FROM t GROUP BY g) \
               SELECT p.g, p.a + q.b AS ab, p.b - q.a AS ba FROM s p JOIN s q ON p.g = q.g ORDER BY p.g";
    let plan = ctx.sql(sql).await.unwrap().into_optimized_plan().unwrap();
    let text = plan.display_indent().to_string();
    assert!(text.contains("__common_expr_1") && text.contains("__common_expr_2"), "{text}");
    let shared = share_repeated_subplans(plan.clone(), true).unwrap();
    assert!(shared.transformed);
    let mut bodies = Vec::new();
    shared
        .data
        .apply(|n| {
            if let LogicalPlan::Extension(e) = n {
                if let Some(s) = e.node.as_any().downcast_ref::<SharedSubplanNode>() {
                    bodies.push(Arc::as_ptr(&s.body) as usize);
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
    // Planned by qlink's planner, the shared plan gives DataFusion's rows.
    let want = pretty_format_batches(&ctx.sql(sql).await.unwrap().collect().await.unwrap()).unwrap().to_string();
    let planner = QlinkQueryPlanner::new(vec![]);
    let state = ctx.state();
    let physical = datafusion::execution::context::QueryPlanner::create_physical_plan(&planner, &shared.data, &state).await.unwrap();
    let got = collect(physical, ctx.task_ctx()).await.unwrap();
    assert_eq!(pretty_format_batches(&got).unwrap().to_string(), want);
}

/// Different subqueries under the same CTE name are told apart.
#[tokio::test]
async fn same_alias_different_subqueries_are_not_merged() {
    let nodes = same_rows(
        "SELECT a.g, a.total, b.total AS other FROM \
           (SELECT g, SUM(x) AS total FROM t GROUP BY g) a JOIN \
           (SELECT g, SUM(x) + 1 AS total FROM t GROUP BY g) b ON a.g = b.g ORDER BY a.g",
    )
    .await;
    assert!(nodes.is_empty(), "{nodes:?}");
}
