// SPDX-License-Identifier: Apache-2.0
//! NUL-terminated copies of Rust strings for the C structs that borrow them.

use std::os::raw::c_char;

/// Somewhere to keep NUL-terminated copies of strings for a C struct that
/// borrows them.
pub trait CStrings {
    fn add(&mut self, s: &str) -> *const c_char;
}

/// NUL-terminated copies of strings, alive as long as this value: a bump
/// arena of fixed chunks (a chunk never moves, so every pointer handed out
/// stays valid), so a plan view's many names cost no allocation each.
/// An interior NUL becomes a space.
#[derive(Default)]
pub struct Strings {
    chunks: Vec<Vec<u8>>,
}

const STRINGS_CHUNK: usize = 4096;

impl CStrings for Strings {
    fn add(&mut self, s: &str) -> *const c_char {
        let need = s.len() + 1;
        let fits = self.chunks.last().is_some_and(|c| c.capacity() - c.len() >= need);
        if !fits {
            self.chunks.push(Vec::with_capacity(need.max(STRINGS_CHUNK)));
        }
        let chunk = self.chunks.last_mut().unwrap();
        let start = chunk.len();
        chunk.extend(s.bytes().map(|b| if b == 0 { b' ' } else { b }));
        chunk.push(0);
        // SAFETY: in bounds; the chunk's buffer is never reallocated (it
        // only grows within its capacity).
        unsafe { chunk.as_ptr().add(start) as *const c_char }
    }
}
