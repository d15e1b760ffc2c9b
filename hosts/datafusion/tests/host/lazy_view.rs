// SPDX-License-Identifier: Apache-2.0
//! Lazy plan views (qlink/plan.h `expand`, QL_PLANNER_LAZY_VIEW): a lazy
//! view expanded node by node equals the complete view of the same plan,
//! and the host hands each planner the kind of view it asked for.
use std::os::raw::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use qlink_datafusion::ffi::*;
use qlink_datafusion::planner::{plan_view, plan_view_lazy, InstalledPlanner, QlinkQueryPlanner};

fn tables(ctx: &SessionContext) {
    let t = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false), Field::new("x", DataType::Float64, true)]));
    let u = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("y", DataType::Float64, false),
        Field::new("s", DataType::Utf8, true),
    ]));
    let tb = RecordBatch::try_new(
        Arc::clone(&t),
        vec![Arc::new(Int64Array::from(vec![1, 2, 3])), Arc::new(Float64Array::from(vec![Some(0.5), None, Some(2.0)]))],
    )
    .unwrap();
    let ub = RecordBatch::try_new(
        Arc::clone(&u),
        vec![
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0])),
            Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])),
        ],
    )
    .unwrap();
    ctx.register_table("t", Arc::new(MemTable::try_new(t, vec![vec![tb]]).unwrap())).unwrap();
    ctx.register_table("u", Arc::new(MemTable::try_new(u, vec![vec![ub]]).unwrap())).unwrap();
}

const QUERIES: &[&str] = &[
    "SELECT 1",
    "SELECT k, x * 2 AS x2 FROM t WHERE x > 1 ORDER BY k DESC LIMIT 2",
    "SELECT t.k, SUM(t.x * u.y) FROM t JOIN u ON t.k = u.k GROUP BY t.k",
    "SELECT s, COUNT(*), AVG(y) FROM u WHERE s LIKE 'a%' OR k IN (1, 3) GROUP BY s HAVING COUNT(*) > 0",
    "SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY x) FROM t",
    "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(a, b) UNION ALL SELECT k, s FROM u",
    "SELECT a.k FROM t a LEFT JOIN u b ON a.k = b.k AND a.x < b.y WHERE b.s IS NULL",
    "SELECT CASE WHEN x BETWEEN 0 AND 1 THEN 'low' ELSE 'high' END, CAST(k AS DOUBLE) FROM t",
    "SELECT DISTINCT k FROM u",
    "SELECT k FROM t WHERE k IN (SELECT k FROM u WHERE y > 1)",
];

async fn optimized(ctx: &SessionContext, sql: &str) -> LogicalPlan {
    let state = ctx.state();
    state.optimize(&state.create_logical_plan(sql).await.unwrap()).unwrap()
}

unsafe fn plan_text(view: *const ql_plan_view) -> Result<String, String> {
    let mut out: *mut c_char = std::ptr::null_mut();
    let mut err: ql_error = std::mem::zeroed();
    let st = ql_ir_plan_to_string(view, (*view).root, &mut out, &mut err);
    if st != QL_OK {
        return Err(qlink_datafusion::error::cstr(err.message).to_string());
    }
    let s = std::ffi::CStr::from_ptr(out).to_string_lossy().into_owned();
    libc::free(out as *mut c_void);
    Ok(s)
}

unsafe fn node(view: *const ql_plan_view, i: i32) -> &'static ql_plan_node {
    &*(*view).nodes.add(i as usize)
}

