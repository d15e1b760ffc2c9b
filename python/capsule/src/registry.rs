// SPDX-License-Identifier: Apache-2.0
//! By-reference handles for qlink objects crossing datafusion-python's plan
//! serialization within one process.
//!
//! datafusion-python encodes every plan it hands to a foreign planner as
//! protobuf, and decodes the physical plan that comes back. A qlink table or
//! a planned qlink subtree is not serialized by value: its payload is a
//! handle into this per-process registry, plus enough identity to explain a
//! failure. Layout (little-endian), version 1:
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `qlnk` |
//! | 1 | version (1) |
//! | 1 | kind (1 table, 2 plan) |
//! | 16 | process token (random per process) |
//! | 4 | pid of the encoding process |
//! | 8 | handle |
//! | rest | label (UTF-8, for messages only) |
//!
//! Decoding a payload from another process (a plan sent to a worker, a file)
//! or whose object is gone is an error naming the object, never a crash.
//!
//! qlink tables are held weakly (the consumer's catalog owns them); a plan,
//! and a table that is not qlink's (made for the one call that encodes it),
//! is held strongly from encode to its one decode (the planner drops its own
//! reference in between), and at most [`PLAN_SLOTS`] undecoded ones of each
//! are kept.
//! Thread-safety: every function may be called from any thread.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use datafusion::catalog::TableProvider;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::ExecutionPlan;
use qlink_datafusion::error::Result;

const MAGIC: &[u8; 4] = b"qlnk";
const VERSION: u8 = 1;
const HEADER: usize = 4 + 1 + 1 + 16 + 4 + 8;

/// Undecoded plans kept before the oldest is dropped (a plan is decoded
/// right after it is encoded; one never decoded must not pin its tables).
pub const PLAN_SLOTS: usize = 64;

/// What a handle refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Table = 1,
    Plan = 2,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::Plan => "plan",
        }
    }
}

fn token() -> &'static [u8; 16] {
    static TOKEN: OnceLock<[u8; 16]> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let mut out = [0u8; 16];
        for (i, half) in out.chunks_mut(8).enumerate() {
            let mut h = RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            h.write_usize(i);
            h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
        out
    })
}

static NEXT: AtomicU64 = AtomicU64::new(1);

fn encode(kind: Kind, handle: u64, label: &str, buf: &mut Vec<u8>) {
    buf.reserve(HEADER + label.len());
    buf.extend_from_slice(MAGIC);
    buf.push(VERSION);
    buf.push(kind as u8);
    buf.extend_from_slice(token());
    buf.extend_from_slice(&std::process::id().to_le_bytes());
    buf.extend_from_slice(&handle.to_le_bytes());
    buf.extend_from_slice(label.as_bytes());
}

/// A decoded payload header.
#[derive(Debug)]
pub struct Payload {
    pub handle: u64,
    pub label: String,
}

/// Parse `buf` as a payload of `kind` written by this process.
pub fn decode(kind: Kind, buf: &[u8]) -> Result<Payload> {
    let bad = |why: &str| DataFusionError::Plan(format!("not a qlink {} reference ({why})", kind.noun()));
    if buf.len() < HEADER || &buf[..4] != MAGIC {
        return Err(bad("no qlink header"));
    }
    if buf[4] != VERSION {
        return Err(bad(&format!("format version {}, this library reads {VERSION}", buf[4])));
    }
    if buf[5] != kind as u8 {
        return Err(bad(&format!("it refers to kind {}", buf[5])));
    }
    let label = String::from_utf8_lossy(&buf[HEADER..]).into_owned();
    let pid = u32::from_le_bytes(buf[22..26].try_into().expect("4 bytes"));
    if &buf[6..22] != token() {
        return Err(DataFusionError::Plan(format!(
            "qlink {} `{label}` was encoded by reference in another process (pid {pid}) and cannot be decoded in \
             this one: qlink tables and plans cross datafusion-python's plan serialization by reference, within \
             one process; register the table in the session that runs the query",
            kind.noun()
        )));
    }
    let handle = u64::from_le_bytes(buf[26..34].try_into().expect("8 bytes"));
    Ok(Payload { handle, label })
}

/// Weakly held tables, one handle per table object.
#[derive(Default)]
struct Tables {
    by_handle: HashMap<u64, Weak<dyn TableProvider>>,
    by_addr: HashMap<usize, u64>,
    /// Size at which dead entries are next swept (doubles as live ones grow).
    sweep_at: usize,
}

