// SPDX-License-Identifier: Apache-2.0
//! DataFusion plans handed to plugins (planner children, `export_host_plan`)
//! answer `get_statistics` with what DataFusion knows about them: row
//! counts, byte sizes and per-column null count / min / max / distinct
//! count, each with its exactness.
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use datafusion::prelude::SessionContext;
use qlink_datafusion::error::cstr;
use qlink_datafusion::exec::export_host_plan;
use qlink_datafusion::ffi::*;

/// Call the exported plan's get_statistics; the statistics and the status.
fn stats_of(plan: Arc<dyn ExecutionPlan>, partition: i64) -> (ql_statistics, i32, String) {
    let mut raw = export_host_plan(plan, None);
    let mut s: ql_statistics = zeroed();
    s.struct_size = std::mem::size_of::<ql_statistics>() as u32;
    let mut err = qlink_datafusion::error::ErrorSlot::new();
    let get = raw.get_statistics.expect("host plans have get_statistics");
    let st = unsafe { get(&raw, partition, &mut s, err.ptr()) };
    let msg = if st == QL_OK { String::new() } else { err.message() };
    unsafe { raw.release.unwrap()(&mut raw) };
    (s, st, msg)
}

fn columns(s: &ql_statistics) -> &[ql_column_statistics] {
    unsafe { std::slice::from_raw_parts(s.columns, s.n_columns as usize) }
}

fn release(mut s: ql_statistics) {
    let r = s.release.expect("statistics carry release");
    unsafe { r(&mut s) };
    assert!(s.release.is_none() && s.columns.is_null(), "release clears the struct");
}

fn text(sc: &ql_scalar) -> String {
    let b = unsafe { sc.value.bytes };
    String::from_utf8(unsafe { std::slice::from_raw_parts(b.data as *const u8, b.size as usize) }.to_vec()).unwrap()
}

async fn memtable_ctx() -> SessionContext {
    let ctx = SessionContext::new();
    let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("name", DataType::Utf8, true)]));
    let b = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3), None, Some(5)])),
            Arc::new(StringArray::from(vec![Some("a"), Some("b"), Some("c"), Some("d"), None])),
        ],
    )
    .unwrap();
    ctx.register_table("t", Arc::new(MemTable::try_new(schema, vec![vec![b]]).unwrap())).unwrap();
    ctx
}

#[tokio::test]
async fn memtable_scan_exports_exact_row_and_null_counts() {
    let ctx = memtable_ctx().await;
    let plan = ctx.sql("SELECT k, name FROM t").await.unwrap().create_physical_plan().await.unwrap();
    let (s, st, msg) = stats_of(plan, -1);
    assert_eq!(st, QL_OK, "{msg}");
    assert_eq!(s.struct_size as usize, std::mem::size_of::<ql_statistics>());
    assert_eq!((s.num_rows_precision, s.num_rows), (QL_PRECISION_EXACT, 5));
    assert_eq!(s.n_columns, 2);
    let c = columns(&s);
    assert_eq!((c[0].null_count_precision, c[0].null_count), (QL_PRECISION_EXACT, 2));
    assert_eq!((c[1].null_count_precision, c[1].null_count), (QL_PRECISION_EXACT, 1));
    // MemTable knows no min/max or distinct counts: reported as absent.
    for col in c {
        assert_eq!(col.min_max_precision, QL_PRECISION_ABSENT);
        assert_eq!(col.distinct_count_precision, QL_PRECISION_ABSENT);
    }
    release(s);
}

#[tokio::test]
async fn filter_statistics_come_from_the_walk_over_its_input() {
    // FilterExec derives its figures from its input's (DataFusion's
    // StatisticsContext); the exported plan reports the estimate as inexact
    // rather than nothing.
    let ctx = memtable_ctx().await;
    let plan = ctx.sql("SELECT k FROM t WHERE k > 2").await.unwrap().create_physical_plan().await.unwrap();
    let (s, st, msg) = stats_of(plan, -1);
    assert_eq!(st, QL_OK, "{msg}");
    assert_eq!(s.num_rows_precision, QL_PRECISION_INEXACT);
    assert!(s.num_rows <= 5);
    assert_eq!(s.n_columns, 1);
    release(s);
}

/// A leaf with fixed statistics: every kind of figure and exactness.
#[derive(Debug)]
struct Fixed {
    schema: SchemaRef,
    props: Arc<PlanProperties>,
    stats: Statistics,
}

