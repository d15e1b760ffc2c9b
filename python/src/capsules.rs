// SPDX-License-Identifier: Apache-2.0
//! qlink objects for datafusion-python 55 through its capsule protocol:
//! `__datafusion_table_provider__(session)`, `__datafusion_scalar_udf__()`,
//! `__datafusion_aggregate_udf__()`, `__datafusion_window_udf__()`,
//! `__datafusion_query_planner__(session)` and the extension bundle hook
//! `__datafusion_session_planner__(ctx, fallback)`.
//!
//! The structs are built by the host crate's `capsule` module (datafusion-ffi
//! 55.2.0 layouts, qlink's own scan and execute); this file only checks
//! versions and wraps them in PyCapsules. A version mismatch raises
//! `qlink.VersionMismatchError` before any foreign struct is read beyond its
//! `version()`.

use std::ffi::CStr;
use std::sync::{Arc, OnceLock};

use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use qlink_capsule as capsule;
use qlink_capsule::ExportOptions;
use qlink_datafusion::functions::QlinkTableFunction;
use qlink_datafusion::planner::InstalledPlanner;
use qlink_datafusion::{Plugin, QlinkTableProvider};

use crate::errors::{plugin_err, VersionMismatchError};
use crate::runtime::runtime;

/// The datafusion-python version these capsules are tested with.
pub const DATAFUSION_PYTHON_VERSION: &str = "55.0.0";

/// Refuse a datafusion-python whose major version differs from the
/// datafusion-ffi structs built here (their layouts change between majors).
pub fn check_datafusion_python(py: Python<'_>) -> PyResult<()> {
    let installed: String = match py.import("datafusion") {
        Ok(m) => m.getattr("__version__")?.extract()?,
        Err(_) => return Ok(()), // not datafusion-python calling: the FFI version() checks still apply
    };
    let major = installed.split('.').next().and_then(|s| s.parse::<u64>().ok());
    if major != Some(capsule::ffi_major_version()) {
        return Err(VersionMismatchError::new_err(format!(
            "datafusion-python {installed} is installed, but qlink's datafusion-python objects are built on \
             datafusion-ffi {want}.x structs and need datafusion-python {want}.x (tested with \
             {DATAFUSION_PYTHON_VERSION}): pip install datafusion=={DATAFUSION_PYTHON_VERSION}, or query the \
             plugin in qlink.Session",
            want = capsule::ffi_major_version()
        )));
    }
    Ok(())
}

fn check_ffi_version(what: &str, version: u64) -> PyResult<()> {
    if version != capsule::ffi_major_version() {
        return Err(VersionMismatchError::new_err(format!(
            "the calling session's {what} is datafusion-ffi {version}, qlink's is {}: install \
             datafusion=={DATAFUSION_PYTHON_VERSION}",
            capsule::ffi_major_version()
        )));
    }
    Ok(())
}

/// A capsule named `name`, from `obj.getter(session)` when `obj` has that
/// method, else `obj` itself (datafusion-python hands over a session or a
/// bare codec capsule).
fn capsule_from<'py>(obj: &Bound<'py, PyAny>, getter: &str) -> PyResult<Bound<'py, PyCapsule>> {
    let cap = if obj.hasattr(getter)? { obj.call_method0(getter)? } else { obj.clone() };
    Ok(cap.cast_into::<PyCapsule>()?)
}

/// Borrow the struct behind a capsule named `name`.
///
/// # Safety
/// A capsule of that name holds a `T` (datafusion-python's convention).
unsafe fn capsule_ref<'a, T>(cap: &'a Bound<'_, PyCapsule>, name: &CStr) -> PyResult<&'a T> {
    let ptr = cap.pointer_checked(Some(name))?;
    Ok(&*(ptr.as_ptr() as *const T))
}

