// SPDX-License-Identifier: Apache-2.0
//! The host's services as DataFusion's: its object-store registry behind
//! DataFusion's `ObjectStoreRegistry` (so every path a plugin reads passes
//! the host's gates and sandbox settings) and its memory pool behind
//! DataFusion's `MemoryPool` (so a plugin's bytes count against the host
//! session's memory limit).

pub mod memory_pool;
pub mod object_store;
