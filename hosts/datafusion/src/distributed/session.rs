// SPDX-License-Identifier: Apache-2.0
//! Setting up sessions for distributed execution: the coordinator's (which
//! plans, splits qlink scans among the workers and runs the head stage)
//! and a worker's (which rebuilds the scans it is sent).

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion_distributed::{DistributedExt, SessionStateBuilderExt, WorkerQueryContext, WorkerResolver};
use url::Url;

use crate::distributed::auth::{Secret, SecretChannelResolver};
use crate::distributed::codec::{PluginLoader, QlinkCodec};
use crate::distributed::functions::{register_shipped, ShippedPlugins};
use crate::distributed::handlers::{desired_task_count, route_tasks, scale_up_leaf};
use crate::distributed::planner::{Planned, QlinkDistributedPlanner};

/// A fixed list of workers (`qlink sql --workers URL,...`).
#[derive(Clone, Debug)]
pub struct StaticWorkers(pub Vec<Url>);

impl WorkerResolver for StaticWorkers {
    fn get_urls(&self) -> Result<Vec<Url>, DataFusionError> {
        Ok(self.0.clone())
    }
}

/// `builder` (its config, runtime environment and query planner already
/// set) made a coordinator over `workers`, every call to them carrying
/// `secret`: queries whose qlink nodes can all be rebuilt on a worker are
/// distributed by datafusion-distributed, qlink scans split among tasks;
/// the rest run here as before.
pub fn coordinator_state(mut builder: SessionStateBuilder, workers: Vec<Url>, secret: Secret) -> SessionStateBuilder {
    let local = std::mem::take(builder.query_planner());
    let mut builder = builder.with_query_planner(Arc::new(Planned { local: local.clone() })).with_distributed_planner();
    let distributed = std::mem::take(builder.query_planner()).expect("with_distributed_planner sets a query planner");
    builder
        .with_query_planner(Arc::new(QlinkDistributedPlanner { local, distributed }))
        .with_distributed_worker_resolver(StaticWorkers(workers))
        .with_distributed_channel_resolver(SecretChannelResolver::new(secret))
        // The coordinator encodes scans; it never loads a plugin a worker names.
        .with_distributed_user_codec(QlinkCodec::new(Arc::new(PluginLoader::new(None))))
        .with_distributed_option_extension(ShippedPlugins::default())
        .with_distributed_desired_task_count_handler(desired_task_count)
        .with_distributed_scale_up_leaf_node_handler(scale_up_leaf)
        .with_distributed_route_tasks_handler(route_tasks)
}

/// A worker's session for one (authenticated) query: the worker's builder
/// (with its runtime environment) with qlink's codec over `loader`, the
/// functions of the plugins the coordinator's session registered (named
/// in the request's metadata: functions.rs), and channels to the other
/// workers carrying `secret`.
pub fn worker_state(ctx: WorkerQueryContext, loader: Arc<PluginLoader>, secret: Secret) -> Result<SessionState> {
    let builder = ctx.builder.with_distributed_option_extension_from_headers::<ShippedPlugins>(&ctx.headers)?;
    let mut state = builder
        .with_distributed_channel_resolver(SecretChannelResolver::new(secret))
        .with_distributed_user_codec(QlinkCodec::new(Arc::clone(&loader)))
        .build();
    register_shipped(&mut state, &loader)?;
    Ok(state)
}
