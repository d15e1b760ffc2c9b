// SPDX-License-Identifier: Apache-2.0
//! DataFusion `ScalarValue` <-> `ql_scalar` (qlink/types.h), for literals
//! in plan views and filters and for statistics' min/max.

use std::os::raw::c_char;

use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;

use super::cstrings::CStrings;
use super::types::{format_of, static_format, unit_char};
use crate::intern::intern;
use qlink_sys::*;

/// A DataFusion scalar as a `ql_scalar` borrowing from `v` (and `strings`).
/// None for values only an Arrow array could carry.
pub fn scalar_to_ql(v: &ScalarValue, strings: &mut impl CStrings) -> Option<ql_scalar> {
    let mut s: ql_scalar = zeroed();
    let dt = v.data_type();
    s.format = match static_format(&dt) {
        Some(f) => f.as_ptr(),
        None => intern(&format_of(&dt)).as_ptr(),
    };
    if v.is_null() {
        s.is_null = 1;
        return Some(s);
    }
    let bytes = |d: &[u8]| ql_scalar_value { bytes: ql_scalar_bytes { data: d.as_ptr() as *const c_char, size: d.len() as i64 } };
    s.value = match v {
        ScalarValue::Boolean(Some(b)) => ql_scalar_value { i64_: *b as i64 },
        ScalarValue::Int8(Some(x)) => ql_scalar_value { i64_: *x as i64 },
        ScalarValue::Int16(Some(x)) => ql_scalar_value { i64_: *x as i64 },
        ScalarValue::Int32(Some(x)) => ql_scalar_value { i64_: *x as i64 },
        ScalarValue::Int64(Some(x)) => ql_scalar_value { i64_: *x },
        ScalarValue::UInt8(Some(x)) => ql_scalar_value { u64_: *x as u64 },
        ScalarValue::UInt16(Some(x)) => ql_scalar_value { u64_: *x as u64 },
        ScalarValue::UInt32(Some(x)) => ql_scalar_value { u64_: *x as u64 },
        ScalarValue::UInt64(Some(x)) => ql_scalar_value { u64_: *x },
        ScalarValue::Float32(Some(x)) => ql_scalar_value { f64_: *x as f64 },
        ScalarValue::Float64(Some(x)) => ql_scalar_value { f64_: *x },
        ScalarValue::Utf8(Some(x)) | ScalarValue::LargeUtf8(Some(x)) | ScalarValue::Utf8View(Some(x)) => bytes(x.as_bytes()),
        ScalarValue::Binary(Some(x)) | ScalarValue::LargeBinary(Some(x)) | ScalarValue::BinaryView(Some(x)) => bytes(x),
        ScalarValue::Date32(Some(x)) => ql_scalar_value { i64_: *x as i64 },
        ScalarValue::Date64(Some(x)) => ql_scalar_value { i64_: *x },
        ScalarValue::TimestampSecond(Some(x), tz)
        | ScalarValue::TimestampMillisecond(Some(x), tz)
        | ScalarValue::TimestampMicrosecond(Some(x), tz)
        | ScalarValue::TimestampNanosecond(Some(x), tz) => {
            if let DataType::Timestamp(u, _) = &dt {
                let f = format!("ts{}:{}", unit_char(u), tz.as_deref().unwrap_or(""));
                s.format = strings.add(&f);
            }
            ql_scalar_value { i64_: *x }
        }
        ScalarValue::Decimal128(Some(x), _, _) => ql_scalar_value { dec128: ql_scalar_dec128 { lo: *x as u64, hi: (*x >> 64) as i64 } },
        _ => return None,
    };
    Some(s)
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
        let raw = || {
            let b = s.value.bytes;
            if b.data.is_null() {
                return Vec::new();
            }
            std::slice::from_raw_parts(b.data as *const u8, b.size as usize).to_vec()
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
            DataType::Binary => ScalarValue::Binary(Some(raw())),
            DataType::LargeBinary => ScalarValue::LargeBinary(Some(raw())),
            DataType::BinaryView => ScalarValue::BinaryView(Some(raw())),
            DataType::Date32 => ScalarValue::Date32(Some(i as i32)),
            DataType::Date64 => ScalarValue::Date64(Some(i)),
            DataType::Timestamp(unit, tz) => match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(Some(i), tz.clone()),
                TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(i), tz.clone()),
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(i), tz.clone()),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(i), tz.clone()),
            },
            DataType::Duration(unit) => match unit {
                TimeUnit::Second => ScalarValue::DurationSecond(Some(i)),
                TimeUnit::Millisecond => ScalarValue::DurationMillisecond(Some(i)),
                TimeUnit::Microsecond => ScalarValue::DurationMicrosecond(Some(i)),
                TimeUnit::Nanosecond => ScalarValue::DurationNanosecond(Some(i)),
            },
            DataType::Decimal128(p, sc) => {
                let d = s.value.dec128;
                ScalarValue::Decimal128(Some(((d.hi as i128) << 64) | d.lo as i128), *p, *sc)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod from_ql_test {
    use arrow::datatypes::{DataType, TimeUnit};
    use datafusion::common::ScalarValue;

    use super::scalar_from_ql;
    use qlink_sys::*;

    /// Durations (i64 in the type's unit) and binaries (bytes) cross, as a
    /// plugin's statistics give them (qlink_zarr: timedelta64 and "|S"
    /// coordinates).
    #[test]
    fn durations_and_binaries() {
        let mut s: ql_scalar = zeroed();
        s.format = c"tDu".as_ptr();
        s.value = ql_scalar_value { i64_: 3 };
        assert_eq!(scalar_from_ql(&s, &DataType::Duration(TimeUnit::Microsecond)), Some(ScalarValue::DurationMicrosecond(Some(3))));
        let bytes = b"ba";
        s.format = c"z".as_ptr();
        s.value = ql_scalar_value { bytes: ql_scalar_bytes { data: bytes.as_ptr() as *const _, size: 2 } };
        assert_eq!(scalar_from_ql(&s, &DataType::Binary), Some(ScalarValue::Binary(Some(b"ba".to_vec()))));
    }
}
