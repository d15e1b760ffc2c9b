// SPDX-License-Identifier: Apache-2.0
//! `ql_runtime_env`: the session's memory pool, object-store registry and
//! temp files behind the ABI, built per scan or execute in O(1).

use std::os::raw::c_void;
use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;

#[allow(unused_imports)]
use super::*;
use crate::ffi::*;

/// The runtime environment view: DataFusion's own services behind the ABI.
/// Boxed so the self-pointers stay valid; built per scan/execute in O(1).
pub struct EnvState {
    pub runtime: Arc<RuntimeEnv>,
    pub env: ql_runtime_env,
    pool: ql_memory_pool,
    stores: ql_object_store_registry,
    temp: ql_temp_files,
}

impl EnvState {
    pub fn new(runtime: Arc<RuntimeEnv>) -> Box<EnvState> {
        let mut b = Box::new(EnvState {
            runtime,
            env: zeroed(),
            pool: ql_memory_pool {
                struct_size: std::mem::size_of::<ql_memory_pool>() as u32,
                reservation_new: Some(pool_reservation_new),
                reserved: Some(pool_reserved),
                limit: Some(pool_limit),
                private_data: std::ptr::null_mut(),
            },
            stores: ql_object_store_registry {
                struct_size: std::mem::size_of::<ql_object_store_registry>() as u32,
                get_store: Some(registry_get_store),
                private_data: std::ptr::null_mut(),
            },
            temp: ql_temp_files {
                struct_size: std::mem::size_of::<ql_temp_files>() as u32,
                create: Some(temp_files_create),
                private_data: std::ptr::null_mut(),
            },
        });
        let me = &mut *b as *mut EnvState as *mut c_void;
        b.pool.private_data = me;
        b.stores.private_data = me;
        b.temp.private_data = me;
        b.env = ql_runtime_env {
            struct_size: std::mem::size_of::<ql_runtime_env>() as u32,
            memory_pool: &b.pool,
            object_stores: &b.stores,
            temp_files: &b.temp,
            private_data: me,
        };
        b
    }
}
