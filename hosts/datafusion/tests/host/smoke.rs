// SPDX-License-Identifier: Apache-2.0
//! First end-to-end check: a plugin table scanned through DataFusion equals
//! the same rows in a native MemTable.
use std::sync::Arc;

use datafusion::arrow::array::{Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use qlink_datafusion::QlinkSession;

const DFTEST: &str = qlink_sys::plugins::DFTEST;

fn grid_batch(rows: usize, cols: usize) -> RecordBatch {
    let fields: Vec<Field> = (0..cols).map(|c| Field::new(format!("c{c}"), DataType::Float64, true)).collect();
    let arrays = (0..cols).map(|c| Arc::new(Float64Array::from_iter_values((0..rows).map(|r| (r * cols + c) as f64))) as _).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

#[tokio::test]
async fn grid_equals_memtable() {
    grid_equals_memtable_body().await;
}

/// On a multi-thread runtime plugin streams are read in block_in_place
/// rather than through a blocking-pool thread and a channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grid_equals_memtable_multi_thread() {
    grid_equals_memtable_body().await;
    let mut s = QlinkSession::new(SessionContext::new());
    s.register_table("p", &format!("{DFTEST}/probe?fail=1&spawn=2")).unwrap();
    let err = s.ctx.sql("SELECT * FROM p").await.unwrap().collect().await.unwrap_err();
    assert!(err.to_string().contains("probe: injected failure after the first batch"), "{err}");
    s.register_table("g", &format!("{DFTEST}/grid?rows=100000&cols=2&batch_rows=1000")).unwrap();
    let b = s.ctx.sql("SELECT * FROM g LIMIT 5").await.unwrap().collect().await.unwrap();
    assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 5, "a stream dropped early is released");
}

/// From a runtime task (not the thread blocked on the runtime, as in the
/// test above), a stream is read in block_in_place: every row arrives once
/// and in order, and an error after a batch arrives after that batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_read_from_a_runtime_task_keeps_order_then_the_error() {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Float64Type;
    use futures::StreamExt;
    let task = tokio::spawn(async {
        let mut s = QlinkSession::new(SessionContext::new());
        s.register_table("g", &format!("{DFTEST}/grid?rows=100000&cols=2&batch_rows=1000")).unwrap();
        let mut stream = s.ctx.sql("SELECT c0 FROM g").await.unwrap().execute_stream().await.unwrap();
        let (mut next, mut batches) = (0.0, 0);
        while let Some(b) = stream.next().await {
            for v in b.unwrap().column(0).as_primitive::<Float64Type>().values() {
                assert_eq!(*v, next);
                next += 2.0;
            }
            batches += 1;
        }
        assert_eq!((next, batches), (200_000.0, 100));
        s.register_table("p", &format!("{DFTEST}/probe?fail=1")).unwrap();
        let mut stream = s.ctx.sql("SELECT * FROM p").await.unwrap().execute_stream().await.unwrap();
        assert_eq!(stream.next().await.unwrap().unwrap().num_rows(), 1);
        let err = stream.next().await.unwrap().unwrap_err();
        assert!(err.to_string().contains("probe: injected failure after the first batch"), "{err}");
        assert!(stream.next().await.is_none());
    });
    task.await.unwrap();
}

async fn grid_equals_memtable_body() {
    let mut s = QlinkSession::new(SessionContext::new());
    s.register_table("t", &format!("{DFTEST}/grid?rows=65&cols=16")).unwrap();
    let b = grid_batch(65, 16);
    let mem = MemTable::try_new(b.schema(), vec![vec![b]]).unwrap();
    s.ctx.register_table("m", Arc::new(mem)).unwrap();
    for q in ["SELECT * FROM {} ORDER BY c0", "SELECT count(*) AS n FROM {}", "SELECT sum(c3) AS s, max(c15) AS m FROM {} WHERE c0 > 100"] {
        let a = s.ctx.sql(&q.replace("{}", "t")).await.unwrap().collect().await.unwrap();
        let m = s.ctx.sql(&q.replace("{}", "m")).await.unwrap().collect().await.unwrap();
        assert_eq!(
            datafusion::arrow::util::pretty::pretty_format_batches(&a).unwrap().to_string(),
            datafusion::arrow::util::pretty::pretty_format_batches(&m).unwrap().to_string(),
            "{q}"
        );
    }
}
