// SPDX-License-Identifier: Apache-2.0
//! `ql_memory_pool` and `ql_memory_reservation` over DataFusion's memory
//! pool (gap G5): a plugin's reservations count against the session's limit.

use std::os::raw::{c_char, c_int, c_void};

use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryReservation};

#[allow(unused_imports)]
use super::*;
use crate::error::{cstr, error_message, guard_status, guard_value, set_error};
use crate::ffi::*;

struct Reservation {
    inner: MemoryReservation,
}

unsafe extern "C" fn reservation_try_grow(self_: *mut ql_memory_reservation, bytes: i64, error: *mut ql_error) -> c_int {
    guard_status(error, "memory reservation try_grow", || {
        if bytes < 0 {
            return set_error(error, QL_EINVAL, &format!("try_grow: negative size {bytes}"));
        }
        let r = &*((*self_).private_data as *const Reservation);
        match r.inner.try_grow(bytes as usize) {
            Ok(()) => QL_OK,
            Err(e) => set_error(error, QL_ERESOURCES, &error_message(&e)),
        }
    })
}

unsafe extern "C" fn reservation_shrink(self_: *mut ql_memory_reservation, bytes: i64) {
    guard_value((), || {
        let r = &*((*self_).private_data as *const Reservation);
        let n = (bytes.max(0) as usize).min(r.inner.size());
        r.inner.shrink(n);
    })
}

unsafe extern "C" fn reservation_size(self_: *const ql_memory_reservation) -> i64 {
    guard_value(0, || (*((*self_).private_data as *const Reservation)).inner.size() as i64)
}

unsafe extern "C" fn reservation_release(self_: *mut ql_memory_reservation) {
    guard_value((), || {
        if (*self_).private_data.is_null() {
            return;
        }
        // Dropping the reservation frees its bytes and unregisters the consumer.
        drop(Box::from_raw((*self_).private_data as *mut Reservation));
        (*self_).private_data = std::ptr::null_mut();
        (*self_).release = None;
    })
}

pub(crate) unsafe extern "C" fn pool_reservation_new(
    self_: *const ql_memory_pool,
    name: *const c_char,
    flags: i32,
    out: *mut ql_memory_reservation,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "memory pool reservation_new", || {
        let env = &*((*self_).private_data as *const EnvState);
        let consumer = MemoryConsumer::new(cstr(name)).with_can_spill(flags & 1 != 0);
        let reservation = consumer.register(&env.runtime.memory_pool);
        *out = ql_memory_reservation {
            struct_size: std::mem::size_of::<ql_memory_reservation>() as u32,
            try_grow: Some(reservation_try_grow),
            shrink: Some(reservation_shrink),
            size: Some(reservation_size),
            release: Some(reservation_release),
            private_data: Box::into_raw(Box::new(Reservation { inner: reservation })) as *mut c_void,
        };
        QL_OK
    })
}

pub(crate) unsafe extern "C" fn pool_reserved(self_: *const ql_memory_pool) -> i64 {
    guard_value(0, || {
        let env = &*((*self_).private_data as *const EnvState);
        env.runtime.memory_pool.reserved() as i64
    })
}

pub(crate) unsafe extern "C" fn pool_limit(self_: *const ql_memory_pool) -> i64 {
    guard_value(-1, || {
        let env = &*((*self_).private_data as *const EnvState);
        match env.runtime.memory_pool.memory_limit() {
            MemoryLimit::Finite(n) => n as i64,
            _ => -1,
        }
    })
}
