// SPDX-License-Identifier: Apache-2.0
//! `qlink.Session`: the embedded DataFusion host for Python.
//!
//! One DataFusion `SessionContext` (through the host crate's `QlinkSession`)
//! with its own runtime environment, so the memory limit and the object
//! stores registered here are the ones plugins see (gap G5). Every query
//! and every call that may run plugin code releases the GIL.

use std::sync::{Arc, Mutex, MutexGuard};

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use qlink_datafusion::distributed::{coordinator_state, Secret};
use qlink_datafusion::planner::{InstalledPlanner, QlinkQueryPlanner};
use qlink_datafusion::QlinkSession;

use crate::arrow_io;
use crate::errors::{plugin_err, to_py};
use crate::plugin::{options_of, PyPlugin};
use crate::runtime::{run_interruptible, runtime};

/// A size in bytes from an int or a string such as "512M", "2G", "1.5G"
/// (`qlink_session::builder::parse_size`, as the qlink tool reads --memory-limit).
pub fn parse_size(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(n) = v.extract::<i64>() {
        if n <= 0 {
            return Err(PyValueError::new_err(format!("memory_limit must be positive, got {n}")));
        }
        return Ok(n as usize);
    }
    let s: String = v.extract().map_err(|_| PyTypeError::new_err("memory_limit must be a number of bytes or a string such as '512M'"))?;
    qlink_session::builder::parse_size(&s).map_err(|e| PyValueError::new_err(format!("memory_limit: {e}")))
}

/// Percent-encode a spec component for libqlink's table-spec parser.
fn encode(s: &str) -> String {
    encode_keeping(s, b"")
}

/// Percent-encode `s` but for unreserved bytes and those in `keep`.
fn encode_keeping(s: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The spec of `provider` in the plugin at `plugin_path` with `options`,
/// every part percent-encoded (the path keeping its '/'), so a folder
/// named `a?b`, `%41` or `a&b` names itself and nothing else.
fn spec_of(plugin_path: &str, provider: &str, options: &[(String, String)]) -> PyResult<String> {
    let mut spec = format!("{}/{}", encode_keeping(plugin_path, b"/"), encode(provider));
    for (i, (k, v)) in options.iter().enumerate() {
        spec.push(if i == 0 { '?' } else { '&' });
        spec.push_str(&encode(k));
        spec.push('=');
        spec.push_str(&encode(v));
    }
    Ok(spec)
}

struct Inner {
    session: QlinkSession,
    planners: Vec<Arc<InstalledPlanner>>,
    /// The workers queries are distributed over (empty: none).
    workers: Vec<url::Url>,
    /// The secret every call to them carries (Some when there are workers).
    secret: Option<Secret>,
}

/// A DataFusion session hosting qlink plugins.
///
/// Thread-safe: registrations serialize on a lock; queries run on a copy of
/// the context handle (sharing its catalogs) with the lock released.
#[pyclass(module = "qlink._qlink", name = "Session", frozen, subclass)]
pub struct PySession {
    inner: Mutex<Inner>,
    memory_limit: Option<usize>,
}

impl PySession {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while registering cannot leave the map half-updated in a
        // way that matters more than refusing every later call would.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn ctx(&self) -> SessionContext {
        self.lock().session.ctx.clone()
    }

    fn plugin_arc(&self, plugin: &Bound<'_, PyAny>) -> PyResult<Arc<qlink_datafusion::Plugin>> {
        if let Ok(p) = plugin.cast::<PyPlugin>() {
            let p = p.get().inner();
            self.lock().session.insert_plugin(Arc::clone(&p));
            return Ok(p);
        }
        let path: String = plugin
            .extract()
            .map_err(|_| PyTypeError::new_err("plugin must be a qlink.Plugin, a plugin path or the name of a loaded plugin"))?;
        let py = plugin.py();
        let p = py.detach(|| self.lock().session.plugin(&path)).map_err(plugin_err)?;
        crate::plugin::pin(&p);
        Ok(p)
    }
}

/// A pyarrow-consumable reader over a DataFusion stream: each `next` waits
/// for the next batch on the qlink runtime (called by pyarrow without the GIL).
struct StreamReader {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
}

