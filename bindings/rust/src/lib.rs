// SPDX-License-Identifier: Apache-2.0
//! qlink-sys: the qlink C ABI (`include/qlink/*.h`) as Rust types, and
//! libqlink (`src/`) linked as a static library.
//!
//! - [`abi`] (re-exported at the root): `#[repr(C)]` mirrors of every ABI
//!   struct and constant, and the libqlink functions hosts call. The Arrow C
//!   Data and Stream structs are arrow-rs's own `FFI_*` types, which follow
//!   the same specification. Each declaration is checked at compile time
//!   against the C compiler's reading of the headers (see `abi_struct!`).
//! - [`plugins`]: where this build put the plugins the workspace's tests and
//!   benchmarks load (built by CMake with the project's own flags).
//!
//! The C side is built by build.rs through the repository's CMakeLists.txt,
//! so CMake is the one description of how every C file is compiled.
#![allow(non_camel_case_types, non_upper_case_globals, dead_code)]

#[macro_use]
mod check;

/// bindgen's reading of the headers: the reference the mirrors are checked
/// against. Not for use: its types differ from the mirrors (Arrow structs,
/// anonymous unions).
#[doc(hidden)]
#[allow(non_snake_case, improper_ctypes, unused, clippy::all)]
pub mod c {
    include!(concat!(env!("OUT_DIR"), "/abi_bindgen.rs"));
}

pub mod abi;
pub use abi::*;

/// Plugins built by CMake for this crate's build (RelWithDebInfo), for the
/// workspace's tests and benchmarks.
#[cfg(feature = "libqlink")]
pub mod plugins {
    /// The folder holding `qlink_sample.so`, `qlink_fold.so`, `qlink_zarr.so`
    /// and `qlink_dftest.so`.
    pub const DIR: &str = env!("QLINK_PLUGIN_DIR");

    /// The sample plugin (plugins/sample).
    pub const SAMPLE: &str = concat!(env!("QLINK_PLUGIN_DIR"), "/qlink_sample.so");
    /// qlink_fold, the einsum planner (plugins/fold).
    pub const FOLD: &str = concat!(env!("QLINK_PLUGIN_DIR"), "/qlink_fold.so");
    /// qlink_zarr, Zarr stores as tables (plugins/zarr).
    pub const ZARR: &str = concat!(env!("QLINK_PLUGIN_DIR"), "/qlink_zarr.so");
    /// The DataFusion host's test and benchmark plugin (tests/dftest).
    pub const DFTEST: &str = concat!(env!("QLINK_PLUGIN_DIR"), "/qlink_dftest.so");
}