/// The logical codec of the session a capsule is requested for (cloned).
fn logical_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let cap = capsule_from(session, "__datafusion_logical_extension_codec__")?;
    // SAFETY: the capsule name says what it holds.
    let codec: &FFI_LogicalExtensionCodec = unsafe { capsule_ref(&cap, c"datafusion_logical_extension_codec")? };
    check_ffi_version("logical codec", unsafe { (codec.version)() })?;
    Ok(codec.clone())
}

fn physical_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_PhysicalExtensionCodec> {
    let cap = capsule_from(session, "__datafusion_physical_extension_codec__")?;
    // SAFETY: the capsule name says what it holds.
    let codec: &FFI_PhysicalExtensionCodec = unsafe { capsule_ref(&cap, c"datafusion_physical_extension_codec")? };
    check_ffi_version("physical codec", unsafe { (codec.version)() })?;
    Ok(codec.clone())
}

/// How many times a capsule table looked up a function in the calling
/// session (each one enumerates that session's functions): for tests and
/// benchmarks proving the per-scan path does not.
#[pyfunction]
pub fn _consumer_function_lookups() -> u64 {
    capsule::CONSUMER_LOOKUPS.load(std::sync::atomic::Ordering::Relaxed)
}

/// A session used while opening plugin objects (their open call may read
/// config or look up functions); its runtime environment (DataFusion's
/// defaults, unbounded memory, plus HTTP(S) object stores made on first use)
/// is the one capsule tables scan with.
pub fn open_session() -> &'static SessionContext {
    static CTX: OnceLock<SessionContext> = OnceLock::new();
    CTX.get_or_init(|| {
        // DataFusion's defaults, plus HTTP(S) stores made on first use.
        let registry = Arc::new(qlink_session::remote::RemoteStoreRegistry::new());
        match RuntimeEnvBuilder::new().with_object_store_registry(registry).build_arc() {
            Ok(env) => SessionContext::new_with_config_rt(SessionConfig::new(), env),
            Err(_) => SessionContext::new(),
        }
    })
}

/// How capsule tables scan: this module's runtime, `open_session`'s
/// runtime environment.
fn export_options() -> ExportOptions {
    ExportOptions { runtime: Some(runtime().handle().clone()), runtime_env: Some(open_session().runtime_env()) }
}

/// A plugin table for datafusion-python: `SessionContext.register_table(name,
/// plugin.table(provider, **options))`.
#[pyclass(module = "qlink._qlink", name = "Table", frozen)]
pub struct PyTable {
    table: Arc<QlinkTableProvider>,
    label: String,
}

impl PyTable {
    /// A table already open (a schema's), labelled `label` ("plugin/schema.table").
    pub fn from_provider(table: QlinkTableProvider, label: String) -> PyTable {
        PyTable { table: Arc::new(table), label }
    }

    pub fn open(py: Python<'_>, plugin: &Arc<Plugin>, provider: &str, options: &[(String, String)]) -> PyResult<PyTable> {
        let state = open_session().state();
        let table = py.detach(|| QlinkTableProvider::open(plugin, provider, options, &state)).map_err(plugin_err)?;
        Ok(PyTable { table: Arc::new(table), label: format!("{}/{provider}", plugin.name()) })
    }
}

#[pymethods]
impl PyTable {
    /// The capsule datafusion-python 55 imports (`FFI_TableProvider`).
    /// `session` is the importing session or its logical codec capsule.
    fn __datafusion_table_provider__<'py>(&self, py: Python<'py>, session: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        let codec = logical_codec(&session)?;
        let ffi = capsule::export_table(Arc::clone(&self.table), &codec, export_options());
        PyCapsule::new_with_value(py, ffi, c"datafusion_table_provider")
    }

    /// The table's Arrow schema as a pyarrow Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        use datafusion::catalog::TableProvider;
        crate::arrow_io::to_pyarrow_table(py, self.table.schema(), vec![])?.getattr("schema")
    }

    fn __repr__(&self) -> String {
        format!("qlink.Table({})", self.label)
    }
}

/// Which kind of function a [`PyFunction`] is.
#[derive(Clone, Copy)]
pub enum FunctionKind {
    Scalar,
    Aggregate,
    Window,
    Table,
}

