// SPDX-License-Identifier: Apache-2.0
//! qlink-plugin: write a qlink plugin in Rust, from the DataFusion
//! extensions you already have.
//!
//! A plugin is a `cdylib` with one function that says what it offers and
//! one macro that exports it:
//!
//! ```ignore
//! use qlink_plugin::{export_plugin, Plugin};
//!
//! fn plugin() -> Plugin {
//!     Plugin::new("qlink_json", env!("CARGO_PKG_VERSION"))
//!         .description("JSON functions")
//!         .scalar_udfs(datafusion_functions_json::all_functions().into_iter())
//! }
//! export_plugin!(plugin);
//! ```
//!
//! The library then loads in every qlink host (DataFusion, DuckDB, SQLite,
//! datafusion-python through qlink's capsules) like a plugin written in C:
//!
//! - **Tables**: any `Arc<dyn TableProvider>`, fixed or made per open from
//!   options ([`Plugin::table_with_options`]). Projection, filters (the
//!   host's qlink IR converted to DataFusion `Expr`s; the provider's own
//!   `supports_filters_pushdown` answers the handshake) and limit reach its
//!   `scan`; its statistics reach the host's optimizer; its
//!   `ExecutionPlan`'s partitions become Arrow C streams, without copies.
//! - **Scalar functions**: any `ScalarUDF`, under its name and aliases, with
//!   DataFusion's own type coercion; Arrow extension types (GeoArrow, say)
//!   cross in field metadata.
//! - **Schemas**: any `Arc<dyn SchemaProvider>` (DataFusion's
//!   `ListingSchemaProvider` over a folder, a `MemorySchemaProvider`), fixed
//!   or made per attach from options ([`Plugin::schema_with_options`]): its
//!   tables are listed when a host attaches it and each is served as a table
//!   above.
//! - **Table functions**: any `TableFunctionImpl`.
//! - **Planners** ([`planner`]): a [`planner::Planner`] reads each
//!   query's plan view and may answer a subtree with a DataFusion
//!   `ExecutionPlan` over subtrees the host planned ([`host_exec`]).
//!
//! What the SDK does for every object:
//! - A DataFusion session per host session, built once (not per scan),
//!   with the host's batch size and target partitions; each partition runs
//!   with the host's memory pool, and every file or URL is read through the
//!   host's object stores, so its gates and sandbox settings hold.
//! - Every entry point catches panics into a `ql_error` (QL_EINTERNAL) and
//!   never unwinds into the host; async work runs on the plugin's own Tokio
//!   runtime ([`runtime`]).
//!
//! Aggregate functions ([`udaf`]) cross as the UDF's groups accumulator
//! where it has one (else one accumulator per group), window functions
//! ([`udwf`]) as one evaluator per partition.

pub mod args;
pub mod error;
pub mod filters;
pub mod host_exec;
pub mod listing;
pub mod plan;
pub mod planner;
pub mod plugin;
mod private;
pub mod runtime;
pub mod schema;
pub mod services;
pub mod session;
pub mod table;
pub mod udaf;
pub mod udf;
pub mod udtf;
pub mod udwf;

pub use error::{Error, Result};
pub use plugin::{option, OptionSpec, Options, Plugin, Registered};
pub use runtime::block_on;

/// The DataFusion this SDK is built on: plugins use this one.
pub use datafusion;
/// The ABI's Rust types (qlink-sys, without libqlink).
pub use qlink_sys as sys;

/// Export `build` (a `fn() -> Plugin`) as this library's
/// `qlink_plugin_init`. `build` runs once, on first load.
#[macro_export]
macro_rules! export_plugin {
    ($build:path) => {
        /// The plugin's entry point (qlink/plugin.h).
        ///
        /// # Safety
        /// Called by a qlink host with the pointers the ABI specifies.
        #[no_mangle]
        pub unsafe extern "C" fn qlink_plugin_init(
            abi_version: u32,
            out: *mut $crate::sys::ql_plugin,
            error: *mut $crate::sys::ql_error,
        ) -> ::std::os::raw::c_int {
            static REGISTERED: ::std::sync::OnceLock<::std::result::Result<$crate::Registered, $crate::Error>> =
                ::std::sync::OnceLock::new();
            $crate::plugin::init(abi_version, out, error, &REGISTERED, $build)
        }
    };
}
