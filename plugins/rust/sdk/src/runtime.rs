// SPDX-License-Identifier: Apache-2.0
//! The plugin's own Tokio runtime: DataFusion plans, lists files and runs
//! partitions on it. Each plugin library carries one (its Tokio is its own
//! copy, apart from any host's), created on first use and never shut down
//! (a runtime cannot be dropped from inside itself, and hosts may unload
//! the library only after releasing every object, when it is idle).
//!
//! Host threads block on it (`block_on`) for the ABI's synchronous calls;
//! each entry point enters it (`error::guard`), so code that spawns works.
//!
//! Its worker threads outlive every object, so the library must outlive
//! them: [`pin_library`] marks it never to be unloaded (a host that
//! `dlclose`s a plugin after releasing everything, as the ABI allows, would
//! otherwise unmap code those threads run).

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::Runtime;

/// The runtime, built on first use: a multi-threaded scheduler with as many
/// workers as the machine has cores (at least 2), threads named
/// `qlink-plugin`.
pub fn get() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("qlink-plugin")
            .enable_all()
            .build()
            .expect("qlink-plugin: cannot start a Tokio runtime")
    })
}

/// Run `f` to completion on the plugin's runtime, blocking this (host)
/// thread.
pub fn block_on<F: Future>(f: F) -> F::Output {
    get().block_on(f)
}

/// Keep this library mapped for the life of the process (RTLD_NODELETE),
/// whatever the host does with its own handle. Idempotent; called by
/// `qlink_plugin_init`.
pub fn pin_library() {
    static PINNED: OnceLock<()> = OnceLock::new();
    PINNED.get_or_init(|| {
        // SAFETY: dladdr on an address inside this library; dlopen of the
        // path it names, RTLD_NOLOAD so nothing new is loaded.
        unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            if libc::dladdr(pin_library as *const () as *const libc::c_void, &mut info) != 0 && !info.dli_fname.is_null() {
                libc::dlopen(info.dli_fname, libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
            }
        }
    });
}