/// Refuse a session without qlink's codecs: its plan serialization could
/// not carry qlink tables or the planner's plan.
fn require_codecs(session: &Bound<'_, PyAny>) -> PyResult<()> {
    let ids = "logical_extension_codec_ids";
    if !session.hasattr(ids)? {
        return Ok(()); // not datafusion-python: the consumer's codecs are its own business
    }
    let installed: Vec<String> = session.call_method0(ids)?.extract()?;
    if installed.iter().any(|i| i == capsule::CODEC_ID) {
        return Ok(());
    }
    Err(pyo3::exceptions::PyValueError::new_err(format!(
        "this session does not carry qlink's codecs ({}), so it cannot pass a plan to a qlink planner: install \
         them first with ctx = ctx.with_extensions(qlink.codecs()), or install the planner with \
         ctx = ctx.with_extensions(planner), which adds them (qlink.xarray.Context carries them already)",
        capsule::CODEC_ID
    )))
}

/// A plugin function for datafusion-python: `datafusion.udf(f)`,
/// `udaf(f)`, `udwf(f)`, `udtf(f, name)` (or `ScalarUDF.from_pycapsule(f)`...).
#[pyclass(module = "qlink._qlink", name = "Function", frozen)]
pub struct PyFunction {
    plugin: Arc<Plugin>,
    name: String,
    kind: FunctionKind,
}

impl PyFunction {
    /// Check now that the plugin has the function, so a bad name fails here.
    pub fn open(plugin: &Arc<Plugin>, name: &str, kind: FunctionKind) -> PyResult<PyFunction> {
        let f = PyFunction { plugin: Arc::clone(plugin), name: name.to_string(), kind };
        match kind {
            FunctionKind::Scalar => capsule::export_scalar_udf(plugin, name).map(drop),
            FunctionKind::Aggregate => capsule::export_aggregate_udf(plugin, name).map(drop),
            FunctionKind::Window => capsule::export_window_udf(plugin, name).map(drop),
            FunctionKind::Table => QlinkTableFunction::open(plugin, name).map(drop),
        }
        .map_err(plugin_err)?;
        Ok(f)
    }

    fn wrong_kind(&self, asked: &str) -> PyErr {
        let is = match self.kind {
            FunctionKind::Scalar => "scalar (plugin.udf)",
            FunctionKind::Aggregate => "aggregate (plugin.udaf)",
            FunctionKind::Window => "window (plugin.udwf)",
            FunctionKind::Table => "table (plugin.udtf)",
        };
        pyo3::exceptions::PyTypeError::new_err(format!("{} is a {is} function, not {asked}", self.name))
    }
}

#[pymethods]
impl PyFunction {
    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }

    fn __datafusion_scalar_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        let FunctionKind::Scalar = self.kind else { return Err(self.wrong_kind("a scalar function")) };
        let f = capsule::export_scalar_udf(&self.plugin, &self.name).map_err(plugin_err)?;
        PyCapsule::new_with_value(py, f, c"datafusion_scalar_udf")
    }

    fn __datafusion_aggregate_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        let FunctionKind::Aggregate = self.kind else { return Err(self.wrong_kind("an aggregate function")) };
        let f = capsule::export_aggregate_udf(&self.plugin, &self.name).map_err(plugin_err)?;
        PyCapsule::new_with_value(py, f, c"datafusion_aggregate_udf")
    }

    fn __datafusion_window_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        let FunctionKind::Window = self.kind else { return Err(self.wrong_kind("a window function")) };
        let f = capsule::export_window_udf(&self.plugin, &self.name).map_err(plugin_err)?;
        PyCapsule::new_with_value(py, f, c"datafusion_window_udf")
    }

    /// `datafusion.udtf(plugin.udtf(name), name)` / `ctx.register_udtf(...)`:
    /// `session` is the registering session (or its logical codec capsule).
    fn __datafusion_table_function__<'py>(&self, py: Python<'py>, session: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        let FunctionKind::Table = self.kind else { return Err(self.wrong_kind("a table function")) };
        let func = QlinkTableFunction::open(&self.plugin, &self.name).map_err(plugin_err)?;
        let f = capsule::export_table_function(func, logical_codec(&session)?, export_options());
        PyCapsule::new_with_value(py, f, c"datafusion_table_function")
    }

    fn __repr__(&self) -> String {
        format!("qlink.Function({}/{})", self.plugin.name(), self.name)
    }
}

