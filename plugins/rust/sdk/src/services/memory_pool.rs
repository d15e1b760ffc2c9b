// SPDX-License-Identifier: Apache-2.0
//! The host's memory pool (`ql_memory_pool`, qlink/services.h) as
//! DataFusion's `MemoryPool`, for one partition's execution.
//!
//! Every DataFusion reservation the partition makes (a sort's buffers, a
//! hash table) grows one host reservation named after the plugin, so the
//! plugin's bytes count against the host session's memory limit and a
//! refusal comes back as DataFusion's ResourcesExhausted with the host's
//! message. The host pool is valid until the partition's stream is
//! released: [`HostPool::close`] releases the host reservation then, and
//! anything still running after it counts only locally.

use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryLimit, MemoryPool, MemoryReservation};
use qlink_sys::*;

use crate::error::take_error;

struct State {
    pool: *const ql_memory_pool,
    reservation: Option<ql_memory_reservation>,
}

/// One partition's view of the host pool. Thread-safe (a mutex serialises
/// the host reservation, which has one owner).
pub struct HostPool {
    name: String,
    state: Mutex<State>,
    used: AtomicUsize,
}

// SAFETY: the host pool is thread-safe; the reservation is only touched
// under the mutex.
unsafe impl Send for HostPool {}
unsafe impl Sync for HostPool {}

impl std::fmt::Debug for HostPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostPool({}, {} bytes)", self.name, self.used.load(Ordering::Relaxed))
    }
}

impl std::fmt::Display for HostPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "qlink host pool for {}", self.name)
    }
}

impl HostPool {
    /// A pool over `pool` (NULL: unbounded, counted locally only).
    pub fn new(pool: *const ql_memory_pool, name: &str) -> Self {
        HostPool { name: name.to_string(), state: Mutex::new(State { pool, reservation: None }), used: AtomicUsize::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Grow the host reservation by `bytes`; Err(message) when refused.
    fn host_grow(&self, bytes: usize) -> std::result::Result<(), String> {
        let mut st = self.lock();
        if st.pool.is_null() {
            return Ok(());
        }
        if st.reservation.is_none() {
            let mut r: ql_memory_reservation = zeroed();
            let mut err = ql_error::new();
            let name = CString::new(self.name.replace('\0', " ")).unwrap_or_default();
            // SAFETY: the pool is valid until close (see the module doc).
            let rc = unsafe {
                match (*st.pool).reservation_new {
                    Some(new) => new(st.pool, name.as_ptr(), 0, &mut r, &mut err),
                    None => QL_ENOTSUP,
                }
            };
            if rc != QL_OK {
                let e = take_error(rc, &mut err);
                st.pool = std::ptr::null();
                return if rc == QL_ENOTSUP { Ok(()) } else { Err(e.message) };
            }
            st.reservation = Some(r);
        }
        let r = st.reservation.as_mut().unwrap();
        let mut err = ql_error::new();
        let rc = match r.try_grow {
            // SAFETY: owned reservation, under the mutex.
            Some(grow) => unsafe { grow(r, i64::try_from(bytes).unwrap_or(i64::MAX), &mut err) },
            None => QL_OK,
        };
        if rc != QL_OK {
            return Err(take_error(rc, &mut err).message);
        }
        Ok(())
    }

    fn host_shrink(&self, bytes: usize) {
        let mut st = self.lock();
        if let Some(r) = st.reservation.as_mut() {
            if let (Some(shrink), Some(size)) = (r.shrink, r.size) {
                // SAFETY: owned reservation, under the mutex; never below 0.
                unsafe {
                    let held = size(r).max(0);
                    shrink(r, (bytes as i64).min(held));
                }
            }
        }
    }

    /// The partition's stream is being released: give the host its bytes
    /// back and stop calling it.
    pub fn close(&self) {
        let mut st = self.lock();
        if let Some(mut r) = st.reservation.take() {
            if let Some(release) = r.release {
                // SAFETY: owned; released once.
                unsafe { release(&mut r) };
            }
        }
        st.pool = std::ptr::null();
    }
}

impl Drop for HostPool {
    fn drop(&mut self) {
        self.close();
    }
}

impl MemoryPool for HostPool {
    fn name(&self) -> &str {
        "qlink_host"
    }

    fn grow(&self, _reservation: &MemoryReservation, additional: usize) {
        // Infallible in DataFusion's contract: the bytes are in use already.
        let _ = self.host_grow(additional);
        self.used.fetch_add(additional, Ordering::Relaxed);
    }

    fn shrink(&self, _reservation: &MemoryReservation, shrink: usize) {
        self.host_shrink(shrink);
        self.used.fetch_sub(shrink.min(self.used.load(Ordering::Relaxed)), Ordering::Relaxed);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        self.host_grow(additional).map_err(|m| {
            DataFusionError::ResourcesExhausted(format!(
                "{} ({}) could not grow by {additional} bytes: {m}",
                self.name,
                reservation.consumer().name()
            ))
        })?;
        self.used.fetch_add(additional, Ordering::Relaxed);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn memory_limit(&self) -> MemoryLimit {
        let st = self.lock();
        if st.pool.is_null() {
            return MemoryLimit::Infinite;
        }
        // SAFETY: valid until close.
        match unsafe { (*st.pool).limit.map(|l| l(st.pool)) } {
            Some(l) if l >= 0 => MemoryLimit::Finite(l as usize),
            Some(_) => MemoryLimit::Infinite,
            None => MemoryLimit::Unknown,
        }
    }
}
