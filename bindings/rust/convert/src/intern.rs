// SPDX-License-Identifier: Apache-2.0
//! Process-lifetime C strings, and C strings read back.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::sync::{Mutex, OnceLock};

/// Interned NUL-terminated strings: identities borrowed by plan views and
/// session lookups stay valid for the life of the process. An interior NUL
/// becomes a space. Thread-safe.
pub fn intern(s: &str) -> &'static CStr {
    static TABLE: OnceLock<Mutex<HashMap<String, &'static CStr>>> = OnceLock::new();
    let mut t = TABLE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = t.get(s) {
        return c;
    }
    let c: &'static CStr = Box::leak(CString::new(s.replace('\0', " ")).unwrap().into_boxed_c_str());
    t.insert(s.to_string(), c);
    c
}

/// A borrowed NUL-terminated C string as an owned `String` (lossy UTF-8);
/// NULL reads as "". Safe to call on what the ABI hands across: every
/// string pointer it passes is NULL or NUL-terminated (docs/abi.md), which
/// is the contract this function relies on rather than an `unsafe` marker
/// at each of its callers.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the ABI hands NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
