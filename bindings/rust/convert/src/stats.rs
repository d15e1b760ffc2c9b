// SPDX-License-Identifier: Apache-2.0
//! Statistics both ways:
//! - qlink → DataFusion `Statistics` (`to_statistics`), so a plugin's exact
//!   row counts and min/max reach DataFusion's pruning and answer `COUNT(*)`
//!   without a scan;
//! - DataFusion → qlink (`from_statistics`), so a plugin holding host plans
//!   (a planner's children) sees what DataFusion knows about them, and a
//!   plugin built on DataFusion hands its providers' statistics to hosts;
//! - an execution plan's `get_statistics` for either side
//!   (`partition_arg`, `plan_statistics`).

use arrow::datatypes::Schema;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use datafusion::error::Result;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};

use qlink_sys::*;

use crate::cstrings::Strings;
use crate::scalars::{scalar_from_ql, scalar_to_ql};

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

// ------------------------------------------------------ DataFusion → qlink

fn ql_precision<T: std::fmt::Debug + Clone + PartialEq + Eq + PartialOrd>(p: &Precision<T>) -> (i32, Option<&T>) {
    match p {
        Precision::Exact(v) => (QL_PRECISION_EXACT, Some(v)),
        Precision::Inexact(v) => (QL_PRECISION_INEXACT, Some(v)),
        Precision::Absent => (QL_PRECISION_ABSENT, None),
    }
}

/// What a `ql_statistics` made by `from_statistics` owns: the column array
/// and the min/max values whose bytes (strings, binaries) its scalars borrow.
struct HostStats {
    columns: Vec<ql_column_statistics>,
    _values: Vec<ScalarValue>,
    _strings: Strings,
}

unsafe extern "C" fn host_stats_release(s: *mut ql_statistics) {
    // A panic must not unwind into C; dropping plain vectors does not panic.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if !(*s).private_data.is_null() {
            drop(Box::from_raw((*s).private_data as *mut HostStats));
        }
        (*s).private_data = std::ptr::null_mut();
        (*s).columns = std::ptr::null_mut();
        (*s).release = None;
    }));
}

/// DataFusion statistics as a `ql_statistics` the caller owns (it calls
/// `release`). Min and max cross as one precision: exact when both are
/// exact, inexact when both are known, else absent; a value of a type
/// `ql_scalar` cannot carry (lists, structs...) is absent too. Sizes
/// saturate at i64::MAX.
pub fn from_statistics(s: &Statistics) -> ql_statistics {
    let count = |v: Option<&usize>| v.map(|&n| i64::try_from(n).unwrap_or(i64::MAX)).unwrap_or(0);
    let mut values: Vec<ScalarValue> = Vec::new();
    let mut strings = Strings::default();
    let mut columns = Vec::with_capacity(s.column_statistics.len());
    for c in &s.column_statistics {
        let mut out: ql_column_statistics = zeroed();
        let (p, v) = ql_precision(&c.null_count);
        out.null_count_precision = p;
        out.null_count = count(v);
        let (p, v) = ql_precision(&c.distinct_count);
        out.distinct_count_precision = p;
        out.distinct_count = count(v);
        let (pmin, min) = ql_precision(&c.min_value);
        let (pmax, max) = ql_precision(&c.max_value);
        if let (Some(min), Some(max)) = (min, max) {
            // The clones keep the bytes the scalars point at alive (a
            // String's heap buffer does not move with its ScalarValue).
            let (min, max) = (min.clone(), max.clone());
            if let (Some(lo), Some(hi)) = (scalar_to_ql(&min, &mut strings), scalar_to_ql(&max, &mut strings)) {
                out.min_max_precision = pmin.min(pmax);
                out.min = lo;
                out.max = hi;
                values.push(min);
                values.push(max);
            }
        }
        columns.push(out);
    }
    let mut out: ql_statistics = zeroed();
    out.struct_size = std::mem::size_of::<ql_statistics>() as u32;
    let (p, v) = ql_precision(&s.num_rows);
    out.num_rows_precision = p;
    out.num_rows = count(v);
    let (p, v) = ql_precision(&s.total_byte_size);
    out.total_bytes_precision = p;
    out.total_bytes = count(v);
    let mut owned = Box::new(HostStats { columns, _values: values, _strings: strings });
    out.n_columns = owned.columns.len() as i64;
    out.columns = if owned.columns.is_empty() { std::ptr::null_mut() } else { owned.columns.as_mut_ptr() };
    out.release = Some(host_stats_release);
    out.private_data = Box::into_raw(owned) as *mut std::os::raw::c_void;
    out
}

/// The partition argument of `ql_execution_plan.get_statistics` for a plan
/// of `count` partitions: `Some(None)` for -1 (the whole plan),
/// `Some(Some(i))` for a partition in range, `None` for anything else (the
/// caller's error names it).
pub fn partition_arg(partition: i64, count: usize) -> Option<Option<usize>> {
    match partition {
        -1 => Some(None),
        n if n >= 0 && (n as usize) < count => Some(Some(n as usize)),
        _ => None,
    }
}

/// `plan`'s statistics for `partition` (None: the whole plan) as DataFusion
/// computes them (a `StatisticsContext` walk, which derives a node's
/// figures from its children's; the deprecated per-node call alone answers
/// "unknown" for nodes such as FilterExec), owned by the caller (who calls
/// its `release`). Errors: DataFusion's.
pub fn plan_statistics(plan: &dyn ExecutionPlan, partition: Option<usize>) -> Result<ql_statistics> {
    let args = StatisticsArgs::new().with_partition(partition);
    Ok(from_statistics(&*StatisticsContext::new().compute(plan, &args)?))
}
