//! qlink host adapter for Apache DataFusion 55.2 (design.md, gaps G1–G8).
//!
//! Thin: conversion and glue between DataFusion's traits and the qlink C ABI
//! (include/qlink/*.h), linking libqlink (built by build.rs).
//! - `table`: qlink table provider → `TableProvider`
//! - `exec`: qlink execution plan ↔ `ExecutionPlan`
//! - `services`: session view, task context, runtime environment, executor
//! - `functions`: qlink functions → `ScalarUDF` / `AggregateUDF` / `WindowUDF` / table functions
//! - `planner`: planner plugins → `QueryPlanner` + optimizer hook
//! - `context`: registering a plugin's objects on a `SessionContext`
//! - `remote`: the object store registry qlink's own sessions use (HTTP(S) stores made on first use)

pub mod capsule;
pub mod context;
pub mod error;
pub mod exec;
pub mod expr;
pub mod ffi;
pub mod functions;
pub mod identity;
pub mod plan_view;
pub mod planner;
pub mod plugin;
pub mod remote;
pub mod services;
pub mod stats;
pub mod table;

pub use context::QlinkSession;
pub use plugin::{Plugin, TableSpec};
pub use table::QlinkTableProvider;

#[cfg(test)]
mod layout_test {
    use std::ffi::CString;
    use std::mem::{offset_of, size_of};

    use crate::ffi::*;

    #[test]
    fn layout_matches_c() {
        macro_rules! size {
            ($t:ident) => {
                (stringify!($t).to_string(), size_of::<$t>() as i64)
            };
        }
        macro_rules! off {
            ($t:ident, $f:ident) => {
                (format!("{}.{}", stringify!($t), stringify!($f)), offset_of!($t, $f) as i64)
            };
        }
        let list: Vec<(String, i64)> = include!("layout_list.rs").into_iter().collect();
        assert!(list.len() > 300, "the layout list covers every struct");
        for (name, rust) in list {
            let c = CString::new(name.clone()).unwrap();
            let cval = unsafe { qlink_df_layout(c.as_ptr()) };
            assert_eq!(cval, rust, "{name}: C says {cval}, Rust says {rust}");
        }
    }
}
