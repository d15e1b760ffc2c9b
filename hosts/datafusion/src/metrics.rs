// SPDX-License-Identifier: Apache-2.0
//! Process-wide counters of what the host spends on behalf of plugins, for
//! benchmarks and tests: time in planner hooks (of it, building plan views)
//! and the number of registry enumerations (gap G6 says scans and executes
//! make none). Relaxed atomics: read a difference around the work measured.

/// Nanoseconds spent in the planner hook (plan view, call, answer handling),
/// process-wide: what installing planners costs, for the benchmark.
pub static HOOK_NANOS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Of HOOK_NANOS, the nanoseconds spent building plan views.
pub static VIEW_NANOS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Counts calls that enumerate a session's functions or options, so tests
/// can prove that scan and execute never do (gap G6).
pub static ENUMERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
