// SPDX-License-Identifier: Apache-2.0
//! Status codes and `struct ql_error` on the Rust side: turning a plugin's
//! error into a DataFusion error (one line, the plugin's message), filling a
//! `ql_error` from Rust, and catching panics at every `extern "C"` edge.

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use datafusion::error::DataFusionError;

use crate::ffi::*;

pub type Result<T> = std::result::Result<T, DataFusionError>;

/// Owns a `ql_error` a callee may fill; releases it on drop.
pub struct ErrorSlot(pub ql_error);

impl ErrorSlot {
    pub fn new() -> Self {
        ErrorSlot(ql_error::new())
    }
    pub fn ptr(&mut self) -> *mut ql_error {
        &mut self.0
    }
    pub fn message(&self) -> String {
        if self.0.release.is_none() || self.0.message.is_null() {
            return String::new();
        }
        // SAFETY: a set error has a NUL-terminated message.
        unsafe { CStr::from_ptr(self.0.message) }.to_string_lossy().into_owned()
    }
    /// Turn a non-OK status returned with this error into a DataFusion error.
    pub fn check(&mut self, status: c_int, what: &str) -> Result<()> {
        if status == QL_OK {
            return Ok(());
        }
        Err(status_error(status, &self.message(), what))
    }

    /// `check` whose context is built only on failure (per-query paths:
    /// a `format!` on every success is an allocation and a format per call).
    pub fn check_with(&mut self, status: c_int, what: impl FnOnce() -> String) -> Result<()> {
        if status == QL_OK {
            return Ok(());
        }
        Err(status_error(status, &self.message(), &what()))
    }
}

impl Default for ErrorSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ErrorSlot {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: the filler set release; it frees the message.
            unsafe { release(&mut self.0) };
        }
    }
}

pub fn status_name(status: c_int) -> String {
    // SAFETY: ql_status_name returns a static string.
    unsafe { CStr::from_ptr(ql_status_name(status)) }.to_string_lossy().into_owned()
}

/// A DataFusion error for a failed qlink call: ResourcesExhausted for a pool
/// refusal (so DataFusion treats it like its own), NotImplemented for
/// QL_ENOTSUP, an execution error otherwise. `what` names the call when the
/// callee left no message.
pub fn status_error(status: c_int, message: &str, what: &str) -> DataFusionError {
    let msg = if message.is_empty() { format!("{what} failed with {}", status_name(status)) } else { message.to_string() };
    match status {
        QL_ERESOURCES => DataFusionError::ResourcesExhausted(msg),
        QL_ENOTSUP => DataFusionError::NotImplemented(msg),
        _ => DataFusionError::Execution(msg),
    }
}

/// The status a DataFusion error maps to when it crosses back to C.
pub fn error_status(e: &DataFusionError) -> c_int {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(_) => QL_ERESOURCES,
        DataFusionError::NotImplemented(_) => QL_ENOTSUP,
        DataFusionError::ObjectStore(err) => match err.as_ref() {
            object_store::Error::NotFound { .. } => QL_ENOTFOUND,
            _ => QL_EIO,
        },
        DataFusionError::IoError(_) => QL_EIO,
        DataFusionError::Plan(_) | DataFusionError::SQL(..) => QL_EINVAL,
        _ => QL_EINTERNAL,
    }
}

/// The message of a DataFusion error without DataFusion's nested prefixes.
pub fn error_message(e: &DataFusionError) -> String {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(m) | DataFusionError::Execution(m) | DataFusionError::NotImplemented(m) => m.clone(),
        DataFusionError::Plan(m) => m.clone(),
        root => root.to_string(),
    }
}

/// Fill `error` (may be NULL) with `status` and `message` through libqlink,
/// so the release callback lives in libqlink. Returns `status`.
pub fn set_error(error: *mut ql_error, status: c_int, message: &str) -> c_int {
    if error.is_null() {
        return status;
    }
    let msg = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: error points at a caller-owned ql_error; "%s" with a C string.
    unsafe { ql_error_set(error, status, c"%s".as_ptr(), msg.as_ptr()) }
}

pub fn set_df_error(error: *mut ql_error, e: &DataFusionError) -> c_int {
    set_error(error, error_status(e), &error_message(e))
}

/// Run the body of an `extern "C"` function that returns a status: a panic
/// becomes QL_EINTERNAL with its message instead of unwinding into C.
pub fn guard_status(error: *mut ql_error, what: &str, f: impl FnOnce() -> c_int) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(status) => status,
        Err(p) => set_error(error, QL_EINTERNAL, &format!("panic in the DataFusion host ({what}): {}", qlink_convert::panic_message(&*p))),
    }
}

/// Run the body of an `extern "C"` function with no status: a panic returns
/// `fallback`.
pub fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

pub use qlink_convert::cstr;

/// Objects this adapter exported (host plans, task contexts), by their
/// private_data address: how a handle coming back from a plugin is
/// recognised as ours and unwrapped instead of wrapped again.
fn ours_set() -> &'static std::sync::Mutex<std::collections::HashSet<usize>> {
    static SET: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<usize>>> = std::sync::OnceLock::new();
    SET.get_or_init(Default::default)
}

pub fn mark_ours(p: *mut std::os::raw::c_void) {
    ours_set().lock().unwrap().insert(p as usize);
}

pub fn unmark_ours(p: *mut std::os::raw::c_void) {
    ours_set().lock().unwrap().remove(&(p as usize));
}

pub fn ours(p: *mut std::os::raw::c_void) -> bool {
    !p.is_null() && ours_set().lock().unwrap().contains(&(p as usize))
}
