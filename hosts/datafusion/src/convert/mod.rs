// SPDX-License-Identifier: Apache-2.0
//! Two-way conversions between DataFusion's and the ABI's values, each in one
//! place: types and their Arrow C format strings, scalars, and the C string
//! copies the ABI's borrowed structs point into.

pub mod cstrings;
pub mod scalars;
pub mod types;

pub use cstrings::{CStrings, Strings};
pub use scalars::{scalar_from_ql, scalar_to_ql};
pub use types::{data_type_of_format, format_of, static_format};
