// SPDX-License-Identifier: Apache-2.0
//! Seeded random einsums over random tables: every generated query gives
//! the same multiset of rows with the fold planner installed as without it,
//! FoldExec fires for every one of them, and two runs with the planner (at
//! different partition counts) are bit-for-bit identical.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use qlink_df_tests::*;

const SEED: u64 = 0x5eed_f01d;
const CASES: usize = 200;

#[derive(Clone, Copy, Debug)]
enum ValType {
    I32,
    I64,
    F32,
    F64,
}

/// One side of the join: columns k1, k2 (join keys), g (group key), val.
struct Side {
    key_type: DataType,
    k1: Vec<Option<i64>>,
    k2: Vec<Option<i64>>,
    g: Vec<Option<i64>>,
    val: Vec<Option<f64>>,
}

fn gen_side(rng: &mut Rng, key_type: &DataType, vt: ValType, key_range: i64) -> Side {
    let n = if rng.chance(0.1) { 0 } else { rng.range(1, 40) as usize };
    let null_p = if rng.chance(0.5) { 0.0 } else { 0.12 };
    let opt = |rng: &mut Rng, v: i64| if rng.chance(null_p) { None } else { Some(v) };
    let mut s = Side { key_type: key_type.clone(), k1: vec![], k2: vec![], g: vec![], val: vec![] };
    let magnitude = *rng.pick(&[1e-3, 1.0, 1e6]);
    for _ in 0..n {
        let k1 = rng.range(0, key_range - 1);
        let k2 = rng.range(0, 2);
        let g = rng.range(-2, 4);
        s.k1.push(opt(rng, k1));
        s.k2.push(opt(rng, k2));
        s.g.push(opt(rng, g));
        let v = match vt {
            ValType::I32 | ValType::I64 => rng.range(-1000, 1000) as f64,
            ValType::F32 => (((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * magnitude) as f32 as f64,
            ValType::F64 => ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * magnitude,
        };
        s.val.push(if rng.chance(null_p) { None } else { Some(v) });
    }
    s
}

fn int_array(t: &DataType, v: &[Option<i64>]) -> ArrayRef {
    match t {
        DataType::Int32 => Arc::new(Int32Array::from(v.iter().map(|x| x.map(|x| x as i32)).collect::<Vec<_>>())),
        _ => Arc::new(Int64Array::from(v.to_vec())),
    }
}

/// The side as a MemTable of `parts` partitions (rows dealt out in runs).
fn table(s: &Side, group_name: &str, vt: ValType, parts: usize) -> Arc<MemTable> {
    let (vdt, vals): (DataType, ArrayRef) = match vt {
        ValType::I32 => (DataType::Int32, Arc::new(Int32Array::from(s.val.iter().map(|x| x.map(|x| x as i32)).collect::<Vec<_>>()))),
        ValType::I64 => (DataType::Int64, Arc::new(Int64Array::from(s.val.iter().map(|x| x.map(|x| x as i64)).collect::<Vec<_>>()))),
        ValType::F32 => (DataType::Float32, Arc::new(Float32Array::from(s.val.iter().map(|x| x.map(|x| x as f32)).collect::<Vec<_>>()))),
        ValType::F64 => (DataType::Float64, Arc::new(Float64Array::from(s.val.clone()))),
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("k1", s.key_type.clone(), true),
        Field::new("k2", s.key_type.clone(), true),
        Field::new(group_name, DataType::Int64, true),
        Field::new("val", vdt, true),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![int_array(&s.key_type, &s.k1), int_array(&s.key_type, &s.k2), int_array(&DataType::Int64, &s.g), vals],
    )
    .unwrap();
    let n = batch.num_rows();
    let chunk = n.div_ceil(parts).max(1);
    let mut partitions = Vec::new();
    for p in 0..parts {
        let start = (p * chunk).min(n);
        let len = chunk.min(n - start);
        partitions.push(vec![batch.slice(start, len)]);
    }
    Arc::new(MemTable::try_new(schema, partitions).unwrap())
}

/// The query with `agg` wrapped around the product (SUM(x) or SUM(ABS(x))).
struct Query {
    text: String,
    scale: String,
}

fn gen_query(rng: &mut Rng) -> Query {
    // (expression in the join, output name)
    let groups: &[&[(&str, &str)]] = &[
        &[],
        &[("a.s", "s")],
        &[("b.o", "o")],
        &[("a.s", "s"), ("b.o", "o")],
        &[("b.o", "o"), ("a.s", "s")],
        &[("a.s", "s"), ("a.k1", "k1")],
        &[("b.k1", "k1")],
        &[("a.k2", "k2"), ("b.o", "o"), ("a.s", "s")],
    ];
    let group = *rng.pick(groups);
    let two_keys = rng.chance(0.3);
    let on = if two_keys { "a.k1 = b.k1 AND a.k2 = b.k2" } else { "a.k1 = b.k1" };
    let product = if rng.chance(0.5) { "a.val * b.val" } else { "b.val * a.val" };
    let order = rng.chance(0.3);
    let shape = rng.below(3);
    let mk = |agg: &str| -> String {
        let (select, from, by): (Vec<String>, String, Vec<String>) = match shape {
            // Directly over the tables.
            0 => (
                group.iter().map(|(e, n)| format!("{e} AS {n}")).collect(),
                format!("l a JOIN r b ON {on}"),
                group.iter().map(|(e, _)| e.to_string()).collect(),
            ),
            // Through projecting subqueries.
            1 => (
                group.iter().map(|(e, n)| format!("{e} AS {n}")).collect(),
                format!("(SELECT k1, k2, s, val FROM l) a JOIN (SELECT val, o, k2, k1 FROM r) b ON {on}"),
                group.iter().map(|(e, _)| e.to_string()).collect(),
            ),
            // The product computed in a projection under the aggregate.
            _ => (
                group.iter().map(|(_, n)| format!("t.{n} AS {n}")).collect(),
                {
                    let mut cols: Vec<String> = group.iter().map(|(e, n)| format!("{e} AS {n}")).collect();
                    cols.push(format!("{product} AS p"));
                    format!("(SELECT {} FROM l a JOIN r b ON {on}) t", cols.join(", "))
                }
                .to_string(),
                group.iter().map(|(_, n)| format!("t.{n}")).collect(),
            ),
        };
        let arg = if shape == 2 { "t.p".to_string() } else { product.to_string() };
        let mut cols = select.clone();
        cols.push(format!("{} AS total", agg.replace("{}", &arg)));
        let mut q = format!("SELECT {} FROM {from}", cols.join(", "));
        if !by.is_empty() {
            q += &format!(" GROUP BY {}", by.join(", "));
        }
        if order && !group.is_empty() {
            q += &format!(" ORDER BY {}", group.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", "));
        }
        q
    };
    Query { text: mk("SUM({})"), scale: mk("SUM(ABS({}))") }
}

fn register(ctx: &SessionContext, l: &Arc<MemTable>, r: &Arc<MemTable>) {
    for (name, t) in [("l", l), ("r", r)] {
        ctx.deregister_table(name).unwrap();
        ctx.register_table(name, Arc::clone(t) as _).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_einsums_match_stock_datafusion() {
    let stock = session(false, 2, None);
    let fold2 = session(true, 2, None);
    let fold3 = session(true, 3, None);
    let mut rng = Rng(SEED);
    let mut fired = 0;
    let (mut empty, mut nulls, mut floats) = (0, 0, 0);
    for case in 0..CASES {
        let key_type = if rng.chance(0.5) { DataType::Int32 } else { DataType::Int64 };
        let vt = *rng.pick(&[ValType::I32, ValType::I64, ValType::F32, ValType::F64]);
        let key_range = rng.range(1, 8);
        let a = gen_side(&mut rng, &key_type, vt, key_range);
        let b = gen_side(&mut rng, &key_type, vt, key_range);
        let q = gen_query(&mut rng);
        let (pa, pb) = (rng.range(1, 3) as usize, rng.range(1, 3) as usize);
        let (l, r) = (table(&a, "s", vt, pa), table(&b, "o", vt, pb));
        empty += (a.k1.is_empty() || b.k1.is_empty()) as usize;
        nulls += (a.k1.iter().chain(&b.k1).any(|k| k.is_none()) || a.val.iter().chain(&b.val).any(|v| v.is_none())) as usize;
        let floats_here = matches!(vt, ValType::F32 | ValType::F64);
        floats += floats_here as usize;
        for ctx in [&stock, &fold2, &fold3] {
            register(ctx, &l, &r);
        }
        let what = format!("case {case} ({vt:?}, keys {key_type}): {}", q.text);
        let (want, stock_fired) = run(&stock, &q.text).await.unwrap_or_else(|e| panic!("{what}: stock: {e}"));
        assert!(!stock_fired, "{what}: FoldExec without the planner");
        let (got, did_fold) = run(&fold2, &q.text).await.unwrap_or_else(|e| panic!("{what}: fold: {e}"));
        let (again, _) = run(&fold3, &q.text).await.unwrap_or_else(|e| panic!("{what}: fold, 3 partitions: {e}"));
        // Float sums that cancel are compared against the sum of |products|.
        let scale =
            if floats_here { rows(&run(&stock, &q.scale).await.unwrap_or_else(|e| panic!("{what}: scale: {e}")).0) } else { Vec::new() };
        assert!(did_fold, "{what}: the planner did not fold");
        fired += did_fold as usize;
        let (want, got, again) = (rows(&want), rows(&got), rows(&again));
        assert_same_rows(&want, &got, Some(&scale), &what);
        assert_identical_rows(&got, &again, &what);
    }
    assert_eq!(fired, CASES);
    // The generator really produced the interesting inputs.
    assert!(empty >= 10 && nulls >= 50 && floats >= 50, "empty {empty}, nulls {nulls}, floats {floats}");
}
