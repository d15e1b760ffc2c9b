// SPDX-License-Identifier: Apache-2.0
//! qlink-convert: DataFusion's values and the qlink ABI's, converted both
//! ways, in one place for the two sides that need them: the DataFusion host
//! (`hosts/datafusion`, DataFusion calling plugins) and the Rust plugin SDK
//! (`plugins/rust/sdk`, plugins built on DataFusion answering hosts).
//!
//! - [`types`]: Arrow `DataType`s and their Arrow C format strings.
//! - [`scalars`]: `ScalarValue` and `ql_scalar` (literals, statistics).
//! - [`stats`]: DataFusion `Statistics` and `ql_statistics`.
//! - [`ops`]: DataFusion's binary `Operator`s and `ql_binary_op`.
//! - [`ir`]: a qlink IR expression (qlink/plan.h) as a DataFusion `Expr`;
//!   columns and functions are resolved by the caller ([`ir::Resolver`]).
//! - [`cstrings`], [`intern`]: NUL-terminated copies the ABI's borrowed
//!   structs point into.
//! - [`panics`]: a caught panic's message, for QL_EINTERNAL.
//!
//! Pure functions over borrowed ABI structs: no state beyond the intern
//! table, thread-safe.

pub mod cstrings;
pub mod intern;
pub mod ir;
pub mod ops;
pub mod panics;
pub mod scalars;
pub mod stats;
pub mod types;

pub use cstrings::{CStrings, Strings};
pub use intern::{cstr, intern};
pub use panics::panic_message;
pub use scalars::{scalar_from_ql, scalar_to_ql};
pub use types::{data_type_of_format, format_of, static_format};
