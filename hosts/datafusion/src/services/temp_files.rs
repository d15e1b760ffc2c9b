// SPDX-License-Identifier: Apache-2.0
//! `ql_temp_files` over DataFusion's disk manager.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

#[allow(unused_imports)]
use super::*;
use crate::error::{cstr, guard_status, guard_value, set_df_error, set_error};
use crate::ffi::*;

struct TempFile {
    _file: Arc<dyn datafusion::execution::spill_file::SpillFile>,
    path: CString,
}

unsafe extern "C" fn temp_file_release(t: *mut ql_temp_file) {
    guard_value((), || {
        if !(*t).private_data.is_null() {
            drop(Box::from_raw((*t).private_data as *mut TempFile));
        }
        (*t).private_data = std::ptr::null_mut();
        (*t).release = None;
    })
}

pub(crate) unsafe extern "C" fn temp_files_create(
    self_: *const ql_temp_files,
    purpose: *const c_char,
    out: *mut ql_temp_file,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "temp file create", || {
        let env = &*((*self_).private_data as *const EnvState);
        if !env.runtime.disk_manager.tmp_files_enabled() {
            return set_error(error, QL_ENOTSUP, "the session's disk manager is disabled");
        }
        match env.runtime.disk_manager.create_tmp_file(&cstr(purpose)) {
            Ok(file) => {
                let Some(path) = file.path().map(|p| p.to_string_lossy().into_owned()) else {
                    return set_error(error, QL_ENOTSUP, "the session's temp files are not local files");
                };
                let tf = Box::new(TempFile { _file: file, path: CString::new(path).unwrap_or_default() });
                *out = ql_temp_file {
                    path: tf.path.as_ptr(),
                    release: Some(temp_file_release),
                    private_data: Box::into_raw(tf) as *mut c_void,
                };
                QL_OK
            }
            Err(e) => set_df_error(error, &e),
        }
    })
}
