// SPDX-License-Identifier: Apache-2.0
//! Authentication between a coordinator and its workers: a shared secret
//! that every gRPC call carries (`authorization: Bearer SECRET`), which a
//! worker compares in constant time before anything of the call runs (no
//! session is built and no plugin is named or loaded for a refused call).
//!
//! The secret comes from the environment (`QLINK_SECRET`, the secret
//! itself) or from a file (`--secret-file PATH`, its first line); it is at
//! least [`MIN_SECRET_LEN`] bytes. It is a shared key, not a signature:
//! anyone who holds it may run queries and name plugins in the worker's own
//! `--plugin-dir`, so keep the file readable by the services' user alone.
//! Traffic is not encrypted (the secret crosses in clear): run workers on a
//! private network or behind a TLS-terminating proxy.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use datafusion::error::{DataFusionError, Result};
use datafusion_distributed::grpc::{create_worker_client, BoxCloneSyncChannel, DefaultChannelResolver};
use datafusion_distributed::{ChannelResolver, WorkerChannel};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::codegen::Service;
use url::Url;

/// The environment variable holding the secret itself.
pub const SECRET_ENV: &str = "QLINK_SECRET";
/// The shortest secret accepted, in bytes (128 bits of hex).
pub const MIN_SECRET_LEN: usize = 32;

/// The shared secret of a coordinator and its workers.
#[derive(Clone)]
pub struct Secret(Arc<[u8]>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(<{} bytes>)", self.0.len())
    }
}

impl Secret {
    /// A secret from its text; errors name what is wrong (too short,
    /// characters that cannot cross in an HTTP header).
    pub fn new(text: &str, from: &str) -> std::result::Result<Secret, String> {
        let text = text.trim_end_matches(['\n', '\r']);
        if text.len() < MIN_SECRET_LEN {
            return Err(format!(
                "the secret from {from} has {} bytes; it needs at least {MIN_SECRET_LEN} (e.g. `openssl rand -hex 32`)",
                text.len()
            ));
        }
        if let Some(pos) = text.bytes().position(|b| !(0x21..=0x7e).contains(&b)) {
            return Err(format!("the secret from {from} holds a space or control byte at offset {pos}; use printable ASCII"));
        }
        Ok(Secret(Arc::from(text.as_bytes())))
    }

    /// The secret from `file` (its first line) when given, else from the
    /// `QLINK_SECRET` environment variable; None when neither is set.
    pub fn from_file_or_env(file: Option<&Path>) -> std::result::Result<Option<Secret>, String> {
        if let Some(f) = file {
            let text = std::fs::read_to_string(f).map_err(|e| format!("reading the secret file {}: {e}", f.display()))?;
            let first = text.lines().next().unwrap_or("");
            return Secret::new(first, &format!("file {}", f.display())).map(Some);
        }
        match std::env::var(SECRET_ENV) {
            Ok(v) => Secret::new(&v, SECRET_ENV).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(format!("{SECRET_ENV}: {e}")),
        }
    }

    /// Whether a call's `authorization` header value holds this secret,
    /// compared in time independent of where the two differ.
    pub fn admits(&self, header: Option<&[u8]>) -> bool {
        let Some(presented) = header.and_then(|h| h.strip_prefix(b"Bearer ")) else {
            return false;
        };
        let mine: &[u8] = &self.0;
        let mut diff = u8::from(mine.len() != presented.len());
        for (i, &b) in mine.iter().enumerate() {
            diff |= b ^ presented.get(i).copied().unwrap_or(0);
        }
        std::hint::black_box(diff) == 0
    }

    fn header(&self) -> http::HeaderValue {
        let mut v = http::HeaderValue::from_bytes(&[b"Bearer ".as_slice(), &self.0].concat())
            .expect("a printable ASCII secret is a valid header value");
        v.set_sensitive(true);
        v
    }
}

/// The coordinator's channels: datafusion-distributed's own (one cached
/// connection per worker), each call carrying the secret.
pub struct SecretChannelResolver {
    inner: DefaultChannelResolver,
    secret: Secret,
}

impl SecretChannelResolver {
    pub fn new(secret: Secret) -> SecretChannelResolver {
        SecretChannelResolver { inner: DefaultChannelResolver::default(), secret }
    }
}

#[async_trait]
impl ChannelResolver for SecretChannelResolver {
    async fn get_worker_client_for_url(&self, url: &Url) -> Result<Box<dyn WorkerChannel>, DataFusionError> {
        let channel = self.inner.get_channel(url).await?;
        let with = WithSecret { inner: channel, value: self.secret.header() };
        Ok(create_worker_client(BoxCloneSyncChannel::new(with)))
    }
}

/// A channel that sets `authorization` on every request it sends.
#[derive(Clone)]
struct WithSecret {
    inner: BoxCloneSyncChannel,
    value: http::HeaderValue,
}

impl Service<http::Request<Body>> for WithSecret {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future = <BoxCloneSyncChannel as Service<http::Request<Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<Body>) -> Self::Future {
        req.headers_mut().insert(http::header::AUTHORIZATION, self.value.clone());
        self.inner.call(req)
    }
}

/// The worker's check of each call: a [`tonic::service::Interceptor`]
/// refusing, as `UNAUTHENTICATED`, a call without the secret.
#[derive(Clone, Debug)]
pub struct RequireSecret(pub Secret);

impl tonic::service::Interceptor for RequireSecret {
    fn call(&mut self, req: tonic::Request<()>) -> std::result::Result<tonic::Request<()>, tonic::Status> {
        let header = req.metadata().get("authorization").map(|v| v.as_bytes());
        if self.0.admits(header) {
            Ok(req)
        } else {
            let why = if header.is_none() { "carries no secret" } else { "carries a wrong secret" };
            Err(tonic::Status::unauthenticated(format!(
                "qlink-worker: the call {why}; give the coordinator the workers' secret ({SECRET_ENV} or --secret-file)"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn admits_only_the_exact_secret() {
        let s = Secret::new(S, "test").unwrap();
        assert!(s.admits(Some(format!("Bearer {S}").as_bytes())));
        assert!(!s.admits(None));
        assert!(!s.admits(Some(S.as_bytes())));
        assert!(!s.admits(Some(format!("Bearer {S}x").as_bytes())));
        assert!(!s.admits(Some(format!("Bearer {}", &S[..31]).as_bytes())));
        assert!(!s.admits(Some(format!("Bearer {}", S.replace('f', "e")).as_bytes())));
        assert!(!s.admits(Some(b"Bearer ")));
    }

    #[test]
    fn refuses_short_or_unprintable_secrets() {
        assert_eq!(
            Secret::new("short", "QLINK_SECRET").unwrap_err(),
            "the secret from QLINK_SECRET has 5 bytes; it needs at least 32 (e.g. `openssl rand -hex 32`)"
        );
        assert_eq!(
            Secret::new(&format!("{S} x"), "file f").unwrap_err(),
            "the secret from file f holds a space or control byte at offset 32; use printable ASCII"
        );
        assert!(Secret::new(&format!("{S}\n"), "file f").is_ok());
    }
}
