// SPDX-License-Identifier: Apache-2.0
//! The `qlink` tool's library half, shared with the Python package:
//! - `session`: the one session builder (memory limit, configuration,
//!   object stores, planners) behind `qlink sql` and `qlink.Session`;
//! - `remote`: the object-store registry those sessions use (HTTP(S) stores
//!   and public gs:// / s3:// buckets made on first use);
//! - `workers`: worker addresses for distributed queries, parsed and checked.

pub mod no_range;
pub mod remote;
pub mod session;
pub mod workers;
