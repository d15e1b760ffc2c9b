// SPDX-License-Identifier: Apache-2.0
//! An ABI object's `private_data`: the Rust state behind it, boxed when the
//! object is exported, borrowed by its members, dropped by its `release`.

use std::os::raw::c_void;

/// `state` as an object's `private_data` (taken back by [`drop_box`]).
pub fn into_private<T>(state: Box<T>) -> *mut c_void {
    Box::into_raw(state) as *mut c_void
}

/// The state behind `private_data`.
///
/// # Safety
/// `private_data` was made by [`into_private`] with this `T` and is not yet
/// dropped; the borrow must not outlive the object.
pub unsafe fn borrow<T>(private_data: *mut c_void) -> &'static T {
    &*(private_data as *const T)
}

/// Drop the state behind `*slot` (if any) and clear the slot.
///
/// # Safety
/// `*slot` is NULL or was made by [`into_private`] with this `T`.
pub unsafe fn drop_box<T>(slot: &mut *mut c_void) {
    if !slot.is_null() {
        drop(Box::from_raw(*slot as *mut T));
    }
    *slot = std::ptr::null_mut();
}
