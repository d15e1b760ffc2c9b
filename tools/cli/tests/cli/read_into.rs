// SPDX-License-Identifier: Apache-2.0
//! `ql_object_store.read_into` (qlink/services.h) as the DataFusion host
//! exports it: through the session's registry, over a registered in-memory
//! store (a streamed payload) and the local file system (a file payload,
//! read with a positioned read) and HTTP (with and without range requests),
//! the bytes and every status and message agree with `get_range` for the
//! same range; the caller's buffer is not
//! written past what was read; bad arguments are QL_EINVAL.

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use object_store::{ObjectStoreExt, PutPayload};
use qlink_datafusion::error::ErrorSlot;
use qlink_datafusion::ffi::*;
use qlink_datafusion::services::EnvState;

const SIZE: usize = 1000;

fn data() -> Vec<u8> {
    (0..SIZE).map(|i| (i * 7 % 251) as u8).collect()
}

/// The store serving `url`, from the session's registry (as a plugin gets it).
fn get_store(env: &EnvState, url: &str) -> ql_object_store {
    let reg = env.env.object_stores;
    let url = CString::new(url).unwrap();
    let mut out: ql_object_store = unsafe { std::mem::zeroed() };
    let mut e = ErrorSlot::new();
    let st = unsafe { (*reg).get_store.unwrap()(reg, url.as_ptr(), &mut out, e.ptr()) };
    assert_eq!(st, QL_OK, "get_store {url:?}: {}", e.message());
    out
}

/// (status, bytes read, message); the 16 bytes after `length` must stay as they were.
fn read_into(s: &ql_object_store, path: &CStr, offset: i64, length: i64) -> (c_int, Vec<u8>, String) {
    let cap = length.max(0) as usize;
    let mut buf = vec![0xA5u8; cap + 16];
    let mut len = -7i64;
    let mut e = ErrorSlot::new();
    let st = unsafe { s.read_into.unwrap()(s, path.as_ptr(), offset, length, buf.as_mut_ptr(), &mut len, e.ptr()) };
    assert!(buf[cap..].iter().all(|&b| b == 0xA5), "read_into wrote past length {length}");
    if st != QL_OK {
        assert_eq!(len, 0, "a failed read_into reports 0 bytes");
        return (st, vec![], e.message());
    }
    assert!(len >= 0 && len <= length, "out_len {len} for length {length}");
    buf.truncate(len as usize);
    (st, buf, String::new())
}

fn get_range(s: &ql_object_store, path: &CStr, offset: i64, length: i64) -> (c_int, Vec<u8>, String) {
    let mut out: ql_bytes = unsafe { std::mem::zeroed() };
    let mut e = ErrorSlot::new();
    let st = unsafe { s.get_range.unwrap()(s, path.as_ptr(), offset, length, &mut out, e.ptr()) };
    if st != QL_OK {
        return (st, vec![], e.message());
    }
    let v = unsafe { std::slice::from_raw_parts(out.data, out.size as usize) }.to_vec();
    unsafe { out.release.unwrap()(&mut out) };
    (st, v, String::new())
}

/// `msg` without the request's duration an HTTP store's errors carry
/// ("Error performing GET URL in 1.2ms - ...").
fn without_timing(msg: &str) -> String {
    match (msg.find(" in "), msg.find(" - ")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &msg[..a], &msg[b..]),
        _ => msg.to_string(),
    }
}

