// SPDX-License-Identifier: Apache-2.0
//! qlink_listing: DataFusion's own listing table as a qlink plugin: Parquet
//! and CSV files (one file or a folder) as tables in every host, with
//! DataFusion's Parquet reader (row-group and page pruning from pushed
//! filters, projection, limit), read through the host's object stores; and
//! a folder of them as a schema (DataFusion's `ListingSchemaProvider`).
//!
//! ```sql
//! -- SQLite
//! SELECT qlink_load('.../qlink_listing.so');
//! CREATE VIRTUAL TABLE t USING qlink(qlink_listing, parquet, 'path=/data/t.parquet');
//! SELECT qlink_attach('lake', 'qlink_listing/folder?path=/data/lake');
//! SELECT count(*) FROM lake.trips;  -- /data/lake/trips.parquet
//! ```

use std::sync::Arc;

use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use qlink_plugin::listing::{listing_schema, listing_table};
use qlink_plugin::{export_plugin, option, Error, Plugin};

fn plugin() -> Plugin {
    let path = || option("path", "a local path or URL (file://, s3://...) of a file or folder").required();
    Plugin::new("qlink_listing", env!("CARGO_PKG_VERSION"))
        .description("Parquet and CSV files as tables, by DataFusion's listing table")
        .table_with_options("parquet", "a Parquet file, or a folder of .parquet files", vec![path()], |o, s| {
            // The session's Parquet options (strings as Utf8: see qlink_plugin::session).
            let format = ParquetFormat::default().with_options(s.table_options().parquet.clone());
            listing_table(s, o.require("path")?, Arc::new(format), ".parquet")
        })
        .table_with_options(
            "csv",
            "a CSV file, or a folder of .csv files",
            vec![
                path(),
                option("header", "whether the first line names the columns (true or false)").default_value("true"),
                option("delimiter", "the one-byte field separator").default_value(","),
            ],
            |o, s| {
                let header = match o.get("header").unwrap_or("true") {
                    "true" => true,
                    "false" => false,
                    v => return Err(Error::invalid(format!("option 'header' must be true or false, not {v:?}"))),
                };
                let delimiter = match o.get("delimiter").unwrap_or(",").as_bytes() {
                    [b] => *b,
                    _ => return Err(Error::invalid("option 'delimiter' must be one byte")),
                };
                let format = CsvFormat::default().with_has_header(header).with_delimiter(delimiter);
                listing_table(s, o.require("path")?, Arc::new(format), ".csv")
            },
        )
        .schema_with_options(
            "folder",
            "a folder whose files and subfolders are tables, each named by its name up to the first '.'",
            vec![
                option("path", "a local path or URL (file://, s3://...) of a folder").required(),
                option("format", "the format of every table in it: parquet or csv").default_value("parquet"),
            ],
            |o, s| listing_schema(s, o.require("path")?, o.get("format").unwrap_or("parquet")),
        )
}

export_plugin!(plugin);