#[tokio::test]
async fn expanded_lazy_view_equals_complete_view() {
    let ctx = SessionContext::new();
    tables(&ctx);
    for sql in QUERIES {
        let plan = optimized(&ctx, sql).await;
        let complete = plan_view(&plan).unwrap();
        let lazy = plan_view_lazy(&plan).unwrap();
        let (c, l) = (complete.view(), lazy.view());
        unsafe {
            assert!((*c).expand.is_none(), "{sql}: a complete view has no expand");
            assert!((*l).expand.is_some(), "{sql}");
            assert_eq!((*l).n_nodes, (*c).n_nodes, "{sql}");
            assert_eq!((*l).n_exprs, 0, "{sql}: a skeleton lowers no expression");
            let mut err: ql_error = std::mem::zeroed();
            assert_eq!(ql_ir_validate(c, &mut err), QL_OK, "{sql}");
            for i in 0..(*c).n_nodes {
                let (cn, ln) = (node(c, i), node(l, i));
                assert_eq!(ln.flags, cn.flags | QL_NODE_UNEXPANDED, "{sql}: node {i}");
                assert_eq!(
                    (ln.kind, ln.n_inputs, ln.join_type, ln.skip, ln.fetch, ln.n_rows),
                    (cn.kind, cn.n_inputs, cn.join_type, cn.skip, cn.fetch, cn.n_rows),
                    "{sql}: node {i}"
                );
                assert_eq!(qlink_datafusion::error::cstr(ln.name), qlink_datafusion::error::cstr(cn.name), "{sql}: node {i}");
                assert!(ln.schema.is_null() && ln.n_exprs == 0 && ln.table.is_null(), "{sql}: node {i}");
            }
            assert!(plan_text(l).unwrap_err().contains("not expanded"), "{sql}");
            // The root alone: the rest stays a skeleton.
            let root = (*l).root;
            assert_eq!(ql_plan_expand(l, root, &mut err), QL_OK, "{sql}");
            assert_eq!(node(l, root).flags, node(c, root).flags, "{sql}");
            assert_eq!(node(l, root).n_exprs, node(c, root).n_exprs, "{sql}");
            for i in 0..(*l).n_nodes {
                if i != root {
                    assert_ne!(node(l, i).flags & QL_NODE_UNEXPANDED, 0, "{sql}: node {i}");
                }
            }
            assert_eq!(ql_plan_expand_all(l, &mut err), QL_OK, "{sql}");
            assert_eq!(ql_ir_validate(l, &mut err), QL_OK, "{sql}: {}", qlink_datafusion::error::cstr(err.message));
            assert_eq!((*l).n_exprs, (*c).n_exprs, "{sql}");
            assert_eq!(plan_text(l).unwrap(), plan_text(c).unwrap(), "{sql}");
            // A bad id is an error naming it; the view is unchanged.
            assert_eq!(ql_plan_expand(l, (*l).n_nodes, &mut err), QL_EINVAL);
            assert!(qlink_datafusion::error::cstr(err.message).contains(&format!("no node {}", (*l).n_nodes)));
        }
    }
}

/// What the test planner saw: (lazy view?, root unexpanded?, root filled by
/// expand?, every other node still unexpanded after that?).
static SEEN: Mutex<Vec<(bool, bool, bool, bool)>> = Mutex::new(Vec::new());

unsafe extern "C" fn look(
    _s: *const ql_planner,
    ctx: *const ql_planner_context,
    out: *mut ql_planner_result,
    error: *mut ql_error,
) -> c_int {
    let v = (*ctx).plan;
    let root = (*v).root;
    let lazy = (*v).expand.is_some();
    let unexpanded = node(v, root).flags & QL_NODE_UNEXPANDED != 0;
    let st = ql_plan_expand(v, root, error);
    let filled = st == QL_OK && !node(v, root).schema.is_null() && node(v, root).flags & QL_NODE_UNEXPANDED == 0;
    let rest = (0..(*v).n_nodes).filter(|&i| i != root).all(|i| node(v, i).flags & QL_NODE_UNEXPANDED != 0);
    SEEN.lock().unwrap().push((lazy, unexpanded, filled, rest));
    (*out).action = QL_PLANNER_DECLINE;
    QL_OK
}

fn planner(flags: u32, struct_size: usize) -> Arc<InstalledPlanner> {
    let raw = ql_planner {
        struct_size: struct_size as u32,
        interest: 0,
        plan: Some(look),
        release: None,
        private_data: std::ptr::null_mut(),
        flags,
        reserved_: 0,
    };
    InstalledPlanner::new(raw, None, "look")
}

#[tokio::test]
async fn each_planner_gets_the_view_it_asked_for() {
    let full = std::mem::size_of::<ql_planner>();
    let before_flags = std::mem::offset_of!(ql_planner, flags);
    for (flags, size, want_lazy) in [
        (QL_PLANNER_LAZY_VIEW, full, true),
        (0, full, false),
        // A planner built before `flags` was appended: its struct is shorter,
        // so whatever lies there is not read.
        (QL_PLANNER_LAZY_VIEW, before_flags, false),
    ] {
        SEEN.lock().unwrap().clear();
        let state = SessionStateBuilder::new()
            .with_default_features()
            .with_query_planner(Arc::new(QlinkQueryPlanner::new(vec![planner(flags, size)])))
            .build();
        let ctx = SessionContext::new_with_state(state);
        tables(&ctx);
        let rows = ctx.sql("SELECT t.k, u.s FROM t JOIN u ON t.k = u.k ORDER BY t.k").await.unwrap().collect().await.unwrap();
        assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
        let seen = SEEN.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "one planner call per query");
        let (lazy, unexpanded, filled, rest) = seen[0];
        assert_eq!(lazy, want_lazy, "flags {flags} size {size}");
        assert_eq!(unexpanded, want_lazy);
        assert!(filled, "expand on the root leaves it complete (a no-op on a complete view)");
        assert_eq!(rest, want_lazy, "expanding the root expands nothing else");
    }
}
