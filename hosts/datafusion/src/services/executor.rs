// SPDX-License-Identifier: Apache-2.0
//! `ql_executor` (gap G4): jobs a plugin spawns run on the host's threads.

use std::os::raw::{c_int, c_void};
use std::sync::Arc;

#[allow(unused_imports)]
use super::*;
use crate::blocking::{block_on, io_runtime};
use crate::error::{guard_status, guard_value, set_error};
use crate::ffi::*;
use crate::plugin::Plugin;

struct JobState {
    handle: Option<tokio::task::JoinHandle<(c_int, String)>>,
}

struct SendPtr(*mut c_void);
// SAFETY: the plugin hands `arg` to its job on purpose; the ABI says fn may run on any thread.
unsafe impl Send for SendPtr {}

unsafe extern "C" fn job_wait(job: *mut ql_job, error: *mut ql_error) -> c_int {
    guard_status(error, "job wait", || {
        let state = &mut *((*job).private_data as *mut JobState);
        let Some(handle) = state.handle.take() else {
            return set_error(error, QL_ESTATE, "job already waited for");
        };
        match block_on(handle) {
            Ok((QL_OK, _)) => QL_OK,
            Ok((status, msg)) => set_error(error, status, &msg),
            Err(e) => set_error(error, QL_EINTERNAL, &format!("spawned job failed: {e}")),
        }
    })
}

unsafe extern "C" fn job_release(job: *mut ql_job) {
    guard_value((), || {
        if !(*job).private_data.is_null() {
            // Dropping a JoinHandle detaches the job; it still runs to completion.
            drop(Box::from_raw((*job).private_data as *mut JobState));
        }
        (*job).private_data = std::ptr::null_mut();
        (*job).release = None;
    })
}

pub struct ExecutorState {
    pub raw: ql_executor,
    handle: tokio::runtime::Handle,
    plugin: Option<Arc<Plugin>>,
}

unsafe extern "C" fn executor_spawn(
    self_: *const ql_executor,
    f: Option<ql_job_fn>,
    arg: *mut c_void,
    out: *mut ql_job,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "executor spawn", || {
        let Some(f) = f else { return set_error(error, QL_EINVAL, "spawn: fn is NULL") };
        let ex = &*((*self_).private_data as *const ExecutorState);
        let plugin = ex.plugin.clone();
        let arg = SendPtr(arg);
        let handle = ex.handle.spawn_blocking(move || {
            let arg = arg;
            let _g = plugin.as_ref().map(|p| p.enter());
            let mut err = crate::error::ErrorSlot::new();
            let status = f(arg.0, err.ptr());
            (status, err.message())
        });
        *out = ql_job {
            wait: Some(job_wait),
            release: Some(job_release),
            private_data: Box::into_raw(Box::new(JobState { handle: Some(handle) })) as *mut c_void,
        };
        QL_OK
    })
}

unsafe extern "C" fn executor_parallelism(_self: *const ql_executor) -> i32 {
    guard_value(1, || std::thread::available_parallelism().map(|n| n.get() as i32).unwrap_or(1))
}

impl ExecutorState {
    /// The executor offered to plugins: runs spawned work on DataFusion's
    /// Tokio runtime (its blocking pool), bracketed by the plugin's hooks.
    pub fn new(plugin: Option<Arc<Plugin>>) -> Box<ExecutorState> {
        let handle = tokio::runtime::Handle::try_current().unwrap_or_else(|_| io_runtime().handle().clone());
        let mut b = Box::new(ExecutorState {
            raw: ql_executor {
                struct_size: std::mem::size_of::<ql_executor>() as u32,
                spawn: Some(executor_spawn),
                parallelism: Some(executor_parallelism),
                private_data: std::ptr::null_mut(),
            },
            handle,
            plugin,
        });
        b.raw.private_data = &mut *b as *mut ExecutorState as *mut c_void;
        b
    }
}
