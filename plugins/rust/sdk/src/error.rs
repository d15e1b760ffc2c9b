// SPDX-License-Identifier: Apache-2.0
//! Errors across the ABI: `ql_error` filled by the plugin (its release lives
//! here), statuses from DataFusion errors, and the guard every `extern "C"`
//! entry point runs its body in, so a panic becomes QL_EINTERNAL and never
//! unwinds into the host.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

use datafusion::error::DataFusionError;
use qlink_sys::*;

/// A failed call: an ABI status (`enum ql_status`) and a one-line message
/// naming what was wrong.
#[derive(Debug, Clone)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

/// What the SDK's functions return.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(status: i32, message: impl Into<String>) -> Self {
        Error { status, message: message.into() }
    }
    /// QL_EINVAL: a bad argument or option.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(QL_EINVAL, message)
    }
    /// QL_ENOTFOUND: a named thing does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(QL_ENOTFOUND, message)
    }
    /// QL_ENOTSUP: a valid request this plugin does not support.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(QL_ENOTSUP, message)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The ABI status of a DataFusion error (by its root cause).
pub fn status_of(e: &DataFusionError) -> i32 {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(_) => QL_ERESOURCES,
        DataFusionError::NotImplemented(_) => QL_ENOTSUP,
        DataFusionError::Plan(_) | DataFusionError::SchemaError(..) | DataFusionError::Configuration(_) => QL_EINVAL,
        DataFusionError::IoError(_) | DataFusionError::ObjectStore(_) => QL_EIO,
        DataFusionError::ArrowError(..) | DataFusionError::ParquetError(_) => QL_EDATA,
        DataFusionError::External(inner) => match inner.downcast_ref::<Error>() {
            Some(e) => e.status,
            None => QL_EINTERNAL,
        },
        _ => QL_EINTERNAL,
    }
}

impl From<DataFusionError> for Error {
    fn from(e: DataFusionError) -> Self {
        let message = match e.find_root() {
            DataFusionError::External(inner) => match inner.downcast_ref::<Error>() {
                Some(q) => q.message.clone(),
                None => inner.to_string(),
            },
            DataFusionError::Plan(m)
            | DataFusionError::Execution(m)
            | DataFusionError::NotImplemented(m)
            | DataFusionError::ResourcesExhausted(m)
            | DataFusionError::Configuration(m) => m.clone(),
            root => root.to_string(),
        };
        Error { status: status_of(&e), message }
    }
}

impl From<arrow::error::ArrowError> for Error {
    fn from(e: arrow::error::ArrowError) -> Self {
        Error::new(QL_EDATA, e.to_string())
    }
}

impl From<Error> for DataFusionError {
    fn from(e: Error) -> Self {
        if e.status == QL_ERESOURCES {
            DataFusionError::ResourcesExhausted(e.message)
        } else {
            DataFusionError::External(Box::new(e))
        }
    }
}

/// A host's `ql_error` as an SDK error (`status` when the host left it unset);
/// releases it.
pub fn take_error(status: c_int, error: &mut ql_error) -> Error {
    let message = if error.release.is_some() && !error.message.is_null() {
        qlink_convert::cstr(error.message)
    } else {
        format!("the host failed with status {status}")
    };
    if let Some(release) = error.release {
        // SAFETY: filled by the host with its own release.
        unsafe { release(error) };
    }
    Error::new(status, message)
}

fn sqlstate(status: i32) -> &'static [u8; 5] {
    match status {
        QL_EINVAL => b"22023",
        QL_ENOTFOUND => b"42704",
        QL_ENOTSUP | QL_EVERSION => b"0A000",
        QL_ENOMEM => b"53200",
        QL_ERESOURCES => b"53000",
        QL_EIO => b"58030",
        QL_EDATA => b"22000",
        QL_ECANCELLED => b"57014",
        QL_ESTATE => b"55000",
        QL_EOVERFLOW => b"22003",
        _ => b"XX000",
    }
}

unsafe extern "C" fn error_release(e: *mut ql_error) {
    if e.is_null() {
        return;
    }
    if !(*e).message.is_null() {
        // SAFETY: made by CString::into_raw in fill.
        drop(CString::from_raw((*e).message));
    }
    (*e).message = std::ptr::null_mut();
    (*e).release = None;
}

/// Fill the caller's `error` (may be NULL) and return the status. The
/// message is one line: newlines become spaces.
pub fn fill(error: *mut ql_error, e: &Error) -> c_int {
    let status = if e.status == QL_OK { QL_EINTERNAL } else { e.status };
    if error.is_null() {
        return status;
    }
    // SAFETY: a caller-owned ql_error; never write past the 0.1 layout, which
    // is this struct's whole size.
    unsafe {
        let err = &mut *error;
        if let Some(release) = err.release {
            release(err);
        }
        let line: String = e.message.chars().map(|c| if c == '\n' || c == '\0' { ' ' } else { c }).collect();
        err.struct_size = std::mem::size_of::<ql_error>() as u32;
        err.status = status;
        for (d, s) in err.sqlstate.iter_mut().zip(sqlstate(status).iter().chain(std::iter::once(&0u8))) {
            *d = *s as c_char;
        }
        err.message = CString::new(line).unwrap_or_default().into_raw();
        err.release = Some(error_release);
    }
    status
}

/// The body of an `extern "C"` entry point returning a status: errors fill
/// `error`; a panic becomes QL_EINTERNAL naming `what` and never unwinds
/// into the host. The plugin's Tokio runtime is entered for the call.
pub fn guard(error: *mut ql_error, what: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    let _rt = crate::runtime::get().enter();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => QL_OK,
        Ok(Err(e)) => fill(error, &e),
        Err(p) => fill(error, &Error::new(QL_EINTERNAL, format!("panic in a Rust plugin ({what}): {}", qlink_convert::panic_message(&*p)))),
    }
}

/// The body of an `extern "C"` entry point without a status: a panic
/// returns `fallback`.
pub fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}
