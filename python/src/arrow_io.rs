// SPDX-License-Identifier: Apache-2.0
//! Arrow data across the Python boundary through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`, capsule name "arrow_array_stream"):
//! results leave as a stream pyarrow imports without copying, and Python
//! data (anything exporting a stream: pyarrow Table, RecordBatchReader,
//! polars, ...) enters the same way.
//! Spec: https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html

use arrow::array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// An exported stream inside a capsule. The capsule's destructor drops it,
/// and `FFI_ArrowArrayStream`'s drop calls `release` unless a consumer moved
/// the stream out (which sets `release` to NULL), as the protocol requires.
#[repr(transparent)]
struct SendStream(FFI_ArrowArrayStream);
// SAFETY: an exported stream is owned by whoever holds the capsule; the
// reader inside it is Send.
unsafe impl Send for SendStream {}

/// A one-shot holder of a record batch reader that pyarrow consumes through
/// `__arrow_c_stream__`.
#[pyclass(module = "qlink._qlink", name = "_ArrowStream", frozen)]
pub struct ArrowStream {
    reader: std::sync::Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
}

#[pymethods]
impl ArrowStream {
    /// Export the stream once (Arrow PyCapsule interface). A requested
    /// schema other than the stream's own is not supported.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the consumer casts if it must; we hand our schema
        let reader = self
            .reader
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("this Arrow stream was already consumed"))?;
        let stream = SendStream(FFI_ArrowArrayStream::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

/// A pyarrow `RecordBatchReader` over `reader` (zero copy).
pub fn to_pyarrow_reader<'py>(py: Python<'py>, reader: Box<dyn RecordBatchReader + Send>) -> PyResult<Bound<'py, PyAny>> {
    let holder = Bound::new(py, ArrowStream { reader: std::sync::Mutex::new(Some(reader)) })?;
    let pa = py.import("pyarrow")?;
    pa.getattr("RecordBatchReader")?.call_method1("from_stream", (holder,))
}

/// A pyarrow `Table` of `batches` with `schema` (zero copy).
pub fn to_pyarrow_table<'py>(py: Python<'py>, schema: SchemaRef, batches: Vec<RecordBatch>) -> PyResult<Bound<'py, PyAny>> {
    let it = RecordBatchIterator::new(batches.into_iter().map(Ok::<_, ArrowError>), schema);
    to_pyarrow_reader(py, Box::new(it))?.call_method0("read_all")
}

/// Read every batch of a Python object that exports an Arrow stream.
pub fn from_python(obj: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "expected Arrow data exporting __arrow_c_stream__ (a pyarrow Table or RecordBatchReader), got {}",
            obj.get_type().name()?
        )));
    }
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| PyTypeError::new_err("__arrow_c_stream__ did not return a capsule"))?;
    let ptr = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
    // SAFETY: a capsule named arrow_array_stream holds an ArrowArrayStream;
    // from_raw moves it out and leaves it released for the capsule's destructor.
    let reader = unsafe { ArrowArrayStreamReader::from_raw(ptr.as_ptr() as *mut FFI_ArrowArrayStream) }
        .map_err(|e| PyValueError::new_err(format!("importing Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| PyValueError::new_err(format!("reading Arrow stream: {e}")))?;
    Ok((schema, batches))
}
