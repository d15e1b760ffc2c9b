// SPDX-License-Identifier: Apache-2.0
//! Values computed once per partition of an immutable plan.

use std::sync::Arc;

use crate::error::Result;

/// A value computed once per partition argument (None: the whole plan) of
/// an immutable plan, such as its statistics. Thread-safe; a computation
/// runs under the lock, so each argument is computed at most once, and an
/// error is not kept (the next request tries again).
pub struct PartitionCache<T: ?Sized>(std::sync::Mutex<Vec<(Option<usize>, Arc<T>)>>);

impl<T: ?Sized> Default for PartitionCache<T> {
    fn default() -> Self {
        PartitionCache(std::sync::Mutex::new(Vec::new()))
    }
}

impl<T: ?Sized> PartitionCache<T> {
    /// The value of `partition`, computed by `compute` on the first request.
    pub fn get_or_try(&self, partition: Option<usize>, compute: impl FnOnce() -> Result<Arc<T>>) -> Result<Arc<T>> {
        let mut slots = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = slots.iter().find(|(p, _)| *p == partition) {
            return Ok(Arc::clone(v));
        }
        let v = compute()?;
        slots.push((partition, Arc::clone(&v)));
        Ok(v)
    }
}