/// Planner plugins for datafusion-python 55: `ctx.set_query_planner(p)` or
/// `ctx.with_extensions(p)`. Each plan is offered to the planners in order,
/// then planned by DataFusion's default physical planner of this library
/// (the session's previous planner is replaced, not wrapped). The logical
/// plan crosses as protobuf (datafusion-ffi's protocol) with qlink tables in
/// it by reference, and the physical plan returns by reference as one leaf:
/// the session must carry qlink's codecs (`qlink.codecs()`; installing the
/// planner with `ctx.with_extensions(planner)` adds them), and every other
/// table in the plan must be one datafusion-python can serialize.
#[pyclass(module = "qlink._qlink", name = "Planner", frozen)]
pub struct PyPlanner {
    planners: Vec<Arc<InstalledPlanner>>,
    label: String,
}

impl PyPlanner {
    pub fn open(py: Python<'_>, plugin: &Arc<Plugin>, name: &str, options: &[(String, String)]) -> PyResult<PyPlanner> {
        let installed = py.detach(|| InstalledPlanner::open(plugin, name, options)).map_err(plugin_err)?;
        Ok(PyPlanner { planners: vec![installed], label: format!("{}/{name}", plugin.name()) })
    }

    fn capsule<'py>(&self, py: Python<'py>, session: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        require_codecs(session)?;
        let ffi = capsule::export_planner(
            self.planners.clone(),
            logical_codec(session)?,
            physical_codec(session)?,
            Some(open_session().runtime_env()),
        );
        PyCapsule::new_with_value(py, ffi, c"datafusion_query_planner")
    }
}

/// `qlink.shared_subqueries()`: qlink's planner with no planner plugin, for
/// a datafusion-python session whose SQL uses a CTE (or any subquery) more
/// than once: DataFusion's own planning, but each such subquery is planned
/// and run once (`qlink_datafusion::shared`), where datafusion-python 55
/// inlines it at every reference. Install it as any qlink planner
/// (`ctx.with_extensions(qlink.shared_subqueries())`); a qlink planner
/// plugin installed instead shares them too.
#[pyfunction]
pub fn shared_subqueries() -> PyPlanner {
    PyPlanner { planners: Vec::new(), label: "qlink (shared subqueries)".to_string() }
}

#[pymethods]
impl PyPlanner {
    /// `SessionContext.set_query_planner(planner)`.
    #[pyo3(signature = (session=None))]
    fn __datafusion_query_planner__<'py>(&self, py: Python<'py>, session: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let Some(session) = session else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "a qlink planner needs the session it is installed on (datafusion-python passes it)",
            ));
        };
        self.capsule(py, &session)
    }

    /// `SessionContext.with_extensions(planner)`, first phase: qlink's
    /// codecs, unless the context already carries them.
    fn __datafusion_session_components__<'py>(&self, py: Python<'py>, ctx: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        py.import("qlink._codecs")?.call_method1("components", (ctx,))
    }

    /// `SessionContext.with_extensions(planner)`: replaces `fallback`.
    fn __datafusion_session_planner__<'py>(
        &self,
        py: Python<'py>,
        ctx: Bound<'py, PyAny>,
        fallback: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = fallback;
        // The bundle hook receives the Python wrapper; its `ctx` is the native one.
        let native = if ctx.hasattr("ctx")? { ctx.getattr("ctx")? } else { ctx };
        self.capsule(py, &native)
    }

    fn __repr__(&self) -> String {
        format!("qlink.Planner({})", self.label)
    }
}
