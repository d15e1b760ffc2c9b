// SPDX-License-Identifier: Apache-2.0
//! qlink objects for datafusion-ffi 55.2.0 consumers (datafusion-python
//! 55.0.0's capsule protocol, or any Rust host importing those structs).
//!
//! - `table`: a `QlinkTableProvider` as an `FFI_TableProvider`, through a
//!   `#[repr(C)]` mirror (`mirror`) filled with qlink's own scan: no
//!   `ForeignSession` and no `TaskContext` rebuilt per scan or per execute;
//!   filters decode against built-ins of this library (`filters`), the
//!   consumer's functions fetched only on demand;
//! - `exec`: the scan's `FFI_ExecutionPlan`, whose `execute` runs with the
//!   provider's task context;
//! - `functions`: scalar/aggregate/window functions and planners through
//!   datafusion-ffi's standard constructors; a planner's plan returns to
//!   the consumer by reference, as one leaf;
//! - `builtins`: a decoded plan's foreign built-in functions rebound to this
//!   library's own, so planners see (and run) DataFusion's built-ins;
//! - `codec` and `registry`: the logical and physical extension codecs that
//!   carry qlink tables and planned plans through the consumer's plan
//!   serialization by reference, within the process.
//!
//! Glue only: every qlink call goes through qlink-datafusion's wrappers.

pub mod builtins;
pub mod codec;
pub mod exec;
pub mod filters;
pub mod functions;
pub mod mirror;
pub mod registry;
pub mod table;
pub mod table_function;

pub use codec::{export_logical_codec, export_physical_codec, CODEC_ID};
pub use filters::CONSUMER_LOOKUPS;
pub use functions::{export_aggregate_udf, export_planner, export_planner_for, export_scalar_udf, export_window_udf};
pub use mirror::capsule_marker_id;
pub use table::{export_table, ExportOptions};
pub use table_function::export_table_function;

/// The major DataFusion version of the datafusion-ffi structs this library
/// fills (a consumer's `version()` must return the same).
pub fn ffi_major_version() -> u64 {
    datafusion_ffi::version()
}
