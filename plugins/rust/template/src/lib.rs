// SPDX-License-Identifier: Apache-2.0
//! A qlink plugin in Rust, to copy: one DataFusion table provider made from
//! options, one scalar UDF and one aggregate UDF, exported unchanged with
//! `qlink-plugin`.
//!
//! Build it (`cargo build --release` in plugins/rust) and load
//! `qlink_template.so` in any host:
//!
//! ```sql
//! -- DuckDB (the qlink extension loaded)
//! SELECT qlink_load('.../qlink_template.so');
//! SELECT n, squared(n) FROM qlink_scan('qlink_template', 'numbers', 'count=3');
//! SELECT int_product(n) FROM qlink_scan('qlink_template', 'numbers', 'count=5');  -- 120
//! ```

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{MemTable, TableProvider};
use datafusion::common::cast::as_int64_array;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{create_udaf, create_udf, Accumulator, AggregateUDF, ColumnarValue, ScalarUDF, Volatility};
use qlink_plugin::{export_plugin, option, Error, Options, Plugin, Result};

/// `numbers`: one Int64 column `n` holding 1..=count.
fn numbers(options: &Options) -> Result<Arc<dyn TableProvider>> {
    let count: i64 = match options.get("count") {
        None => 10,
        Some(v) => v
            .parse()
            .ok()
            .filter(|n| (0..=1 << 30).contains(n))
            .ok_or_else(|| Error::invalid(format!("option 'count' must be an integer from 0 to 2^30, not {v:?}")))?,
    };
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    let column: ArrayRef = Arc::new(Int64Array::from_iter_values(1..=count));
    let batch = RecordBatch::try_new(schema.clone(), vec![column])?;
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

/// `squared(x BIGINT) -> BIGINT`, NULL for NULL, wrapping on overflow.
fn squared() -> ScalarUDF {
    create_udf(
        "squared",
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let x = as_int64_array(&arrays[0])?;
            let out: Int64Array = x.iter().map(|v| v.map(|v| v.wrapping_mul(v))).collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// `int_product(x BIGINT) -> BIGINT`: the product of the non-NULL values,
/// wrapping on overflow; NULL when there are none. (Not `product`: DuckDB
/// has a built-in of that name, which its binder would pick.)
fn int_product() -> AggregateUDF {
    create_udaf(
        "int_product",
        vec![DataType::Int64],
        Arc::new(DataType::Int64),
        Volatility::Immutable,
        Arc::new(|_| Ok(Box::new(Product(None)))),
        Arc::new(vec![DataType::Int64]),
    )
}

/// One group's running product (None: no value seen yet).
#[derive(Debug)]
struct Product(Option<i64>);

impl Product {
    fn fold(&mut self, values: &ArrayRef) -> datafusion::error::Result<()> {
        for v in as_int64_array(values)?.iter().flatten() {
            self.0 = Some(self.0.unwrap_or(1).wrapping_mul(v));
        }
        Ok(())
    }
}

impl Accumulator for Product {
    fn update_batch(&mut self, values: &[ArrayRef]) -> datafusion::error::Result<()> {
        self.fold(&values[0])
    }

    /// Other groups' states: their products, one per row.
    fn merge_batch(&mut self, states: &[ArrayRef]) -> datafusion::error::Result<()> {
        self.fold(&states[0])
    }

    fn state(&mut self) -> datafusion::error::Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Int64(self.0)])
    }

    fn evaluate(&mut self) -> datafusion::error::Result<ScalarValue> {
        Ok(ScalarValue::Int64(self.0))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

fn plugin() -> Plugin {
    Plugin::new("qlink_template", env!("CARGO_PKG_VERSION"))
        .description("A Rust plugin to copy: a table made from options, a scalar UDF and an aggregate UDF")
        .table_with_options(
            "numbers",
            "the integers 1..=count",
            vec![option("count", "how many rows (0 to 2^30)").default_value("10")],
            |options, _session| numbers(options),
        )
        .scalar_udf(squared())
        .aggregate_udf(int_product())
}

export_plugin!(plugin);
