// SPDX-License-Identifier: Apache-2.0
//! An object store wrapper that remembers a server's refusal of range
//! requests. A plain web server (`python -m http.server`) answers a ranged
//! `GET` with the whole object, which object_store's `HttpStore` reports as
//! `NotSupported`; without memory every later range would cost that failed
//! request and a second, plain `GET`. [`RangeMemo`] asks for ranges until
//! the first refusal, then fetches every ranged read as one plain `GET` and
//! slices it: one request per object read.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};

/// `inner`, with ranged reads answered from whole objects once `inner`
/// has refused a range. Thread-safe; the flag is shared by every clone of
/// the `Arc` (one per server, as [`crate::remote::RemoteStoreRegistry`]
/// keeps them).
#[derive(Debug)]
pub struct RangeMemo {
    inner: Arc<dyn ObjectStore>,
    refused: AtomicBool,
}

impl RangeMemo {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        RangeMemo { inner, refused: AtomicBool::new(false) }
    }

    /// Whether the store has refused a range request (later ranged reads
    /// are plain `GET`s).
    pub fn ranges_refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// `options.range` read from the whole object: one plain request.
    async fn whole_then_slice(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let range = options.range.clone().expect("a ranged read");
        let plain = GetOptions { range: None, ..options };
        let r = self.inner.get_opts(location, plain).await?;
        let (meta, attributes) = (r.meta.clone(), r.attributes.clone());
        let all = r.bytes().await?;
        let want = range
            .as_range(all.len() as u64)
            .map_err(|e| object_store::Error::Generic { store: "HTTP", source: format!("range of {location}: {e}").into() })?;
        let part = all.slice(want.start as usize..want.end as usize);
        Ok(GetResult {
            payload: GetResultPayload::Stream(futures::stream::once(async move { Ok(part) }).boxed()),
            meta,
            range: want,
            attributes,
        })
    }
}

impl fmt::Display for RangeMemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

#[async_trait]
impl ObjectStore for RangeMemo {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.range.is_none() {
            return self.inner.get_opts(location, options).await;
        }
        if self.ranges_refused() {
            return self.whole_then_slice(location, options).await;
        }
        match self.inner.get_opts(location, options.clone()).await {
            Err(object_store::Error::NotSupported { .. }) => {
                self.refused.store(true, Ordering::Relaxed);
                self.whole_then_slice(location, options).await
            }
            r => r,
        }
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