fn tables() -> &'static Mutex<Tables> {
    static T: OnceLock<Mutex<Tables>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Tables { sweep_at: 64, ..Default::default() }))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Encode `table` by reference into `buf`; `label` names it in messages.
pub fn encode_table(table: &Arc<dyn TableProvider>, label: &str, buf: &mut Vec<u8>) {
    let addr = Arc::as_ptr(table) as *const () as usize;
    let mut t = lock(tables());
    let live = t.by_addr.get(&addr).copied().filter(|h| t.by_handle.get(h).is_some_and(|w| w.strong_count() > 0));
    let handle = live.unwrap_or_else(|| {
        let h = NEXT.fetch_add(1, Ordering::Relaxed);
        t.by_handle.insert(h, Arc::downgrade(table));
        t.by_addr.insert(addr, h);
        h
    });
    if t.by_handle.len() >= t.sweep_at {
        t.by_handle.retain(|_, w| w.strong_count() > 0);
        let Tables { by_handle, by_addr, .. } = &mut *t;
        by_addr.retain(|_, h| by_handle.contains_key(h));
        t.sweep_at = (t.by_handle.len() * 2).max(64);
    }
    drop(t);
    encode(Kind::Table, handle, label, buf);
}

/// The table a payload refers to.
pub fn decode_table(buf: &[u8]) -> Result<Arc<dyn TableProvider>> {
    let p = decode(Kind::Table, buf)?;
    let found = lock(tables()).by_handle.get(&p.handle).and_then(Weak::upgrade);
    found.or_else(|| FOREIGN.take(p.handle)).ok_or_else(|| {
        DataFusionError::Plan(format!(
            "qlink table `{}` is no longer registered in this process: the plan that refers to it outlived it",
            p.label
        ))
    })
}

/// Objects held strongly from their encode to their one decode, oldest
/// first; at most [`PLAN_SLOTS`] are kept (one never decoded must not pin
/// what it holds).
struct Held<T>(Mutex<VecDeque<(u64, T)>>);

impl<T> Held<T> {
    const fn new() -> Self {
        Held(Mutex::new(VecDeque::new()))
    }

    fn hold(&self, value: T) -> u64 {
        let handle = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut q = lock(&self.0);
        while q.len() >= PLAN_SLOTS {
            q.pop_front();
        }
        q.push_back((handle, value));
        handle
    }

    fn take(&self, handle: u64) -> Option<T> {
        let mut q = lock(&self.0);
        let at = q.iter().position(|(h, _)| *h == handle)?;
        q.remove(at).map(|(_, v)| v)
    }
}

/// Strongly held plans between their encode and their decode.
static PLANS: Held<Arc<dyn ExecutionPlan>> = Held::new();

/// Tables that are not qlink's (datafusion-python's own, which reach the
/// codec as datafusion-ffi's ForeignTableProvider made for the call), held
/// strongly from their encode to their decode.
static FOREIGN: Held<Arc<dyn TableProvider>> = Held::new();

/// Encode a table that is not qlink's by reference into `buf`, held until
/// decoded once: a qlink planner then plans its scan like any other, read
/// through its own provider (datafusion-ffi's, for datafusion-python's
/// tables).
pub fn hold_table(table: Arc<dyn TableProvider>, label: &str, buf: &mut Vec<u8>) {
    let handle = FOREIGN.hold(table);
    encode(Kind::Table, handle, label, buf);
}

/// Encode `plan` by reference into `buf` (held until decoded).
pub fn encode_plan(plan: Arc<dyn ExecutionPlan>, label: &str, buf: &mut Vec<u8>) {
    let handle = PLANS.hold(plan);
    encode(Kind::Plan, handle, label, buf);
}

/// Take the plan a payload refers to (a plan is decoded once).
pub fn decode_plan(buf: &[u8]) -> Result<Arc<dyn ExecutionPlan>> {
    let payload = decode(Kind::Plan, buf)?;
    PLANS.take(payload.handle).ok_or_else(|| {
        DataFusionError::Plan(format!(
            "qlink plan `{}` was already decoded or has expired: a plan made by a qlink planner is passed by \
             reference and decoded once, right after planning",
            payload.label
        ))
    })
}

/// Undecoded plans held (for tests).
pub fn plans_held() -> usize {
    lock(&PLANS.0).len()
}