#[derive(Debug)]
struct RootError(String);
impl std::fmt::Display for RootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for RootError {}

/// A DataFusion error as the Arrow error the C stream reports. The variant
/// picks the errno pyarrow maps to an exception class: a refused memory
/// reservation becomes ENOMEM (pyarrow.ArrowMemoryError, a MemoryError),
/// an unsupported feature ENOSYS (ArrowNotImplementedError), anything else
/// EINVAL (ArrowInvalid). The text is the root (plugin's) message.
fn stream_error(e: &DataFusionError) -> ArrowError {
    let msg = qlink_datafusion::error::error_message(e);
    match e.find_root() {
        DataFusionError::ResourcesExhausted(_) => ArrowError::MemoryError(msg),
        DataFusionError::NotImplemented(_) => ArrowError::NotYetImplemented(msg),
        _ => ArrowError::ExternalError(Box::new(RootError(msg))),
    }
}

impl Iterator for StreamReader {
    type Item = Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        let next = runtime().block_on(self.stream.next())?;
        Some(next.map_err(|e| stream_error(&e)))
    }
}

impl RecordBatchReader for StreamReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

#[pymethods]
impl PySession {
    /// Session(memory_limit=None, target_partitions=None, batch_size=None,
    /// information_schema=True, config=None, workers=None, secret_file=None)
    #[new]
    #[pyo3(signature = (memory_limit=None, target_partitions=None, batch_size=None, information_schema=true, config=None, workers=None, secret_file=None))]
    fn new(
        py: Python<'_>,
        memory_limit: Option<Bound<'_, PyAny>>,
        target_partitions: Option<usize>,
        batch_size: Option<usize>,
        information_schema: bool,
        config: Option<Bound<'_, PyDict>>,
        workers: Option<Vec<String>>,
        secret_file: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let workers = workers
            .unwrap_or_default()
            .iter()
            .map(|w| qlink_session::workers::parse_worker(w))
            .collect::<Result<Vec<_>, _>>()
            .map_err(PyValueError::new_err)?;
        let secret = if workers.is_empty() {
            None
        } else {
            let s = Secret::from_file_or_env(secret_file.as_deref()).map_err(PyValueError::new_err)?;
            Some(s.ok_or_else(|| PyValueError::new_err(qlink_session::builder::NO_SECRET))?)
        };
        py.detach(|| qlink_session::workers::check_reachable(&workers)).map_err(PyValueError::new_err)?;
        let limit = memory_limit.as_ref().map(parse_size).transpose()?;
        let mut cfg = SessionConfig::new().with_information_schema(information_schema);
        if let Some(n) = target_partitions {
            if n == 0 {
                return Err(PyValueError::new_err("target_partitions must be at least 1"));
            }
            cfg = cfg.with_target_partitions(n);
        }
        if let Some(n) = batch_size {
            if n == 0 {
                return Err(PyValueError::new_err("batch_size must be at least 1"));
            }
            cfg = cfg.with_batch_size(n);
        }
        if let Some(c) = config {
            for (k, v) in c.iter() {
                let key: String = k.extract()?;
                let value: String = v.str()?.extract()?;
                let value = if v.is_instance_of::<pyo3::types::PyBool>() { value.to_lowercase() } else { value };
                cfg.options_mut().set(&key, &value).map_err(to_py)?;
            }
        }
        let ctx = qlink_session::builder::session_context(cfg, limit, Vec::new(), workers.clone(), secret.clone()).map_err(to_py)?;
        Ok(PySession {
            inner: Mutex::new(Inner { session: QlinkSession::new(ctx), planners: Vec::new(), workers, secret }),
            memory_limit: limit,
        })
    }

    /// The memory pool's limit in bytes, or None when unbounded.
    #[getter]
    fn memory_limit(&self) -> Option<usize> {
        self.memory_limit
    }

