// SPDX-License-Identifier: Apache-2.0
//! Shared helpers of the cross-component tests: sessions with and without
//! the fold planner installed in the DataFusion host, detecting `FoldExec`
//! in a physical plan, and comparing query results as multisets of rows.

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, Float64Array, Int64Array, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use qlink_datafusion::planner::{InstalledPlanner, QlinkQueryPlanner};
use qlink_datafusion::Plugin;

/// Path of the `qlink_fold.so` CMake built for the workspace (qlink-sys).
pub const FOLD_PLUGIN: &str = qlink_sys::plugins::FOLD;

/// The fold plugin, loaded once per process.
pub fn fold_plugin() -> Arc<Plugin> {
    static P: OnceLock<Arc<Plugin>> = OnceLock::new();
    Arc::clone(P.get_or_init(|| Plugin::load(FOLD_PLUGIN).expect("loading qlink_fold.so")))
}

/// A session with `target_partitions` partitions and the given runtime
/// (DataFusion's default when None); with `fold`, the fold planner is
/// installed through the host's query planner.
pub fn session(fold: bool, target_partitions: usize, runtime: Option<Arc<RuntimeEnv>>) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(target_partitions);
    let mut b = SessionStateBuilder::new().with_config(config).with_default_features();
    if let Some(rt) = runtime {
        b = b.with_runtime_env(rt);
    }
    if fold {
        let planner = InstalledPlanner::open(&fold_plugin(), "fold", &[]).expect("opening planner qlink_fold/fold");
        b = b.with_query_planner(Arc::new(QlinkQueryPlanner::new(vec![planner])));
    }
    SessionContext::new_with_state(b.build())
}

/// Whether a node named `FoldExec` is anywhere in the physical plan.
pub fn has_fold(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.name() == "FoldExec" || plan.children().into_iter().any(has_fold)
}

/// Plan `sql` (logical and physical) without executing it.
pub async fn physical(ctx: &SessionContext, sql: &str) -> Result<Arc<dyn ExecutionPlan>> {
    ctx.sql(sql).await?.create_physical_plan().await
}

/// Plan and run `sql`: the batches and whether FoldExec was in the plan.
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<(Vec<RecordBatch>, bool)> {
    let plan = physical(ctx, sql).await?;
    let fired = has_fold(&plan);
    let batches = collect(plan, ctx.task_ctx()).await?;
    Ok((batches, fired))
}

/// One cell: integers (any width) as i64, floats as f64.
#[derive(Clone, Debug)]
pub enum Val {
    Null,
    Int(i64),
    Float(f64),
}

impl Val {
    fn rank(&self) -> u8 {
        match self {
            Val::Null => 0,
            Val::Int(_) => 1,
            Val::Float(_) => 2,
        }
    }
    fn total_cmp(&self, o: &Val) -> Ordering {
        match (self, o) {
            (Val::Int(a), Val::Int(b)) => a.cmp(b),
            (Val::Float(a), Val::Float(b)) => a.total_cmp(b),
            _ => self.rank().cmp(&o.rank()),
        }
    }
}

/// The rows of `batches`, sorted (a canonical form of the multiset).
pub fn rows(batches: &[RecordBatch]) -> Vec<Vec<Val>> {
    let mut out = Vec::new();
    for b in batches {
        let cols: Vec<Vec<Val>> = b.columns().iter().map(|c| column(c.as_ref())).collect();
        for r in 0..b.num_rows() {
            out.push(cols.iter().map(|c| c[r].clone()).collect::<Vec<Val>>());
        }
    }
    out.sort_by(|a, b| a.iter().zip(b).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal));
    out
}

fn column(c: &dyn Array) -> Vec<Val> {
    let dt = c.data_type();
    if dt.is_floating() {
        let f = cast(&arrow::array::make_array(c.to_data()), &DataType::Float64).unwrap();
        let f = f.as_any().downcast_ref::<Float64Array>().unwrap();
        (0..f.len()).map(|i| if f.is_null(i) { Val::Null } else { Val::Float(f.value(i)) }).collect()
    } else if dt.is_integer() {
        let f = cast(&arrow::array::make_array(c.to_data()), &DataType::Int64).unwrap();
        let f = f.as_any().downcast_ref::<Int64Array>().unwrap();
        (0..f.len()).map(|i| if f.is_null(i) { Val::Null } else { Val::Int(f.value(i)) }).collect()
    } else {
        panic!("rows: column type {dt} not compared by these tests")
    }
}

/// Largest relative float difference allowed between stock DataFusion and
/// the fold (the fold's float sums are exactly rounded; DataFusion's are
/// sequential).
pub const REL_TOL: f64 = 1e-9;

/// Compare two sorted row sets: Ok(largest relative float difference) when
/// they are the same multiset of rows (keys and integers exactly, floats
/// within REL_TOL relative, or within REL_TOL of the matching `scale` entry,
/// the sum of |products| of that group, for sums that cancel), else Err
/// naming the first difference.
pub fn compare_rows(a: &[Vec<Val>], b: &[Vec<Val>], scale: Option<&[Vec<Val>]>) -> std::result::Result<f64, String> {
    if a.len() != b.len() {
        return Err(format!("{} rows vs {} rows", a.len(), b.len()));
    }
    let mut worst = 0.0f64;
    for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
        if ra.len() != rb.len() {
            return Err(format!("row {i}: width {} vs {}", ra.len(), rb.len()));
        }
        for (j, (x, y)) in ra.iter().zip(rb).enumerate() {
            let ok = match (x, y) {
                (Val::Null, Val::Null) => true,
                (Val::Int(p), Val::Int(q)) => p == q,
                (Val::Float(p), Val::Float(q)) => {
                    let big = p.abs().max(q.abs());
                    if p != q {
                        worst = worst.max((p - q).abs() / big);
                    }
                    let mut bound = REL_TOL * big;
                    if let Some(Val::Float(s)) = scale.and_then(|s| s.get(i)).and_then(|r| r.get(j)) {
                        bound = bound.max(REL_TOL * s.abs());
                    }
                    p == q || (p - q).abs() <= bound
                }
                _ => false,
            };
            if !ok {
                return Err(format!("row {i} column {j}: {x:?} vs {y:?}\n  row a {ra:?}\n  row b {rb:?}"));
            }
        }
    }
    Ok(worst)
}

/// Panic unless `a` and `b` are the same multiset of rows (`compare_rows`).
pub fn assert_same_rows(a: &[Vec<Val>], b: &[Vec<Val>], scale: Option<&[Vec<Val>]>, what: &str) {
    if let Err(e) = compare_rows(a, b, scale) {
        panic!("{what}: {e}");
    }
}

/// Panic unless `a` and `b` are bit-for-bit the same rows.
pub fn assert_identical_rows(a: &[Vec<Val>], b: &[Vec<Val>], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: {} rows vs {} rows", a.len(), b.len());
    for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
        for (x, y) in ra.iter().zip(rb) {
            let same = match (x, y) {
                (Val::Null, Val::Null) => true,
                (Val::Int(p), Val::Int(q)) => p == q,
                (Val::Float(p), Val::Float(q)) => p.to_bits() == q.to_bits(),
                _ => false,
            };
            assert!(same, "{what}: row {i} differs between runs: {ra:?} vs {rb:?}");
        }
    }
}

/// A small seeded generator (SplitMix64): the tests' cases are the same on
/// every run and every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    /// True with probability p.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}
