// SPDX-License-Identifier: Apache-2.0
//! `qlink._qlink`: the native part of the `qlink` Python package.
//!
//! - `Session` (session.rs): an embedded DataFusion host over the Rust host
//!   adapter `qlink-datafusion`, returning pyarrow data;
//! - `FlightSqlServer` (flight.rs): `Session.serve_flight_sql`'s server;
//! - `Plugin` (plugin.rs): a loaded qlink plugin;
//! - `Table`, `Function`, `Planner` (capsules.rs): plugin objects for
//!   datafusion-python 55 through its capsule protocol;
//! - `LogicalCodec`, `PhysicalCodec` (codecs.rs): qlink's extension codecs
//!   for datafusion-python 55;
//! - the exception hierarchy (errors.rs);
//! - the Tokio runtime queries run on, interruptible by Ctrl-C (runtime.rs);
//! - Arrow PyCapsule import/export (arrow_io.rs).

use pyo3::prelude::*;

mod arrow_io;
mod capsules;
mod codecs;
mod errors;
mod flight;
mod plugin;
mod runtime;
mod schema;
mod session;

/// The DataFusion version this module's embedded host is built on.
const DATAFUSION_VERSION: &str = "55.2.0";

#[pymodule]
fn _qlink(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<session::PySession>()?;
    m.add_class::<flight::PyFlightSqlServer>()?;
    m.add_class::<plugin::PyPlugin>()?;
    m.add_class::<arrow_io::ArrowStream>()?;
    m.add_class::<capsules::PyTable>()?;
    m.add_class::<schema::PySchema>()?;
    m.add_class::<capsules::PyFunction>()?;
    m.add_class::<capsules::PyPlanner>()?;
    m.add_class::<codecs::PyLogicalCodec>()?;
    m.add_class::<codecs::PyPhysicalCodec>()?;
    m.add_function(wrap_pyfunction!(capsules::_consumer_function_lookups, m)?)?;
    m.add_function(wrap_pyfunction!(capsules::shared_subqueries, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::_planned_plans_held, m)?)?;
    m.add("CODEC_ID", qlink_capsule::CODEC_ID)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DATAFUSION_VERSION", DATAFUSION_VERSION)?;
    m.add("DATAFUSION_PYTHON_VERSION", capsules::DATAFUSION_PYTHON_VERSION)?;
    m.add("FFI_VERSION", qlink_capsule::ffi_major_version())?;
    Ok(())
}
