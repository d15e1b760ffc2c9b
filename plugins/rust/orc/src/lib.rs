// SPDX-License-Identifier: Apache-2.0
//! qlink_orc: datafusion-orc (datafusion-contrib), unmodified, as a qlink
//! plugin: ORC files as tables, with projection and filter pushdown, read
//! through the host's object stores.
//!
//! ```sql
//! -- DuckDB
//! SELECT * FROM qlink_scan('qlink_orc', 'orc', 'path=/data/t.orc');
//! ```

use std::sync::Arc;

use datafusion_orc::OrcFormat;
use qlink_plugin::listing::listing_table;
use qlink_plugin::{export_plugin, option, Plugin};

fn plugin() -> Plugin {
    Plugin::new("qlink_orc", env!("CARGO_PKG_VERSION")).description("ORC files as tables, by datafusion-orc 0.10").table_with_options(
        "orc",
        "an ORC file, or a folder of .orc files",
        vec![option("path", "a local path or URL (file://, s3://...) of a file or folder").required()],
        |options, session| listing_table(session, options.require("path")?, Arc::new(OrcFormat), ".orc"),
    )
}

export_plugin!(plugin);
