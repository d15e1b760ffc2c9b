// SPDX-License-Identifier: Apache-2.0
//! Host services handed to plugins (docs/abi.md R8, gaps G4, G5, G6, G8): the
//! session view, the runtime environment (DataFusion's memory pool,
//! object-store registry and disk manager), the executor, and the task
//! context. Each view is one allocation of a few pointers; nothing is
//! enumerated or converted until a plugin asks.

mod executor;
mod memory_pool;
mod object_stores;
mod runtime_env;
mod session;
mod task_context;
mod temp_files;

pub use executor::*;
pub(crate) use memory_pool::*;
pub use object_stores::*;
pub use runtime_env::*;
pub use session::*;
pub use task_context::*;
pub(crate) use temp_files::*;