    /// Load the plugin at `path` (or take a loaded `qlink.Plugin`) and, if
    /// `functions`, register every function it offers. Returns the plugin.
    #[pyo3(signature = (plugin, functions=true))]
    fn load_plugin(&self, py: Python<'_>, plugin: Bound<'_, PyAny>, functions: bool) -> PyResult<PyPlugin> {
        let p = self.plugin_arc(&plugin)?;
        if functions {
            let p2 = Arc::clone(&p);
            py.detach(|| self.lock().session.register_functions(&p2)).map_err(plugin_err)?;
        }
        Ok(PyPlugin::from_arc(p))
    }

    /// Register table provider `provider` of `plugin` as `name`, opened with
    /// `options` (values are converted with str()).
    #[pyo3(signature = (name, plugin, provider, **options))]
    fn register_table(
        &self,
        py: Python<'_>,
        name: &str,
        plugin: Bound<'_, PyAny>,
        provider: &str,
        options: Option<Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let p = self.plugin_arc(&plugin)?;
        let spec = spec_of(p.path(), provider, &options_of(options.as_ref())?)?;
        py.detach(|| self.lock().session.register_table(name, &spec).map(|_| ())).map_err(plugin_err)
    }

    /// Register every table of schema provider `provider` of `plugin` as
    /// `name.<table>`; returns the qualified names.
    #[pyo3(signature = (name, plugin, provider, **options))]
    fn register_schema(
        &self,
        py: Python<'_>,
        name: &str,
        plugin: Bound<'_, PyAny>,
        provider: &str,
        options: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Vec<String>> {
        let p = self.plugin_arc(&plugin)?;
        let spec = spec_of(p.path(), provider, &options_of(options.as_ref())?)?;
        py.detach(|| self.lock().session.register_schema(name, &spec)).map_err(plugin_err)
    }

    /// Install planner `planner` of `plugin` (with `options`). Planners are
    /// asked in installation order; each may decline.
    #[pyo3(signature = (plugin, planner, **options))]
    fn install_planner(&self, py: Python<'_>, plugin: Bound<'_, PyAny>, planner: &str, options: Option<Bound<'_, PyDict>>) -> PyResult<()> {
        let p = self.plugin_arc(&plugin)?;
        let opts = options_of(options.as_ref())?;
        py.detach(|| -> Result<(), DataFusionError> {
            let installed = InstalledPlanner::open(&p, planner, &opts)?;
            let mut inner = self.lock();
            inner.planners.push(installed);
            // The query planner lives in the session state; rebuild the state
            // around the same catalogs, functions, config and runtime.
            let state = inner.session.ctx.state();
            let mut builder =
                SessionStateBuilder::new_from_existing(state).with_query_planner(Arc::new(QlinkQueryPlanner::new(inner.planners.clone())));
            if let (false, Some(secret)) = (inner.workers.is_empty(), inner.secret.clone()) {
                builder = coordinator_state(builder, inner.workers.clone(), secret);
            }
            let state = builder.build();
            inner.session.ctx = SessionContext::new_with_state(state);
            Ok(())
        })
        .map_err(plugin_err)
    }

    /// Register Arrow data (anything with `__arrow_c_stream__`, e.g. a
    /// pyarrow Table) as an in-memory table `name`.
    fn register_arrow(&self, py: Python<'_>, name: &str, data: Bound<'_, PyAny>) -> PyResult<()> {
        let (schema, batches) = arrow_io::from_python(&data)?;
        py.detach(|| -> Result<(), DataFusionError> {
            let table = MemTable::try_new(schema, vec![batches])?;
            self.ctx().register_table(name, Arc::new(table))?;
            Ok(())
        })
        .map_err(to_py)
    }

    /// Register an object store for URLs starting with `url`
    /// ("scheme://authority"): "memory://..." gets an in-memory store,
    /// "http(s)://host" an HTTP store (made on first use anyway; registering
    /// it early only checks the URL); anything else is served from the local
    /// directory `root`. Plugins (e.g. qlink_zarr) read such URLs through
    /// the session's registry.
    #[pyo3(signature = (url, root=None))]
    fn register_object_store(&self, url: &str, root: Option<&str>) -> PyResult<()> {
        let parsed = url::Url::parse(url).map_err(|e| PyValueError::new_err(format!("object store url {url:?}: {e}")))?;
        let store: Arc<dyn object_store::ObjectStore> = match (parsed.scheme(), root) {
            ("memory", None) => Arc::new(object_store::memory::InMemory::new()),
            ("http" | "https", None) => Arc::new(qlink_session::remote::http_store(&parsed).map_err(to_py)?),
            (_, Some(dir)) => Arc::new(
                object_store::local::LocalFileSystem::new_with_prefix(dir)
                    .map_err(|e| PyValueError::new_err(format!("object store root {dir:?}: {e}")))?,
            ),
            (scheme, None) => {
                return Err(PyValueError::new_err(format!(
                    "object store url {url:?}: give root=DIR for scheme '{scheme}' (memory:// and http(s):// need none)"
                )))
            }
        };
        self.ctx().runtime_env().register_object_store(&parsed, store);
        Ok(())
    }

    /// Run `query` and return its result as a pyarrow Table.
    fn sql<'py>(&self, py: Python<'py>, query: &str) -> PyResult<Bound<'py, PyAny>> {
        let ctx = self.ctx();
        let query = query.to_string();
        let (schema, batches) = run_interruptible(py, async move {
            let df = ctx.sql(&query).await?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await?;
            Ok::<_, DataFusionError>((schema, batches))
        })?;
        arrow_io::to_pyarrow_table(py, schema, batches)
    }

    /// Run `query` and return a pyarrow RecordBatchReader that produces the
    /// result batch by batch (planning happens now; execution as you read).
    fn sql_reader<'py>(&self, py: Python<'py>, query: &str) -> PyResult<Bound<'py, PyAny>> {
        let ctx = self.ctx();
        let stream = py.detach(|| runtime().block_on(async { ctx.sql(query).await?.execute_stream().await })).map_err(to_py)?;
        let schema = stream.schema();
        arrow_io::to_pyarrow_reader(py, Box::new(StreamReader { schema, stream }))
    }

    /// serve_flight_sql(host="127.0.0.1", port=0, secret=None) -> FlightSqlServer:
    /// an Arrow Flight SQL server over this session, in this process (see
    /// flight.rs): read-only queries and prepared statements over the
    /// tables registered now or later; with `secret`, every call must carry
    /// `authorization: Bearer SECRET`. A host other than loopback needs a
    /// secret. Returns once it listens (`port` 0: a free one, read back
    /// from the server's `port`).
    #[pyo3(signature = (host="127.0.0.1", port=0, secret=None))]
    fn serve_flight_sql(&self, py: Python<'_>, host: &str, port: u16, secret: Option<&str>) -> PyResult<crate::flight::PyFlightSqlServer> {
        crate::flight::start(py, QlinkSession::new(self.ctx()), host, port, secret)
    }

    /// The plan of `query` as text (EXPLAIN, or EXPLAIN ANALYZE if `analyze`).
    #[pyo3(signature = (query, analyze=false))]
    fn explain(&self, py: Python<'_>, query: &str, analyze: bool) -> PyResult<String> {
        let ctx = self.ctx();
        let q = format!("EXPLAIN {}{query}", if analyze { "ANALYZE " } else { "" });
        let batches = run_interruptible(py, async move { ctx.sql(&q).await?.collect().await })?;
        let text = arrow::util::pretty::pretty_format_batches(&batches).map_err(|e| PyValueError::new_err(e.to_string()))?.to_string();
        Ok(text)
    }

    /// Names of the tables of the default schema, sorted.
    fn tables(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        let ctx = self.ctx();
        let cat = ctx.state().config_options().catalog.clone();
        let mut names =
            ctx.catalog(&cat.default_catalog).and_then(|c| c.schema(&cat.default_schema)).map(|s| s.table_names()).unwrap_or_default();
        names.sort();
        Ok(PyList::new(py, names)?.unbind())
    }

    fn __repr__(&self) -> String {
        let inner = self.lock();
        format!(
            "qlink.Session(memory_limit={}, planners={})",
            self.memory_limit.map(|l| l.to_string()).unwrap_or_else(|| "None".into()),
            inner.planners.len()
        )
    }
}
