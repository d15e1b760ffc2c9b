//! qlink statistics → DataFusion `Statistics`, so exact row counts and
//! min/max reach DataFusion's pruning and answer `COUNT(*)` without a scan.

use arrow::datatypes::{DataType, Schema, TimeUnit};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};

use crate::ffi::*;

/// Owns a `ql_statistics` a callee filled; releases it on drop.
pub struct OwnedStats(pub ql_statistics);

impl Drop for OwnedStats {
    fn drop(&mut self) {
        if let Some(r) = self.0.release {
            // SAFETY: filled by the callee with its release.
            unsafe { r(&mut self.0) };
        }
    }
}

fn precision<T: std::fmt::Debug + Clone + PartialEq + Eq + PartialOrd>(p: i32, v: T) -> Precision<T> {
    match p {
        QL_PRECISION_EXACT => Precision::Exact(v),
        QL_PRECISION_INEXACT => Precision::Inexact(v),
        _ => Precision::Absent,
    }
}

fn precision_scalar(p: i32, v: Option<ScalarValue>) -> Precision<ScalarValue> {
    match (p, v) {
        (QL_PRECISION_EXACT, Some(v)) => Precision::Exact(v),
        (QL_PRECISION_INEXACT, Some(v)) => Precision::Inexact(v),
        _ => Precision::Absent,
    }
}

/// A `ql_scalar` of a column of type `dt` as a DataFusion scalar.
pub fn scalar_from_ql(s: &ql_scalar, dt: &DataType) -> Option<ScalarValue> {
    if s.format.is_null() {
        return None;
    }
    if s.is_null != 0 {
        return ScalarValue::try_from(dt).ok();
    }
    // SAFETY: the union member is chosen by the type, as types.h specifies.
    unsafe {
        let i = s.value.i64_;
        let u = s.value.u64_;
        let f = s.value.f64_;
        let text = || {
            let b = s.value.bytes;
            if b.data.is_null() {
                return String::new();
            }
            String::from_utf8_lossy(std::slice::from_raw_parts(b.data as *const u8, b.size as usize)).into_owned()
        };
        Some(match dt {
            DataType::Boolean => ScalarValue::Boolean(Some(i != 0)),
            DataType::Int8 => ScalarValue::Int8(Some(i as i8)),
            DataType::Int16 => ScalarValue::Int16(Some(i as i16)),
            DataType::Int32 => ScalarValue::Int32(Some(i as i32)),
            DataType::Int64 => ScalarValue::Int64(Some(i)),
            DataType::UInt8 => ScalarValue::UInt8(Some(u as u8)),
            DataType::UInt16 => ScalarValue::UInt16(Some(u as u16)),
            DataType::UInt32 => ScalarValue::UInt32(Some(u as u32)),
            DataType::UInt64 => ScalarValue::UInt64(Some(u)),
            DataType::Float32 => ScalarValue::Float32(Some(f as f32)),
            DataType::Float64 => ScalarValue::Float64(Some(f)),
            DataType::Utf8 => ScalarValue::Utf8(Some(text())),
            DataType::LargeUtf8 => ScalarValue::LargeUtf8(Some(text())),
            DataType::Utf8View => ScalarValue::Utf8View(Some(text())),
            DataType::Date32 => ScalarValue::Date32(Some(i as i32)),
            DataType::Date64 => ScalarValue::Date64(Some(i)),
            DataType::Timestamp(unit, tz) => match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(Some(i), tz.clone()),
                TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(i), tz.clone()),
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(i), tz.clone()),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(i), tz.clone()),
            },
            DataType::Decimal128(p, sc) => {
                let d = s.value.dec128;
                ScalarValue::Decimal128(Some(((d.hi as i128) << 64) | d.lo as i128), *p, *sc)
            }
            _ => return None,
        })
    }
}

/// Convert statistics over `schema` (the plugin's `n_columns` must match;
/// otherwise the column statistics are treated as unknown).
pub fn to_statistics(s: &ql_statistics, schema: &Schema) -> Statistics {
    let mut out = Statistics::new_unknown(schema);
    out.num_rows = precision(s.num_rows_precision, s.num_rows.max(0) as usize);
    out.total_byte_size = precision(s.total_bytes_precision, s.total_bytes.max(0) as usize);
    if s.columns.is_null() || s.n_columns as usize != schema.fields().len() {
        return out;
    }
    for (i, field) in schema.fields().iter().enumerate() {
        // SAFETY: n_columns entries.
        let c = unsafe { &*s.columns.add(i) };
        let mut cs = ColumnStatistics::new_unknown();
        cs.null_count = precision(c.null_count_precision, c.null_count.max(0) as usize);
        cs.min_value = precision_scalar(c.min_max_precision, scalar_from_ql(&c.min, field.data_type()));
        cs.max_value = precision_scalar(c.min_max_precision, scalar_from_ql(&c.max, field.data_type()));
        cs.distinct_count = precision(c.distinct_count_precision, c.distinct_count.max(0) as usize);
        out.column_statistics[i] = cs;
    }
    out
}
