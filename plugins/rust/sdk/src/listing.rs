// SPDX-License-Identifier: Apache-2.0
//! Files as tables: DataFusion's `ListingTable` over a path or URL, read
//! through the host's object stores, for any DataFusion `FileFormat`
//! (Parquet, CSV, ORC, ...); and a folder as a schema of such tables
//! (DataFusion's `ListingSchemaProvider`).
//!
//! DataFusion's own path parsing probes the local file system directly
//! (`Path::exists`) to tell a directory from a file; here the path becomes
//! a `file://` URL without touching the disk, and the host's store answers
//! whether it is one object or a folder, so no byte of a path the host
//! refuses is read, and nothing about it is learned.

use std::sync::Arc;

use datafusion::catalog::listing_schema::ListingSchemaProvider;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::listing_table_factory::ListingTableFactory;
use datafusion::execution::context::SessionState;
use datafusion::execution::object_store::ObjectStoreUrl;
use glob::Pattern;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;

use crate::error::{Error, Result};

/// A local path's glob, split as DataFusion does: the folder before the
/// first glob character, and the pattern the rest of each file's path
/// must match (`/data/*.parquet` -> `/data/`, `*.parquet`).
fn split_glob(path: &str) -> Result<(&str, Option<Pattern>)> {
    let Some(first) = path.find(['*', '?', '[']) else { return Ok((path, None)) };
    let cut = path[..first].rfind('/').map_or(0, |i| i + 1);
    let pattern = Pattern::new(&path[cut..]).map_err(|e| Error::invalid(format!("path {path:?}: {e}")))?;
    if cut == 0 {
        return Ok(("./", Some(pattern)));
    }
    Ok((&path[..cut], Some(pattern)))
}

/// `path` (an absolute or relative local path, possibly with a glob, or a
/// URL such as `file:///data/x.parquet` or `s3://bucket/dir/`) as a URL and
/// its glob. Local paths are made absolute against the process's working
/// directory, lexically.
fn url_of(path: &str) -> Result<(Url, Option<Pattern>)> {
    if path.is_empty() {
        return Err(Error::invalid("option 'path' is empty"));
    }
    if let Ok(u) = Url::parse(path) {
        if u.scheme().len() > 1 {
            return Ok((u, None));
        }
    }
    let (path, glob) = split_glob(path)?;
    Ok((local_url(path)?, glob))
}

fn local_url(path: &str) -> Result<Url> {
    let abs = std::path::absolute(path).map_err(|e| Error::invalid(format!("path {path:?}: {e}")))?;
    let u = if path.ends_with('/') { Url::from_directory_path(&abs) } else { Url::from_file_path(&abs) };
    let u = u.map_err(|_| Error::invalid(format!("path {path:?} cannot be a file URL")))?;
    // Parsing again resolves "." and ".." segments, as DataFusion does.
    Url::parse(u.as_str()).map_err(|e| Error::invalid(format!("path {path:?}: {e}")))
}

/// Whether `url` names a folder (a prefix with objects under it) rather
/// than one object, asked of the host's store.
async fn is_folder(store: &Arc<dyn ObjectStore>, url: &Url) -> Result<bool> {
    if url.path().ends_with('/') {
        return Ok(true);
    }
    let p = Path::from_url_path(url.path()).map_err(|e| Error::invalid(format!("{url}: {e}")))?;
    match store.head(&p).await {
        Ok(_) => Ok(false),
        Err(object_store::Error::NotFound { .. }) => Ok(true),
        Err(e) => Err(Error::new(qlink_sys::QL_EIO, format!("{url}: {e}"))),
    }
}

/// A listing table of the files at `path` in `format`; `extension` (".orc")
/// selects the files of a folder (a file named by the path is read whatever
/// its extension). The schema is inferred from the files,
/// read through the host's stores.
pub fn listing_table(state: &SessionState, path: &str, format: Arc<dyn FileFormat>, extension: &str) -> Result<Arc<dyn TableProvider>> {
    let (mut url, glob) = url_of(path)?;
    let base = ObjectStoreUrl::parse(&url[..url::Position::BeforePath]).map_err(Error::from)?;
    let store = state.runtime_env().object_store(&base).map_err(Error::from)?;
    crate::runtime::block_on(async {
        let folder = glob.is_some() || is_folder(&store, &url).await?;
        if folder && !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        let table_url = ListingTableUrl::try_new(url.clone(), glob)?;
        // The extension selects a folder's files; a file named itself is read
        // whatever its name ends with.
        let options = ListingOptions::new(format).with_file_extension(if folder { extension } else { "" });
        let schema = options.infer_schema(state, &table_url).await?;
        let config = ListingTableConfig::new(table_url).with_listing_options(options).with_schema(schema);
        let table: Arc<dyn TableProvider> = Arc::new(ListingTable::try_new(config)?);
        Ok::<_, Error>(table)
    })
}

/// DataFusion's `ListingSchemaProvider` over the folder at `path` (a local
/// path or a URL; no glob), refreshed once, here: each file or subfolder
/// directly in it is a table named by its name up to the first '.'
/// (`trips.parquet` is `trips`, `parts/` is `parts`), read in `format`
/// ("parquet", "csv", or another format the session registers) by
/// DataFusion's `ListingTableFactory`. The folder is listed, and every
/// table's schema inferred, through the host's stores. Errors: QL_EINVAL
/// for a glob or an unknown format; QL_ENOTFOUND for a folder with nothing
/// in it (or none there); the store's error for a folder it refuses; DataFusion's for a file the format cannot read (every entry of
/// the folder must be one: DataFusion's rule).
pub fn listing_schema(state: &SessionState, path: &str, format: &str) -> Result<Arc<dyn SchemaProvider>> {
    let (mut url, glob) = url_of(path)?;
    if glob.is_some() {
        return Err(Error::invalid(format!("path {path:?}: a schema is a folder, not a pattern")));
    }
    if state.get_file_format_factory(format).is_none() {
        return Err(Error::invalid(format!("format {format:?} is not one DataFusion reads here (parquet, csv, json, arrow, avro)")));
    }
    if !url.path().ends_with('/') {
        url.set_path(&format!("{}/", url.path()));
    }
    let authority = url[..url::Position::BeforePath].to_string();
    let store = state.runtime_env().object_store(ObjectStoreUrl::parse(&authority)?)?;
    let root = Path::from_url_path(url.path()).map_err(|e| Error::invalid(format!("{url}: {e}")))?;
    let schema = ListingSchemaProvider::new(authority, root, Arc::new(ListingTableFactory::new()), store, format.to_lowercase());
    crate::runtime::block_on(schema.refresh(state))?;
    // An object store cannot tell an empty folder from a missing one: a
    // schema with no table is refused rather than attached empty.
    if schema.table_names().is_empty() {
        return Err(Error::not_found(format!("{url}: no file or folder in it to serve as a table")));
    }
    Ok(Arc::new(schema))
}
