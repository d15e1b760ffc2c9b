// SPDX-License-Identifier: Apache-2.0
//! Which build of a plugin a coordinator loaded: a worker's copy must be
//! the same (name, version, ABI version and file digest).

use datafusion::error::Result;

use crate::plugin::Plugin;

/// Which build of a plugin a coordinator loaded: what a worker's copy must
/// match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginIdentity {
    /// The descriptor's name, e.g. "qlink_zarr".
    pub name: String,
    /// The plugin's own version, e.g. "0.1.0".
    pub version: String,
    /// The ABI version its descriptor was filled for.
    pub abi_version: u32,
    /// The path the coordinator loaded it from (canonical where it can be).
    pub path: String,
    /// FNV-1a 64 of the coordinator's plugin file.
    pub digest: u64,
}

impl PluginIdentity {
    /// The identity of a loaded plugin.
    pub fn of(plugin: &Plugin) -> Result<PluginIdentity> {
        Ok(PluginIdentity {
            name: plugin.name().to_string(),
            version: plugin.version(),
            abi_version: plugin.descriptor().abi_version,
            path: std::fs::canonicalize(plugin.path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| plugin.path().to_string()),
            digest: plugin.file_digest()?,
        })
    }
}
