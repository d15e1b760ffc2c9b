// SPDX-License-Identifier: Apache-2.0
//! `qlink_ffi_ref`: the reference side of `make bench-ffi`.
//!
//! What a library outside datafusion-python does today to give it a table or
//! a query planner: build the datafusion-ffi 55.2.0 structs with their public
//! constructors and hand them over in PyCapsules. Nothing here is tuned; the
//! point is to measure the standard route's per-scan and per-query costs
//! (the ForeignSession rebuilt in every `scan`, the TaskContext rebuilt in
//! every `execute`, the plan round trip through protobuf for a planner)
//! beside qlink's.
//!
//! - `MemoryProvider(data)`: a DataFusion `MemTable` (one partition) over the
//!   record batches of `data`, any object exporting an Arrow C stream
//!   (`__arrow_c_stream__`: a pyarrow Table, RecordBatchReader, ...).
//!   `ctx.register_table(name, provider)` calls its
//!   `__datafusion_table_provider__(session)`, which wraps the table with
//!   `FFI_TableProvider::new_with_ffi_codec` and the session's own logical
//!   extension codec, as datafusion-python 55.0.0 expects.
//! - `DefaultPlanner()`: DataFusion's default physical planner exported with
//!   `FFI_QueryPlanner::new_with_ffi_codecs` and the session's codecs;
//!   `ctx.set_query_planner(planner)` installs it. It plans as DataFusion
//!   does by default (see `PassThroughPlanner`), so whatever a query costs
//!   more with it installed is the FFI's. A plan that scans a table fails
//!   with datafusion-python's codecs ("LogicalExtensionCodec is not
//!   provided", gap 1 of the upstream findings): use it for `SELECT 1`.

use std::ffi::CStr;
use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::datasource::MemTable;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::query_planner::FFI_QueryPlanner;
use datafusion_ffi::table_provider::FFI_TableProvider;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The datafusion-ffi version these capsules are laid out for.
const DATAFUSION_FFI_VERSION: &str = "55.2.0";

/// Borrow the `T` inside the capsule `method()` of `obj` returns (or inside
/// `obj` itself when it is already a capsule), after checking the capsule's
/// name. The value stays owned by the capsule; callers clone what they keep.
fn capsule_value<'py, T: Clone>(obj: &Bound<'py, PyAny>, method: &str, name: &CStr) -> PyResult<T> {
    let capsule = if obj.hasattr(method)? { obj.call_method0(method)? } else { obj.clone() };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| PyTypeError::new_err(format!("{method} did not return a PyCapsule")))?;
    let ptr = capsule.pointer_checked(Some(name))?;
    // SAFETY: the name check above is the protocol's promise that the capsule
    // holds a `T` (datafusion-python puts these structs in by value); the
    // capsule outlives this borrow, and the clone is an owned handle.
    Ok(unsafe { ptr.cast::<T>().as_ref() }.clone())
}

fn logical_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    capsule_value(session, "__datafusion_logical_extension_codec__", c"datafusion_logical_extension_codec")
}

fn physical_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_PhysicalExtensionCodec> {
    capsule_value(session, "__datafusion_physical_extension_codec__", c"datafusion_physical_extension_codec")
}

/// All record batches of an object exporting an Arrow C stream.
fn read_arrow_stream(data: &Bound<'_, PyAny>) -> PyResult<(arrow::datatypes::SchemaRef, Vec<RecordBatch>)> {
    let capsule = data
        .call_method0("__arrow_c_stream__")
        .map_err(|_| PyTypeError::new_err("data must export an Arrow C stream (__arrow_c_stream__), e.g. a pyarrow Table"))?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| PyTypeError::new_err("__arrow_c_stream__ did not return a PyCapsule"))?;
    let ptr = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
    // SAFETY: an "arrow_array_stream" capsule holds an ArrowArrayStream;
    // from_raw moves it out and leaves a released one for the capsule's
    // destructor, as the Arrow PyCapsule protocol requires of consumers.
    let reader = unsafe { ArrowArrayStreamReader::from_raw(ptr.cast::<FFI_ArrowArrayStream>().as_ptr()) }
        .map_err(|e| PyValueError::new_err(format!("cannot import the Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| PyValueError::new_err(format!("cannot read the Arrow stream: {e}")))?;
    Ok((schema, batches))
}

/// A MemTable exported through `FFI_TableProvider` (see the module docs).
#[pyclass(module = "qlink_ffi_ref", name = "MemoryProvider", frozen)]
struct MemoryProvider {
    table: Arc<MemTable>,
}

#[pymethods]
impl MemoryProvider {
    /// `data`: an object exporting an Arrow C stream; its batches become
    /// the table's one partition (as `register_record_batches(name, [batches])`).
    #[new]
    fn new(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (schema, batches) = read_arrow_stream(data)?;
        let table = MemTable::try_new(schema, vec![batches]).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Self { table: Arc::new(table) })
    }

    /// The datafusion-python table protocol: a "datafusion_table_provider"
    /// capsule holding an `FFI_TableProvider`, built with the session's
    /// logical codec. Filters are not pushed down (the benchmark has none).
    fn __datafusion_table_provider__<'py>(&self, py: Python<'py>, session: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec(session)?;
        let provider = FFI_TableProvider::new_with_ffi_codec(self.table.clone(), false, None, codec);
        PyCapsule::new_with_value(py, provider, c"datafusion_table_provider")
    }
}

/// DataFusion's default physical planner, with DataFusion's default physical
/// optimizer rules in a state of its own. The session handed over through
/// the FFI is a `ForeignSession` whose optimizer rules are the host's, wrapped:
/// the plans they return are foreign nodes that datafusion-python's physical
/// codec cannot encode for the trip back (gap 3 of the upstream findings).
#[derive(Debug)]
struct PassThroughPlanner {
    state: SessionState,
}

#[async_trait]
impl QueryPlanner for PassThroughPlanner {
    async fn create_physical_plan(&self, plan: &LogicalPlan, _session: &dyn Session) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::default().create_physical_plan(plan, &self.state).await
    }
}

/// The default planner exported through `FFI_QueryPlanner`.
#[pyclass(module = "qlink_ffi_ref", name = "DefaultPlanner", frozen)]
struct DefaultPlanner {
    state: SessionState,
}

#[pymethods]
impl DefaultPlanner {
    #[new]
    fn new() -> Self {
        Self { state: SessionStateBuilder::new().with_default_features().build() }
    }

    /// The datafusion-python planner protocol: a "datafusion_query_planner"
    /// capsule holding an `FFI_QueryPlanner` with the session's codecs.
    #[pyo3(signature = (session=None))]
    fn __datafusion_query_planner__<'py>(&self, py: Python<'py>, session: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let session = session
            .ok_or_else(|| PyValueError::new_err("DefaultPlanner needs the session it is installed on (for its extension codecs)"))?;
        let planner = FFI_QueryPlanner::new_with_ffi_codecs(
            Arc::new(PassThroughPlanner { state: self.state.clone() }),
            logical_codec(session)?,
            physical_codec(session)?,
        );
        PyCapsule::new_with_value(py, planner, c"datafusion_query_planner")
    }
}

#[pymodule]
fn qlink_ffi_ref(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MemoryProvider>()?;
    m.add_class::<DefaultPlanner>()?;
    m.add("DATAFUSION_FFI_VERSION", DATAFUSION_FFI_VERSION)?;
    Ok(())
}
