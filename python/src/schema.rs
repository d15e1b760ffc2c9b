// SPDX-License-Identifier: Apache-2.0
//! `qlink.Schema`: a plugin's schema provider for datafusion-python 55, in
//! the shape its `Catalog.register_schema` takes from Python (the methods
//! of `datafusion.catalog.SchemaProvider`): table names, and each table as
//! a `qlink.Table`, so its scans take qlink's capsule route.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use qlink_datafusion::schema::OpenSchema;
use qlink_datafusion::services::SessionSource;
use qlink_datafusion::Plugin;

use crate::capsules::{open_session, PyTable};
use crate::errors::{plugin_err, NotSupportedError};

/// A plugin's schema: its tables as they were when it was opened. Tables
/// are opened on first use and kept. Thread-safe.
#[pyclass(module = "qlink._qlink", name = "Schema", frozen)]
pub struct PySchema {
    open: Arc<OpenSchema>,
    names: Vec<String>,
    tables: Mutex<HashMap<String, Py<PyTable>>>,
    label: String,
}

impl PySchema {
    pub fn open(py: Python<'_>, plugin: &Arc<Plugin>, provider: &str, options: &[(String, String)]) -> PyResult<PySchema> {
        let state = open_session().state();
        let open = py.detach(|| OpenSchema::open(plugin, provider, options, SessionSource::Session(&state))).map_err(plugin_err)?;
        let names = open.table_names();
        Ok(PySchema { open: Arc::new(open), names, tables: Mutex::default(), label: format!("{}/{provider}", plugin.name()) })
    }
}

#[pymethods]
impl PySchema {
    /// The names of the schema's tables.
    fn table_names(&self) -> HashSet<String> {
        self.names.iter().cloned().collect()
    }

    /// Table `name` as a `qlink.Table`, or None if the schema has none of
    /// that name. Raises PluginError with the plugin's message if opening
    /// it fails.
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<Option<Py<PyTable>>> {
        if !self.names.iter().any(|n| n == name) {
            return Ok(None);
        }
        if let Some(t) = self.tables.lock().unwrap_or_else(|p| p.into_inner()).get(name) {
            return Ok(Some(t.clone_ref(py)));
        }
        let open = Arc::clone(&self.open);
        let table = py.detach(|| open.table(name)).map_err(plugin_err)?;
        let t = Py::new(py, PyTable::from_provider(table, format!("{}.{name}", self.label)))?;
        let mut tables = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        Ok(Some(tables.entry(name.to_string()).or_insert(t).clone_ref(py)))
    }

    /// Whether the schema has a table `name`.
    fn table_exist(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// Refused: a plugin's schema lists what the plugin serves.
    #[pyo3(signature = (name, *_args))]
    fn register_table(&self, name: &str, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        Err(NotSupportedError::new_err(format!("{}: a plugin's schema is read-only (cannot register '{name}')", self.label)))
    }

    /// Refused, as register_table.
    #[pyo3(signature = (name, *_args))]
    fn deregister_table(&self, name: &str, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        Err(NotSupportedError::new_err(format!("{}: a plugin's schema is read-only (cannot deregister '{name}')", self.label)))
    }

    fn __repr__(&self) -> String {
        format!("qlink.Schema({:?}, tables={:?})", self.label, self.names)
    }
}