/// Every case on one store; `path` names a SIZE-byte object holding data(),
/// `missing` no object.
fn check_store(s: &ql_object_store, path: &CStr, missing: &CStr) {
    assert!(s.struct_size as usize >= std::mem::offset_of!(ql_object_store, read_into) + std::mem::size_of::<usize>());
    assert!(s.read_into.is_some());
    let d = data();
    let name = path.to_str().unwrap();
    let n = SIZE as i64;
    // (offset, length) -> expected bytes
    for (offset, length, want) in [
        (0, n, &d[..]),
        (0, n + 500, &d[..]),
        (100, 50, &d[100..150]),
        (n - 10, 100, &d[SIZE - 10..]),
        (n, 10, &d[SIZE..]),
        (5, 0, &d[5..5]),
        (0, 0, &d[0..0]),
        (n, 0, &d[SIZE..]),
    ] {
        let (st, got, msg) = read_into(s, path, offset, length);
        assert_eq!(st, QL_OK, "read_into {name} {offset}+{length}: {msg}");
        assert_eq!(got, want, "read_into {name} {offset}+{length}");
        let (gst, gbytes, gmsg) = get_range(s, path, offset, length);
        assert_eq!(gst, QL_OK, "get_range {name} {offset}+{length}: {gmsg}");
        assert_eq!(gbytes, got, "get_range and read_into agree on {offset}+{length}");
    }
    // past the end: QL_EINVAL from both, the same message but for the member's name
    for (offset, length) in [(n + 1, 10), (n + 1, 0), (1 << 40, 1)] {
        let (st, _, msg) = read_into(s, path, offset, length);
        assert_eq!(st, QL_EINVAL, "read_into {offset}+{length}: {msg}");
        assert_eq!(msg, format!("read_into: offset {offset} is past the end of {name} ({SIZE} bytes)"));
        if length > 0 {
            let (gst, _, gmsg) = get_range(s, path, offset, length);
            assert_eq!(gst, QL_EINVAL);
            assert_eq!(gmsg, msg.replacen("read_into", "get_range", 1));
        }
    }
    // no such object: QL_ENOTFOUND from both, whatever the range
    for (offset, length) in [(0, 10), (5, 0), (0, 0)] {
        let (st, _, msg) = read_into(s, missing, offset, length);
        assert_eq!(st, QL_ENOTFOUND, "read_into missing {offset}+{length}: {msg}");
        let (gst, _, gmsg) = get_range(s, missing, offset, 10);
        assert_eq!(gst, QL_ENOTFOUND, "{gmsg}");
        if length > 0 {
            assert_eq!(without_timing(&msg), without_timing(&gmsg), "the store's own not-found message");
        }
    }
    // bad arguments
    for (offset, length) in [(-1, 10), (0, -1), (0, -2)] {
        assert_eq!(read_into(s, path, offset, length).0, QL_EINVAL, "{offset}+{length}");
    }
    let mut len = 0i64;
    let mut e = ErrorSlot::new();
    let f = s.read_into.unwrap();
    let st = unsafe { f(s, path.as_ptr(), 0, 10, std::ptr::null_mut(), &mut len, e.ptr()) };
    assert_eq!(st, QL_EINVAL, "NULL dst with a length");
    let mut one = [0u8; 1];
    let st = unsafe { f(s, path.as_ptr(), 0, 1, one.as_mut_ptr(), std::ptr::null_mut(), e.ptr()) };
    assert_eq!(st, QL_EINVAL, "NULL out_len");
    let st = unsafe { f(s, path.as_ptr(), 3, 0, std::ptr::null_mut(), &mut len, e.ptr()) };
    assert_eq!((st, len), (QL_OK, 0), "NULL dst reading 0 bytes");
    // concurrent callers, each into its own buffer (the ABI says stores are thread-safe)
    let sp = s as *const ql_object_store as usize;
    std::thread::scope(|sc| {
        for t in 0..4usize {
            let d = &d;
            sc.spawn(move || {
                let s = unsafe { &*(sp as *const ql_object_store) };
                for k in 0..25usize {
                    let off = (t * 97 + k * 31) % SIZE;
                    let (st, got, msg) = read_into(s, path, off as i64, 64);
                    assert_eq!(st, QL_OK, "{msg}");
                    assert_eq!(got, &d[off..(off + 64).min(SIZE)]);
                }
            });
        }
    });
}

