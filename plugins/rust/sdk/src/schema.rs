// SPDX-License-Identifier: Apache-2.0
//! A DataFusion `SchemaProvider` as a `ql_schema_provider` (qlink/table.h):
//! its table names, taken once when the host opens it (sorted), and each
//! table opened on demand as a [`crate::table`] export, scanned in the
//! scanning host session with that session's object stores and memory pool.
//!
//! The ABI's `table` call carries no session: a provider whose `table`
//! reads files or URLs (rather than returning what it found when it was
//! made, as DataFusion's `ListingSchemaProvider` after `refresh` and
//! `MemorySchemaProvider` do) gets no object store there, and its error
//! says so.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use datafusion::catalog::SchemaProvider;
use qlink_sys::*;

use crate::error::{guard, guard_value, Error};
use crate::session::Library;

struct SchemaState {
    provider: Arc<dyn SchemaProvider>,
    /// The provider's table names when it was opened, sorted; names
    /// holding a NUL (no C string) are left out.
    names: Vec<CString>,
    plugin: &'static Library,
    /// Names errors and the tables' labels: "<plugin>.<schema>".
    label: String,
}

fn state(s: *const ql_schema_provider) -> &'static SchemaState {
    // SAFETY: private_data is the SchemaState this module boxed.
    unsafe { crate::private::borrow((*s).private_data) }
}

/// `provider` as a `ql_schema_provider` the caller owns.
pub fn export_schema_provider(provider: Arc<dyn SchemaProvider>, plugin: &'static Library, label: String) -> ql_schema_provider {
    let mut names: Vec<String> = provider.table_names();
    names.sort();
    names.dedup();
    let names = names.into_iter().filter_map(|n| CString::new(n).ok()).collect();
    let mut out: ql_schema_provider = zeroed();
    out.struct_size = std::mem::size_of::<ql_schema_provider>() as u32;
    out.table_count = Some(schema_table_count);
    out.table_name = Some(schema_table_name);
    out.table = Some(schema_table);
    out.release = Some(schema_release);
    out.private_data = crate::private::into_private(Box::new(SchemaState { provider, names, plugin, label }));
    out
}

unsafe extern "C" fn schema_table_count(s: *const ql_schema_provider) -> i64 {
    guard_value(0, || state(s).names.len() as i64)
}

unsafe extern "C" fn schema_table_name(s: *const ql_schema_provider, i: i64) -> *const c_char {
    guard_value(std::ptr::null(), || {
        let names = &state(s).names;
        usize::try_from(i).ok().and_then(|i| names.get(i)).map_or(std::ptr::null(), |n| n.as_ptr())
    })
}

unsafe extern "C" fn schema_table(
    s: *const ql_schema_provider,
    name: *const c_char,
    out: *mut ql_table_provider,
    error: *mut ql_error,
) -> c_int {
    guard(error, "schema table", || {
        let st = state(s);
        if name.is_null() || out.is_null() {
            return Err(Error::invalid(format!("{}: table: name or out is NULL", st.label)));
        }
        let n = qlink_convert::cstr(name);
        let table = crate::runtime::block_on(st.provider.table(&n))?
            .ok_or_else(|| Error::not_found(format!("no table '{n}' in schema {}", st.label)))?;
        std::ptr::write(out, crate::table::export_table(table, st.plugin, format!("{}.{n}", st.label)));
        Ok(())
    })
}

unsafe extern "C" fn schema_release(s: *mut ql_schema_provider) {
    guard_value((), || {
        crate::private::drop_box::<SchemaState>(&mut (*s).private_data);
        (*s).release = None;
    })
}
