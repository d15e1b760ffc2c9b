// SPDX-License-Identifier: Apache-2.0
//! Arrow `DataType` <-> Arrow C format strings (the Arrow C Data Interface's
//! format grammar, as qlink's ABI carries types in `ql_scalar.format`,
//! signatures and plan-view expressions).

use arrow::datatypes::{DataType, TimeUnit};

use qlink_sys::*;

/// The Arrow C format string of the common types, without allocating.
pub fn static_format(dt: &DataType) -> Option<&'static std::ffi::CStr> {
    Some(match dt {
        DataType::Null => c"n",
        DataType::Boolean => c"b",
        DataType::Int8 => c"c",
        DataType::UInt8 => c"C",
        DataType::Int16 => c"s",
        DataType::UInt16 => c"S",
        DataType::Int32 => c"i",
        DataType::UInt32 => c"I",
        DataType::Int64 => c"l",
        DataType::UInt64 => c"L",
        DataType::Float16 => c"e",
        DataType::Float32 => c"f",
        DataType::Float64 => c"g",
        DataType::Utf8 => c"u",
        DataType::LargeUtf8 => c"U",
        DataType::Utf8View => c"vu",
        DataType::Binary => c"z",
        DataType::LargeBinary => c"Z",
        DataType::BinaryView => c"vz",
        DataType::Date32 => c"tdD",
        DataType::Date64 => c"tdm",
        _ => return None,
    })
}

/// Arrow C format string of a type (the Arrow C Data Interface's).
pub fn format_of(dt: &DataType) -> String {
    if let Some(f) = static_format(dt) {
        return f.to_string_lossy().into_owned();
    }
    match dt {
        // Arrow's format, without exporting a schema to read it (casts to
        // decimals are common: TPC-H's arithmetic is decimal).
        DataType::Decimal128(p, s) => format!("d:{p},{s}"),
        _ => match ArrowSchema::try_from(dt) {
            Ok(s) => s.format().to_string(),
            Err(_) => "n".into(),
        },
    }
}

pub(crate) fn unit_char(u: &TimeUnit) -> char {
    match u {
        TimeUnit::Second => 's',
        TimeUnit::Millisecond => 'm',
        TimeUnit::Microsecond => 'u',
        TimeUnit::Nanosecond => 'n',
    }
}

/// An Arrow C format string as a DataType (through Arrow's own importer).
pub fn data_type_of_format(f: &str) -> Option<DataType> {
    let s = ArrowSchema::try_new(f, vec![], None).ok()?;
    DataType::try_from(&s).ok()
}

#[cfg(test)]
mod format_test {
    use arrow::datatypes::DataType;

    use super::format_of;
    use qlink_sys::ArrowSchema;

    /// The decimal shortcut writes Arrow's own format string.
    #[test]
    fn decimal_format_is_arrows() {
        for dt in [DataType::Decimal128(15, 2), DataType::Decimal128(38, -3), DataType::Decimal128(1, 0), DataType::Decimal256(40, 4)] {
            assert_eq!(format_of(&dt), ArrowSchema::try_from(&dt).unwrap().format(), "{dt}");
        }
    }
}
