// SPDX-License-Identifier: Apache-2.0
//! qlink host adapter for Apache DataFusion 55.2 (docs/abi.md, gaps G1-G8).
//!
//! Translation only: between DataFusion's traits and the qlink C ABI, whose
//! Rust types and libqlink come from `qlink-sys` (re-exported as [`ffi`]).
//! - `table`: qlink table provider -> `TableProvider`
//! - `recipe`: how a scan was made (the provider's origin and the scan's arguments)
//! - `exec`: qlink execution plan <-> `ExecutionPlan`
//! - `functions`: qlink functions -> `ScalarUDF` / `AggregateUDF` / `WindowUDF` / table functions
//! - `planner`, `plan_view`: planner plugins -> `QueryPlanner` + optimizer hook, and the plan views they read
//! - `expr`: DataFusion expressions -> the ABI's expression arena
//! - `stats`: statistics both ways
//! - `convert`: types, scalars and C strings both ways, each in one place
//! - `services`: session view, task context, runtime environment, executor (one file per struct of services.h)
//! - `session_override`: a session with other physical optimizer rules or runtime environment
//! - `identity`: function identities (gap G2): built-ins by implementation object, plugin functions as their wrappers remember them
//! - `plugin`, `context`, `schema`: loading plugins and registering their objects on a `SessionContext`
//! - `distributed`: qlink scans shipped as recipes to datafusion-distributed workers
//! - `error`, `blocking`, `metrics`: errors across the ABI, waiting on futures, process-wide counters

pub use qlink_sys as ffi;

pub mod blocking;
pub mod context;
pub mod convert;
pub mod distributed;
pub mod error;
pub mod exec;
pub mod expr;
pub mod functions;
pub mod identity;
pub mod metrics;
pub mod planner;
/// The plan views, kept at their first path.
pub use planner::plan_view;
pub mod plugin;
pub mod recipe;
pub mod schema;
pub mod services;
pub mod session_override;
pub mod shared;
pub use qlink_convert::stats;
pub mod table;

pub use context::QlinkSession;
pub use plugin::{Plugin, TableSpec};
pub use table::QlinkTableProvider;
