// SPDX-License-Identifier: Apache-2.0
//! qlink's extension codecs for datafusion-python 55:
//! `LogicalCodec` and `PhysicalCodec` (`__datafusion_logical_extension_codec__`,
//! `__datafusion_physical_extension_codec__`, `__datafusion_codec_id__`),
//! installed with `ctx.with_extensions(qlink.codecs())` (python/qlink/_codecs.py).
//! They carry qlink tables and planned plans through datafusion-python's plan
//! serialization by reference, within the process (qlink-capsule's `codec`).

use datafusion_ffi::execution::FFI_TaskContextProvider;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use qlink_capsule as capsule;

use crate::capsules::check_datafusion_python;
use crate::runtime::runtime;

/// The task context provider of the session a codec is installed on
/// (cloned), from its `__datafusion_task_context_provider__()`.
fn task_context_provider(session: Option<&Bound<'_, PyAny>>) -> PyResult<FFI_TaskContextProvider> {
    let getter = "__datafusion_task_context_provider__";
    let Some(session) = session.filter(|s| s.hasattr(getter).unwrap_or(false)) else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "qlink's codecs need the session they are installed on (one with __datafusion_task_context_provider__); \
             install them with ctx.with_extensions(qlink.codecs())",
        ));
    };
    let cap = session.call_method0(getter)?.cast_into::<PyCapsule>()?;
    let ptr = cap.pointer_checked(Some(c"datafusion_task_context_provider"))?;
    // SAFETY: the capsule name says it holds an FFI_TaskContextProvider.
    Ok(unsafe { &*(ptr.as_ptr() as *const FFI_TaskContextProvider) }.clone())
}

/// qlink's logical extension codec: qlink tables by reference.
#[pyclass(module = "qlink._qlink", name = "LogicalCodec", frozen)]
pub struct PyLogicalCodec;

#[pymethods]
impl PyLogicalCodec {
    #[new]
    fn new() -> Self {
        PyLogicalCodec
    }

    /// The id datafusion-python tags this codec's payloads with.
    #[getter]
    fn __datafusion_codec_id__(&self) -> &'static str {
        capsule::CODEC_ID
    }

    #[pyo3(signature = (session=None))]
    fn __datafusion_logical_extension_codec__<'py>(
        &self,
        py: Python<'py>,
        session: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        let tasks = task_context_provider(session.as_ref())?;
        let ffi = capsule::export_logical_codec(tasks, Some(runtime().handle().clone()));
        PyCapsule::new_with_value(py, ffi, c"datafusion_logical_extension_codec")
    }

    fn __repr__(&self) -> String {
        format!("qlink.LogicalCodec({})", capsule::CODEC_ID)
    }
}

/// qlink's physical extension codec: a qlink planner's plan by reference.
#[pyclass(module = "qlink._qlink", name = "PhysicalCodec", frozen)]
pub struct PyPhysicalCodec;

#[pymethods]
impl PyPhysicalCodec {
    #[new]
    fn new() -> Self {
        PyPhysicalCodec
    }

    /// The id datafusion-python tags this codec's payloads with.
    #[getter]
    fn __datafusion_codec_id__(&self) -> &'static str {
        capsule::CODEC_ID
    }

    #[pyo3(signature = (session=None))]
    fn __datafusion_physical_extension_codec__<'py>(
        &self,
        py: Python<'py>,
        session: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        check_datafusion_python(py)?;
        let tasks = task_context_provider(session.as_ref())?;
        let ffi = capsule::export_physical_codec(tasks, Some(runtime().handle().clone()));
        PyCapsule::new_with_value(py, ffi, c"datafusion_physical_extension_codec")
    }

    fn __repr__(&self) -> String {
        format!("qlink.PhysicalCodec({})", capsule::CODEC_ID)
    }
}

/// Undecoded planned plans held by reference (tests: returns to 0).
#[pyfunction]
pub fn _planned_plans_held() -> usize {
    capsule::registry::plans_held()
}