/// check_store on the store `url` gets from `env`'s registry, then its
/// release. The plugin's calls block: they run off the test's runtime
/// threads, as a plugin stream is read.
async fn check_registered_store(env: &EnvState, url: &str, path: CString, missing: CString) {
    let mut s = get_store(env, url);
    let sp = &s as *const ql_object_store as usize;
    tokio::task::spawn_blocking(move || {
        let s = unsafe { &*(sp as *const ql_object_store) };
        check_store(s, &path, &missing);
    })
    .await
    .unwrap();
    unsafe { s.release.unwrap()(&mut s) };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_into_registered_memory_store() {
    let mem = Arc::new(object_store::memory::InMemory::new());
    mem.put(&object_store::path::Path::from("dir/data.bin"), PutPayload::from(data())).await.unwrap();
    let ctx = SessionContext::new();
    ctx.register_object_store(&url::Url::parse("memory://").unwrap(), mem);
    let env = EnvState::new(ctx.runtime_env());
    check_registered_store(&env, "memory:///dir/data.bin", c"dir/data.bin".into(), c"dir/nope.bin".into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_into_local_file_store() {
    let dir = std::env::temp_dir().join(format!("qlink-read-into-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("data.bin"), data()).unwrap();
    let ctx = SessionContext::new(); // file:// is registered by default
    let env = EnvState::new(ctx.runtime_env());
    let rel = dir.to_str().unwrap().trim_start_matches('/').to_string();
    let path = CString::new(format!("{rel}/data.bin")).unwrap();
    let missing = CString::new(format!("{rel}/nope.bin")).unwrap();
    check_registered_store(&env, "file:///", path, missing).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An HTTP server on 127.0.0.1 serving data() as /dir/data.bin (404 for
/// anything else); HEAD and GET, and with `ranges` single `Range:
/// bytes=a-b` requests (206, or 416 past the end); without, every GET
/// answers 200 with the whole file, as `python -m http.server` does. One
/// request per connection. Returns the base URL and the count of GET
/// requests served; serves until the process ends.
fn serve_over_http(ranges: bool) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let body = data();
    let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&gets);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut request, mut range, mut line) = (String::new(), None, String::new());
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                if request.is_empty() {
                    request = line.clone();
                } else if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                    let (a, b) = v.trim().split_once('-').unwrap();
                    range = Some((a.parse::<usize>().unwrap(), b.parse::<usize>().ok()));
                }
                line.clear();
            }
            let head = request.starts_with("HEAD ");
            if request.starts_with("GET ") {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let meta = "Last-Modified: Mon, 30 Nov 2026 00:00:00 GMT\r\nETag: \"v1\"\r\nConnection: close\r\n";
            let (status, extra, part): (&str, String, &[u8]) = match (request.split_whitespace().nth(1), range) {
                (Some("/dir/data.bin"), Some((a, _))) if ranges && a >= body.len() => {
                    ("416 Range Not Satisfiable", format!("Content-Range: bytes */{}\r\n", body.len()), &[])
                }
                (Some("/dir/data.bin"), Some((a, b))) if ranges => {
                    let end = b.unwrap_or(body.len() - 1).min(body.len() - 1);
                    ("206 Partial Content", format!("Content-Range: bytes {a}-{end}/{}\r\n", body.len()), &body[a..=end])
                }
                (Some("/dir/data.bin"), _) => ("200 OK", String::new(), &body[..]),
                _ => ("404 Not Found", String::new(), &[]),
            };
            let mut reply = format!("HTTP/1.1 {status}\r\n{extra}{meta}Content-Length: {}\r\n\r\n", part.len()).into_bytes();
            if !head {
                reply.extend_from_slice(part);
            }
            let _ = stream.write_all(&reply);
        }
    });
    (format!("http://127.0.0.1:{port}"), gets)
}

/// The sessions the qlink CLI and Python package build make an HTTP store
/// for an http:// URL on first use; it answers every case as the other
/// stores do, with a server that takes range requests and with one that
/// does not (the whole object is fetched and sliced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_into_http_store_with_and_without_range_requests() {
    for ranges in [true, false] {
        let (base, _) = serve_over_http(ranges);
        let runtime = datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::new(qlink_session::remote::RemoteStoreRegistry::new()))
            .build_arc()
            .unwrap();
        let env = EnvState::new(runtime);
        check_registered_store(&env, &format!("{base}/dir/data.bin"), c"dir/data.bin".into(), c"dir/nope.bin".into()).await;
    }
}

/// A server that refuses range requests is remembered per store: after the
/// first refused range (one ranged GET answered whole, then one plain GET),
/// every read costs one plain GET; with ranges, one ranged GET each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_ranges_cost_one_get_per_read() {
    for ranges in [true, false] {
        let (base, gets) = serve_over_http(ranges);
        let runtime = datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::new(qlink_session::remote::RemoteStoreRegistry::new()))
            .build_arc()
            .unwrap();
        let env = EnvState::new(runtime);
        let mut store = get_store(&env, &format!("{base}/dir/data.bin"));
        let all = data();
        for (i, (offset, length)) in [(0i64, 10i64), (100, 50), (7, 1), (900, 24)].into_iter().enumerate() {
            let (rc, got, msg) = read_into(&store, c"dir/data.bin", offset, length);
            assert_eq!(rc, QL_OK, "{msg}");
            assert_eq!(got, all[offset as usize..(offset + length) as usize]);
            let want = if ranges { i + 1 } else { i + 2 };
            assert_eq!(gets.load(std::sync::atomic::Ordering::SeqCst), want, "GETs after read {i}, ranges={ranges}");
        }
        unsafe { (store.release.unwrap())(&mut store) };
    }
}
