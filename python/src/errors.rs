// SPDX-License-Identifier: Apache-2.0
//! Python exceptions for qlink and DataFusion errors.
//!
//! Every error that reaches Python is one of these classes, carrying the
//! innermost message (a plugin's own message when a plugin failed), never a
//! Rust panic: the hierarchy lets callers catch one kind (a refused memory
//! reservation) without string matching.

use datafusion::error::DataFusionError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(qlink, QlinkError, PyException, "Base class of every error qlink raises.");
create_exception!(qlink, PlanError, QlinkError, "The query or a registration is invalid (SQL, schema, unknown table or option).");
create_exception!(qlink, ExecutionError, QlinkError, "A query failed while running (including a plugin's own failure).");
create_exception!(
    qlink,
    ResourcesExhaustedError,
    QlinkError,
    "A memory reservation was refused: the session's memory limit applies to plugins too."
);
create_exception!(qlink, NotSupportedError, QlinkError, "The plugin or host does not support what was asked.");
create_exception!(qlink, PluginError, QlinkError, "A plugin could not be loaded or opened.");
create_exception!(
    qlink,
    VersionMismatchError,
    QlinkError,
    "An installed library (datafusion-python, datafusion-ffi) is not the version qlink was built against."
);

/// The message a user should see: the root cause without DataFusion's
/// nested "Execution error: External error: ..." prefixes.
fn root_message(e: &DataFusionError) -> String {
    qlink_datafusion::error::error_message(e)
}

/// A DataFusion error as the matching Python exception.
pub fn to_py(e: DataFusionError) -> PyErr {
    let msg = root_message(&e);
    match e.find_root() {
        DataFusionError::ResourcesExhausted(_) => ResourcesExhaustedError::new_err(msg),
        DataFusionError::NotImplemented(_) => NotSupportedError::new_err(msg),
        DataFusionError::Plan(_) | DataFusionError::SQL(..) | DataFusionError::SchemaError(..) => PlanError::new_err(msg),
        DataFusionError::Configuration(_) => PlanError::new_err(msg),
        _ => ExecutionError::new_err(msg),
    }
}

/// `to_py` for errors raised while loading or opening plugin objects: an
/// invalid-argument error stays a PlanError, anything else is a PluginError.
pub fn plugin_err(e: DataFusionError) -> PyErr {
    let msg = root_message(&e);
    match e.find_root() {
        DataFusionError::Plan(_) => PlanError::new_err(msg),
        DataFusionError::NotImplemented(_) => NotSupportedError::new_err(msg),
        _ => PluginError::new_err(msg),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("QlinkError", py.get_type::<QlinkError>())?;
    m.add("PlanError", py.get_type::<PlanError>())?;
    m.add("ExecutionError", py.get_type::<ExecutionError>())?;
    m.add("ResourcesExhaustedError", py.get_type::<ResourcesExhaustedError>())?;
    m.add("NotSupportedError", py.get_type::<NotSupportedError>())?;
    m.add("PluginError", py.get_type::<PluginError>())?;
    m.add("VersionMismatchError", py.get_type::<VersionMismatchError>())?;
    Ok(())
}
