// SPDX-License-Identifier: Apache-2.0
//! `ql_task_context` (gap G8): one partition's view of the session, the
//! runtime environment, the executor and cancellation.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::execution::TaskContext;

#[allow(unused_imports)]
use super::*;
use crate::error::guard_value;
use crate::ffi::*;
use crate::plugin::Plugin;

/// One partition's task context (gap G8): a struct of pointers into a box
/// the stream keeps alive. Building it copies no function or option.
pub struct TaskView {
    pub raw: ql_task_context,
    pub task: Arc<TaskContext>,
    _session: Box<SessionView<'static>>,
    _executor: Box<ExecutorState>,
    pub cancelled: Arc<AtomicBool>,
}

// SAFETY: every member is thread-safe per services.h; the raw pointers point into the box itself.
unsafe impl Send for TaskView {}
unsafe impl Sync for TaskView {}
unsafe impl Send for SessionView<'_> {}
unsafe impl Sync for SessionView<'_> {}
unsafe impl Send for EnvState {}
unsafe impl Sync for EnvState {}
unsafe impl Send for ExecutorState {}
unsafe impl Sync for ExecutorState {}

unsafe extern "C" fn task_is_cancelled(t: *const ql_task_context) -> c_int {
    guard_value(0, || (*((*t).private_data as *const TaskView)).cancelled.load(Ordering::Relaxed) as c_int)
}

impl TaskView {
    pub fn new(task: Arc<TaskContext>, partition: usize, plugin: Option<Arc<Plugin>>) -> Box<TaskView> {
        let batch_size = task.session_config().batch_size() as i64;
        let session = SessionView::new(SessionSource::Task(Arc::clone(&task)));
        let executor = ExecutorState::new(plugin);
        let mut b = Box::new(TaskView {
            raw: ql_task_context {
                struct_size: std::mem::size_of::<ql_task_context>() as u32,
                reserved_: 0,
                partition: partition as i64,
                batch_size,
                session: &session.raw,
                runtime_env: session.env(),
                executor: &executor.raw,
                is_cancelled: Some(task_is_cancelled),
                private_data: std::ptr::null_mut(),
            },
            task,
            _session: session,
            _executor: executor,
            cancelled: Arc::new(AtomicBool::new(false)),
        });
        b.raw.private_data = &mut *b as *mut TaskView as *mut c_void;
        crate::error::mark_ours(b.raw.private_data);
        b
    }
}

impl Drop for TaskView {
    fn drop(&mut self) {
        crate::error::unmark_ours(self.raw.private_data);
    }
}

/// The DataFusion TaskContext behind a task context this adapter made
/// (recognised by its callback), or None for anyone else's.
pub fn task_context_of(ctx: *const ql_task_context) -> Option<Arc<TaskContext>> {
    if ctx.is_null() {
        return None;
    }
    // SAFETY: reading members of a task context the caller passed us.
    unsafe {
        if crate::error::ours((*ctx).private_data) {
            return Some(Arc::clone(&(*((*ctx).private_data as *const TaskView)).task));
        }
    }
    None
}

/// A C string of a plugin, for messages.
pub fn c_text(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: NUL-terminated per the ABI.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}
