// SPDX-License-Identifier: Apache-2.0
//! The DataFusion session qlink builds, shared by the `qlink` tool, the
//! `qlink-worker` and the Python package (`qlink.Session`):
//! - [`builder`]: the one session builder (memory limit, configuration,
//!   object stores, qlink's query planner with the planners installed,
//!   datafusion-distributed's coordinator when workers are given);
//! - [`remote`]: the object-store registry those sessions use (HTTP(S)
//!   stores and public gs:// / s3:// buckets made on first use);
//! - [`workers`]: worker addresses for distributed queries, parsed and checked;
//! - [`flight_sql`]: an Arrow Flight SQL server over such a session (`qlink
//!   serve`, `qlink.xarray.FlightSQLServer`);
//! - [`message`]: the one-line text of a DataFusion error that the tool
//!   prints and the server sends.
//!
//! Imports point down only: this crate uses `qlink-datafusion` (the host)
//! and is used by `tools/cli` and `python`.

pub mod builder;
pub mod flight_sql;
pub mod message;
mod no_range;
pub mod remote;
pub mod workers;
