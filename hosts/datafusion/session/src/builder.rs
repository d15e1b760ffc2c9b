// SPDX-License-Identifier: Apache-2.0
//! The one session builder of the `qlink` tool and `qlink.Session`: a
//! DataFusion `SessionContext` whose runtime environment has the memory
//! limit asked for and [`RemoteStoreRegistry`] as its object-store registry,
//! with DataFusion's default features, qlink's query planner (with the
//! planners installed, and each subquery used twice run once), and
//! datafusion-distributed's coordinator when workers are given (`qlink-worker` builds its runtime environment here too).

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use qlink_datafusion::distributed::{coordinator_state, Secret};
use qlink_datafusion::planner::{InstalledPlanner, QlinkQueryPlanner};
use qlink_datafusion::shared::ShareRepeatedSubplans;
use url::Url;

use crate::remote::RemoteStoreRegistry;

/// A size in bytes from text: a number with an optional binary unit, `K`,
/// `M`, `G` or `T` (powers of 1024), optionally followed by `B` or `iB`
/// (`512M`, `512MB`, `2GiB`, `1.5G`, `65536`), case-insensitive.
///
/// Errors name the text: "cannot read 'lots' as a size (e.g. 512M, 2G)", or
/// "'0' must be at least one byte and finite (e.g. 512M, 2G)"; the caller
/// prefixes the option's name.
pub fn parse_size(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    let digits = upper.strip_suffix("IB").or_else(|| upper.strip_suffix('B')).unwrap_or(&upper);
    let (num, mult) = match digits.chars().last() {
        Some('K') => (&digits[..digits.len() - 1], 1usize << 10),
        Some('M') => (&digits[..digits.len() - 1], 1 << 20),
        Some('G') => (&digits[..digits.len() - 1], 1 << 30),
        Some('T') => (&digits[..digits.len() - 1], 1 << 40),
        _ if digits.len() < upper.len() && upper.ends_with("IB") => return Err(format!("cannot read '{s}' as a size (e.g. 512M, 2G)")),
        _ => (digits, 1),
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("cannot read '{s}' as a size (e.g. 512M, 2G)"))?;
    let bytes = v * mult as f64;
    if !(bytes >= 1.0 && bytes.is_finite() && bytes <= usize::MAX as f64) {
        return Err(format!("'{s}' must be at least one byte and finite (e.g. 512M, 2G)"));
    }
    Ok(bytes as usize)
}

/// A runtime environment whose memory pool is limited to `memory_limit`
/// bytes (unbounded when None), with HTTP(S) and public-bucket object
/// stores made on first use.
pub fn runtime_env(memory_limit: Option<usize>) -> Result<Arc<RuntimeEnv>> {
    let mut rt = RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(RemoteStoreRegistry::new()));
    if let Some(limit) = memory_limit {
        rt = rt.with_memory_limit(limit, 1.0);
    }
    rt.build_arc()
}

/// The error of a coordinator given workers but no secret.
pub const NO_SECRET: &str = "distributed queries need the workers' shared secret: set QLINK_SECRET, or give its file \
     (--secret-file FILE in the qlink tool, secret_file= in qlink.Session), as each qlink-worker was given it";

/// A session context with `config`, the runtime environment of
/// [`runtime_env`], `planners` installed (in order) when there are any,
/// and, when `workers` is not empty, datafusion-distributed's coordinator
/// over them (qlink scans split among the workers, which must be running
/// `qlink-worker`; see `qlink_datafusion::distributed`), every call
/// carrying `secret`. Errors: workers without a secret.
pub fn session_context(
    config: SessionConfig,
    memory_limit: Option<usize>,
    planners: Vec<Arc<InstalledPlanner>>,
    workers: Vec<Url>,
    secret: Option<Secret>,
) -> Result<SessionContext> {
    let mut builder = SessionStateBuilder::new().with_config(config).with_runtime_env(runtime_env(memory_limit)?).with_default_features();
    if workers.is_empty() {
        // A subquery used twice runs once (qlink_datafusion::shared); the
        // shared references are planned by qlink's query planner.
        builder =
            builder.with_analyzer_rule(Arc::new(ShareRepeatedSubplans)).with_query_planner(Arc::new(QlinkQueryPlanner::new(planners)));
    } else if !planners.is_empty() {
        builder = builder.with_query_planner(Arc::new(QlinkQueryPlanner::new(planners)));
    }
    if !workers.is_empty() {
        let secret = secret.ok_or_else(|| DataFusionError::Plan(NO_SECRET.to_string()))?;
        builder = coordinator_state(builder, workers, secret);
    }
    Ok(SessionContext::new_with_state(builder.build()))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MB"), Ok(512 << 20));
        assert_eq!(parse_size("512mb"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size(" 1.5G "), Ok(3 << 29));
        assert_eq!(parse_size("1K"), Ok(1024));
        assert_eq!(parse_size("lots"), Err("cannot read 'lots' as a size (e.g. 512M, 2G)".to_string()));
        assert_eq!(parse_size("5iB"), Err("cannot read '5iB' as a size (e.g. 512M, 2G)".to_string()));
        assert_eq!(parse_size("0"), Err("'0' must be at least one byte and finite (e.g. 512M, 2G)".to_string()));
        assert_eq!(parse_size("infG"), Err("'infG' must be at least one byte and finite (e.g. 512M, 2G)".to_string()));
    }
}
