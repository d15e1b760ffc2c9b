// SPDX-License-Identifier: Apache-2.0
//! Distributed execution on datafusion-distributed 4.0 (issue #19): a qlink
//! table scan crosses to a worker as a recipe, never as data.
//!
//! - `recipe`: the wire form of a [`ScanRecipe`](crate::recipe::ScanRecipe)
//!   (plugin identity, provider origin, projection, filters as DataFusion's
//!   own protobuf expressions, limit, partitions and tasks).
//! - `plugin_identity`: which build of a plugin the coordinator loaded.
//! - `codec`: the physical extension codec both sides install; a worker
//!   rebuilds the scan with its own copy of the plugin, which must be the
//!   same build (name, version, ABI version and file digest).
//! - `task_scan`: a scan's partitions divided among a stage's tasks, so
//!   each worker reads only its own chunk blocks.
//! - `handlers`: the task-count, leaf-scaling and routing hooks that split
//!   scans and place task t on worker t mod N.
//! - `functions`: the plugins whose functions a query may call, named in
//!   its metadata, so a worker registers the same builds' functions.
//! - `planner`: planner-plugin nodes and scans a worker cannot rebuild keep
//!   the whole query on the coordinator.
//! - `session`: the coordinator's and the worker's session set-up.
//! - `auth`: the secret every call between them carries.

mod auth;
mod codec;
mod functions;
mod handlers;
mod planner;
mod plugin_identity;
mod recipe;
mod session;
mod task_scan;

pub use auth::{RequireSecret, Secret, SecretChannelResolver, MIN_SECRET_LEN, SECRET_ENV};
pub use codec::{PluginLoader, QlinkCodec};
pub use functions::{register_shipped, ShippedPlugins};
pub use handlers::{desired_task_count, route_tasks, scale_up_leaf};
pub use planner::{is_shippable, QlinkDistributedPlanner};
pub use plugin_identity::PluginIdentity;
pub use session::{coordinator_state, worker_state, StaticWorkers};
pub use task_scan::{task_partitions, worker_of, TaskScanExec};
