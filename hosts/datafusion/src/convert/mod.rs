// SPDX-License-Identifier: Apache-2.0
//! Two-way conversions between DataFusion's and the ABI's values: the
//! shared crate `qlink-convert` (bindings/rust/convert), which the Rust
//! plugin SDK uses in the other direction.

pub use qlink_convert::cstrings;
pub use qlink_convert::scalars;
pub use qlink_convert::types;
pub use qlink_convert::{data_type_of_format, format_of, scalar_from_ql, scalar_to_ql, static_format, CStrings, Strings};
