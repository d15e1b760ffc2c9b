// SPDX-License-Identifier: Apache-2.0
//! `qlink.Plugin`: a loaded qlink plugin (libqlink's loader: dlopen,
//! version negotiation, descriptor checks). The library stays loaded while
//! this object or anything opened from it lives.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use qlink_datafusion::ffi::*;
use qlink_datafusion::Plugin;

use crate::capsules::{FunctionKind, PyFunction, PyPlanner, PyTable};
use crate::errors::plugin_err;
use crate::schema::PySchema;

/// Keyword options as the (key, value) strings the ABI passes: values go
/// through str(), booleans as "true"/"false"; None values are left out.
pub fn options_of(options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    if let Some(d) = options {
        for (k, v) in d.iter() {
            if v.is_none() {
                continue;
            }
            let key: String = k.extract()?;
            let value: String = if v.is_instance_of::<PyBool>() {
                if v.is_truthy()? {
                    "true".into()
                } else {
                    "false".into()
                }
            } else {
                v.str()?.extract()?
            };
            out.push((key, value));
        }
    }
    Ok(out)
}

fn kind_name(kind: i32) -> &'static str {
    match kind {
        QL_ITEM_TABLE_PROVIDER => "table_provider",
        QL_ITEM_SCHEMA_PROVIDER => "schema_provider",
        QL_ITEM_SCALAR_FUNCTION => "scalar_function",
        QL_ITEM_AGGREGATE_FUNCTION => "aggregate_function",
        QL_ITEM_WINDOW_FUNCTION => "window_function",
        QL_ITEM_TABLE_FUNCTION => "table_function",
        QL_ITEM_PLANNER => "planner",
        QL_ITEM_OBJECT_STORE => "object_store",
        _ => "unknown",
    }
}

/// Keep `plugin` loaded until the process exits.
///
/// Arrow data a plugin produced carries release callbacks that live in the
/// plugin's library; a pyarrow Table (or a datafusion-python MemTable made
/// from it) can outlive every qlink object that used the plugin. Unloading
/// the library then would leave those callbacks pointing at unmapped code,
/// so, as Python does with extension modules, a plugin loaded from Python is
/// never unloaded.
pub fn pin(plugin: &Arc<Plugin>) {
    static PINNED: std::sync::OnceLock<std::sync::Mutex<Vec<Arc<Plugin>>>> = std::sync::OnceLock::new();
    let mut v = PINNED.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if !v.iter().any(|p| Arc::ptr_eq(p, plugin)) {
        v.push(Arc::clone(plugin));
    }
}

/// A loaded qlink plugin.
#[pyclass(module = "qlink._qlink", name = "Plugin", frozen)]
pub struct PyPlugin {
    inner: Arc<Plugin>,
}

impl PyPlugin {
    pub fn from_arc(inner: Arc<Plugin>) -> PyPlugin {
        PyPlugin { inner }
    }
    pub fn inner(&self) -> Arc<Plugin> {
        Arc::clone(&self.inner)
    }
}

#[pymethods]
impl PyPlugin {
    /// Plugin(path): load the plugin at `path`. Raises PluginError with the
    /// loader's message (missing file, no entry point, ABI version refused).
    #[new]
    fn new(py: Python<'_>, path: String) -> PyResult<Self> {
        let inner = py.detach(|| Plugin::load(&path)).map_err(plugin_err)?;
        pin(&inner);
        Ok(PyPlugin { inner })
    }

    /// The name the plugin reports (e.g. "qlink_sample").
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// The path it was loaded from.
    #[getter]
    fn path(&self) -> String {
        self.inner.path().to_string()
    }

    /// The plugin's catalogue: a list of (kind, name, description), kind one
    /// of "table_provider", "schema_provider", "scalar_function",
    /// "aggregate_function", "window_function", "table_function", "planner",
    /// "object_store".
    fn items(&self) -> Vec<(String, String, String)> {
        self.inner.items().into_iter().map(|i| (kind_name(i.kind).to_string(), i.name, i.description)).collect()
    }

    /// Table provider `provider` of this plugin, opened with `options`, for
    /// datafusion-python 55: `ctx.register_table(name, plugin.table(...))`.
    /// Scans run the plugin directly (its own scan and execute, filters and
    /// projections pushed down). Raises PluginError/PlanError with the
    /// plugin's message if it refuses the options.
    #[pyo3(signature = (provider, **options))]
    fn table(&self, py: Python<'_>, provider: &str, options: Option<Bound<'_, PyDict>>) -> PyResult<PyTable> {
        let opts = options_of(options.as_ref())?;
        PyTable::open(py, &self.inner, provider, &opts)
    }

    /// Schema provider `provider` of this plugin, opened with `options`, for
    /// datafusion-python 55: `ctx.catalog().register_schema(name,
    /// plugin.schema(...))`, then `SELECT ... FROM name.table`. Its tables
    /// are listed once, here; each is opened on first use and scans as
    /// `plugin.table(...)`'s do. Raises PluginError/PlanError with the
    /// plugin's message if it refuses the options.
    #[pyo3(signature = (provider, **options))]
    fn schema(&self, py: Python<'_>, provider: &str, options: Option<Bound<'_, PyDict>>) -> PyResult<PySchema> {
        let opts = options_of(options.as_ref())?;
        PySchema::open(py, &self.inner, provider, &opts)
    }

    /// Scalar function `name` for datafusion-python: `datafusion.udf(plugin.udf(name))`.
    fn udf(&self, name: &str) -> PyResult<PyFunction> {
        PyFunction::open(&self.inner, name, FunctionKind::Scalar)
    }

    /// Aggregate function `name`: `datafusion.udaf(plugin.udaf(name))`.
    fn udaf(&self, name: &str) -> PyResult<PyFunction> {
        PyFunction::open(&self.inner, name, FunctionKind::Aggregate)
    }

    /// Window function `name`: `datafusion.udwf(plugin.udwf(name))`.
    fn udwf(&self, name: &str) -> PyResult<PyFunction> {
        PyFunction::open(&self.inner, name, FunctionKind::Window)
    }

    /// Table function `name`: `ctx.register_udtf(datafusion.udtf(plugin.udtf(name), name))`.
    /// Each call's table scans as `plugin.table(...)`'s do.
    fn udtf(&self, name: &str) -> PyResult<PyFunction> {
        PyFunction::open(&self.inner, name, FunctionKind::Table)
    }

    /// Planner `name` for datafusion-python: `ctx.set_query_planner(plugin.planner(name))`.
    #[pyo3(signature = (name, **options))]
    fn planner(&self, py: Python<'_>, name: &str, options: Option<Bound<'_, PyDict>>) -> PyResult<PyPlanner> {
        let opts = options_of(options.as_ref())?;
        PyPlanner::open(py, &self.inner, name, &opts)
    }

    fn __repr__(&self) -> String {
        format!("qlink.Plugin({:?} from {:?})", self.inner.name(), self.inner.path())
    }
}