impl Fixed {
    fn new() -> Fixed {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("l", DataType::List(Arc::new(Field::new("item", DataType::Int64, true))), true),
            Field::new("k", DataType::Int64, true),
        ]));
        let props = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(2),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        let col = |nulls: Precision<usize>, min: Precision<ScalarValue>, max: Precision<ScalarValue>, distinct: Precision<usize>| {
            let mut c = ColumnStatistics::new_unknown();
            c.null_count = nulls;
            c.min_value = min;
            c.max_value = max;
            c.distinct_count = distinct;
            c
        };
        let stats = Statistics {
            num_rows: Precision::Exact(1040),
            total_byte_size: Precision::Inexact(8320),
            column_statistics: vec![
                col(
                    Precision::Exact(0),
                    Precision::Exact(ScalarValue::Float64(Some(-1.5))),
                    Precision::Exact(ScalarValue::Float64(Some(99.25))),
                    Precision::Exact(65),
                ),
                col(
                    Precision::Inexact(3),
                    Precision::Inexact(ScalarValue::Utf8(Some("apple".into()))),
                    Precision::Exact(ScalarValue::Utf8(Some("pear".into()))),
                    Precision::Absent,
                ),
                // A list min/max cannot cross as a ql_scalar: absent.
                col(
                    Precision::Absent,
                    Precision::Exact(ScalarValue::List(ScalarValue::new_list_nullable(&[ScalarValue::Int64(Some(1))], &DataType::Int64))),
                    Precision::Exact(ScalarValue::List(ScalarValue::new_list_nullable(&[ScalarValue::Int64(Some(2))], &DataType::Int64))),
                    Precision::Inexact(7),
                ),
                // Only a max: min and max cross together, so both are absent.
                col(Precision::Exact(1), Precision::Absent, Precision::Exact(ScalarValue::Int64(Some(9))), Precision::Absent),
            ],
        };
        Fixed { schema, props: Arc::new(props), stats }
    }
}

impl DisplayAs for Fixed {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Fixed")
    }
}

impl ExecutionPlan for Fixed {
    fn name(&self) -> &str {
        "Fixed"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
    fn with_new_children(self: Arc<Self>, _c: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }
    fn execute(&self, _p: usize, _c: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        unreachable!("only statistics are read")
    }
    #[allow(deprecated)]
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        match partition {
            None => Ok(Arc::new(self.stats.clone())),
            Some(_) => Ok(Arc::new(Statistics::new_unknown(&self.schema))),
        }
    }
}

#[test]
fn every_figure_and_exactness_crosses() {
    let plan: Arc<dyn ExecutionPlan> = Arc::new(Fixed::new());
    let (s, st, msg) = stats_of(Arc::clone(&plan), -1);
    assert_eq!(st, QL_OK, "{msg}");
    assert_eq!((s.num_rows_precision, s.num_rows), (QL_PRECISION_EXACT, 1040));
    assert_eq!((s.total_bytes_precision, s.total_bytes), (QL_PRECISION_INEXACT, 8320));
    assert_eq!(s.n_columns, 4);
    let c = columns(&s);

    assert_eq!((c[0].null_count_precision, c[0].null_count), (QL_PRECISION_EXACT, 0));
    assert_eq!(c[0].min_max_precision, QL_PRECISION_EXACT);
    assert_eq!(cstr(c[0].min.format), "g");
    assert_eq!(unsafe { (c[0].min.value.f64_, c[0].max.value.f64_) }, (-1.5, 99.25));
    assert_eq!((c[0].distinct_count_precision, c[0].distinct_count), (QL_PRECISION_EXACT, 65));

    assert_eq!((c[1].null_count_precision, c[1].null_count), (QL_PRECISION_INEXACT, 3));
    assert_eq!(c[1].min_max_precision, QL_PRECISION_INEXACT, "one inexact bound makes the pair inexact");
    assert_eq!(cstr(c[1].min.format), "u");
    assert_eq!((text(&c[1].min), text(&c[1].max)), ("apple".to_string(), "pear".to_string()));
    assert_eq!(c[1].distinct_count_precision, QL_PRECISION_ABSENT);

    assert_eq!(c[2].null_count_precision, QL_PRECISION_ABSENT);
    assert_eq!(c[2].min_max_precision, QL_PRECISION_ABSENT);
    assert_eq!((c[2].distinct_count_precision, c[2].distinct_count), (QL_PRECISION_INEXACT, 7));

    assert_eq!((c[3].null_count_precision, c[3].null_count), (QL_PRECISION_EXACT, 1));
    assert_eq!(c[3].min_max_precision, QL_PRECISION_ABSENT);
    release(s);

    // One partition: what the plan says for it (unknown here).
    let (s, st, msg) = stats_of(Arc::clone(&plan), 1);
    assert_eq!(st, QL_OK, "{msg}");
    assert_eq!(s.num_rows_precision, QL_PRECISION_ABSENT);
    assert_eq!(s.n_columns, 4);
    release(s);

    // A partition the plan does not have is a clear error.
    let (_s, st, msg) = stats_of(plan, 2);
    assert_eq!(st, QL_EINVAL);
    assert!(msg.contains("partition 2 out of range"), "{msg}");
}
