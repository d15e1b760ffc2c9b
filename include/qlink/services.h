/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: host services handed to plugins (docs/abi.md R8, R9, section 3.4;
 * gaps G4-G6, G8).
 *
 * The host owns every struct in this header; plugins borrow them. Each is a
 * struct of function pointers plus `private_data`, so creating a view costs
 * a few stores: nothing is enumerated or converted until a plugin asks.
 *
 * Borrowing rule: a service reached from a `struct ql_session` is valid for
 * the duration of the call that received the session. A service reached from
 * a `struct ql_task_context` is valid until the stream produced by the
 * `execute` that received it has been released (hosts keep it alive).
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_SERVICES_H
#define QLINK_SERVICES_H

#include "qlink/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- memory */

/* A reservation against the host's memory pool: the plugin's bytes count
 * against the session's memory limit (DataFusion's memory_limit).
 *
 * Owned by the plugin that created it; not thread-safe (one owner, like
 * DataFusion's MemoryReservation); `release` frees whatever is still
 * reserved, unregisters the consumer and sets release to NULL.
 */
struct ql_memory_reservation {
  uint32_t struct_size;
  /* Grow by `bytes` (>= 0). QL_ERESOURCES, with the host's message, when the
   * pool's limit would be exceeded; the reservation is then unchanged. */
  int (*try_grow)(struct ql_memory_reservation *self, int64_t bytes, struct ql_error *error);
  /* Shrink by `bytes`; 0 <= bytes <= size(). Never fails. */
  void (*shrink)(struct ql_memory_reservation *self, int64_t bytes);
  /* Bytes currently held. */
  int64_t (*size)(const struct ql_memory_reservation *self);
  void (*release)(struct ql_memory_reservation *self);
  void *private_data;
};

enum ql_memory_consumer_flags {
  QL_CONSUMER_CAN_SPILL = 1 /* the consumer can free memory by spilling when asked */
};

/* The host's memory pool. Thread-safe. */
struct ql_memory_pool {
  uint32_t struct_size;
  /* Register a consumer named `name` (copied) and return an empty reservation
   * in `out` (owned by the caller). */
  int (*reservation_new)(const struct ql_memory_pool *self, const char *name, int32_t flags,
                         struct ql_memory_reservation *out, struct ql_error *error);
  /* Bytes reserved in the whole pool right now. */
  int64_t (*reserved)(const struct ql_memory_pool *self);
  /* The pool's limit in bytes; -1 if unbounded. */
  int64_t (*limit)(const struct ql_memory_pool *self);
  void *private_data;
};

/* ---------------------------------------------------------- object store */

/* Metadata of one object. `path` is relative to its store (object_store
 * semantics: '/'-separated, no leading '/', no "." or ".." segments). */
struct ql_object_meta {
  const char *path;
  int64_t size;             /* bytes */
  int64_t last_modified_ns; /* Unix epoch, nanoseconds; 0 if unknown */
};

/* An owned list of objects; `release` frees items and paths. */
struct ql_object_list {
  int64_t count;
  struct ql_object_meta *items;
  void (*release)(struct ql_object_list *self);
  void *private_data;
};

/* One object store: a local directory tree, an in-memory store, S3, ...
 * Thread-safe: every member may be called from any thread at once.
 * Owned by whoever received it from `get_store`; `release` sets release to NULL. */
struct ql_object_store {
  uint32_t struct_size;
  /* QL_ENOTFOUND if the object does not exist. */
  int (*head)(const struct ql_object_store *self, const char *path, struct ql_object_meta *out_meta_borrowed,
              struct ql_error *error);
  /* Read `length` bytes at `offset` (length -1: to the end). The result may
   * be shorter only when the object ends first. QL_ENOTFOUND if the object
   * does not exist; QL_EINVAL if offset is past its end. `out` is owned by the
   * caller (zero-copy where the host can). */
  int (*get_range)(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                   struct ql_bytes *out, struct ql_error *error);
  /* Read `length` (>= 0) bytes at `offset` (>= 0) of `path` into the
   * caller's `dst` (at least `length` bytes; the callee keeps no pointer to
   * it after returning). `*out_len` receives the bytes written: fewer than
   * `length` only when the object ends first. Same range rules as get_range:
   * QL_ENOTFOUND if the object does not exist; QL_EINVAL if offset is past
   * its end (offset == size reads 0 bytes), if offset or length is negative,
   * or if dst is NULL with length > 0; QL_EIO for other store failures. On
   * failure `*out_len` is 0 and the bytes of dst are unspecified. The call
   * returns when the bytes are in dst (hosts read a local file with a
   * positioned read straight into dst: no intermediate buffer, nothing to
   * release). Thread-safe like every member; concurrent calls must not
   * share a dst range. May be NULL: callers then use get_range. */
  int (*read_into)(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                   uint8_t *dst, int64_t *out_len, struct ql_error *error);
  /* Every object whose path starts with `prefix` followed by '/' (or every
   * object if prefix is "" or NULL), recursively, in unspecified order.
   * `out` is owned by the caller. */
  int (*list)(const struct ql_object_store *self, const char *prefix, struct ql_object_list *out,
              struct ql_error *error);
  void (*release)(struct ql_object_store *self);
  void *private_data;
};
/* Note on `head`: the path string in `out_meta_borrowed` is the caller's own
 * `path` argument (the callee fills only size and last_modified_ns). */

/* The session's object-store registry (DataFusion's ObjectStoreRegistry).
 * Thread-safe. */
struct ql_object_store_registry {
  uint32_t struct_size;
  /* The store serving `url` (e.g. "file:///data/x.zarr", "memory:///t",
   * "s3://bucket/key"): the store is chosen by scheme and authority, as in
   * object_store. `out` (owned by the caller) reads paths relative to the
   * store's root; use ql_url_split() from libqlink to get that path.
   * QL_ENOTFOUND if no store is registered for the URL. */
  int (*get_store)(const struct ql_object_store_registry *self, const char *url, struct ql_object_store *out,
                   struct ql_error *error);
  void *private_data;
};

/* ------------------------------------------------------------ temp files */

/* A temporary file from the host's disk manager; deleted on release. */
struct ql_temp_file {
  const char *path; /* absolute local path, owned by this struct */
  void (*release)(struct ql_temp_file *self);
  void *private_data;
};

struct ql_temp_files {
  uint32_t struct_size;
  /* Create an empty temp file; `out` owned by the caller. QL_ENOTSUP if the
   * host's disk manager is disabled. Thread-safe. */
  int (*create)(const struct ql_temp_files *self, const char *purpose, struct ql_temp_file *out,
                struct ql_error *error);
  void *private_data;
};

/* -------------------------------------------------------------- executor */

/* A spawned job; `wait` blocks until it finished and returns its status
 * (with its error); `release` after wait, or to detach (the job still runs
 * to completion). Owned by the spawner. */
struct ql_job {
  int (*wait)(struct ql_job *self, struct ql_error *error);
  void (*release)(struct ql_job *self);
  void *private_data;
};

/* The host's executor, for work a plugin wants to run in parallel (G4).
 * Thread-safe. The host runs `fn(arg, error)` on its own worker pool (for
 * DataFusion: its Tokio runtime's blocking pool), bracketed by the plugin's
 * executor enter/leave hooks. `fn` may block. */
struct ql_executor {
  uint32_t struct_size;
  int (*spawn)(const struct ql_executor *self, int (*fn)(void *arg, struct ql_error *error), void *arg,
               struct ql_job *out, struct ql_error *error);
  /* Worker threads available (a hint for how many jobs to spawn). */
  int32_t (*parallelism)(const struct ql_executor *self);
  void *private_data;
};

/* ---------------------------------------------------- runtime environment */

/* The session's runtime environment (DataFusion's RuntimeEnv, gap G5).
 * Any member may be NULL when the host has no such service. */
struct ql_runtime_env {
  uint32_t struct_size;
  const struct ql_memory_pool *memory_pool;
  const struct ql_object_store_registry *object_stores;
  const struct ql_temp_files *temp_files;
  void *private_data;
};

/* --------------------------------------------------------------- session */

struct ql_table_ref; /* qlink/plan.h */

/* What the session knows of one function, from function_lookup. */
struct ql_function_info {
  struct ql_function_id id; /* strings borrowed, valid like the session */
  int32_t volatility;       /* enum ql_volatility (qlink/function.h) */
  int32_t reserved_;
};

/* Engine-neutral config keys every host answers through config_get, each
 * from its own setting (docs/abi.md, R8): the target rows per record batch,
 * and how many partitions a scan should aim for (the engine's parallelism:
 * DataFusion's target_partitions, DuckDB's threads). Decimal integers. */
#define QL_CONFIG_BATCH_SIZE "qlink.execution.batch_size"
#define QL_CONFIG_TARGET_PARTITIONS "qlink.execution.target_partitions"

/* A read-only, lazy view of the caller's session (gap G6).
 *
 * Cost: building one is a handful of stores; each member costs a lookup, not
 * a walk over every registered function or option. Thread-safe.
 * Lifetime: borrowed for the duration of the call that received it.
 */
struct ql_session {
  uint32_t struct_size;
  /* Stable id of the session, NUL-terminated, borrowed. */
  const char *(*id)(const struct ql_session *self);
  /* Changes whenever a function, table or config option of the session
   * changes; a plugin may cache what it derived from the session under it. */
  uint64_t (*generation)(const struct ql_session *self);
  /* Copy the value of config option `key` (e.g. QL_CONFIG_BATCH_SIZE)
   * into buf (NUL-terminated, truncated to cap); *len receives the full length
   * without NUL. QL_ENOTFOUND for an unknown key. */
  int (*config_get)(const struct ql_session *self, const char *key, char *buf, size_t cap, size_t *len,
                    struct ql_error *error);
  /* Look up a function by name (case as the host's SQL resolves it) and
   * kind. QL_ENOTFOUND if the session has none. */
  int (*function_lookup)(const struct ql_session *self, const char *name, int32_t kind,
                         struct ql_function_info *out, struct ql_error *error);
  /* Look up a table by (possibly qualified) name. `out` is borrowed like the
   * session. QL_ENOTFOUND if absent; QL_ENOTSUP if the host cannot. */
  int (*table_lookup)(const struct ql_session *self, const char *name, struct ql_table_ref *out,
                      struct ql_error *error);
  /* The session's runtime environment; never NULL. */
  const struct ql_runtime_env *(*runtime_env)(const struct ql_session *self);
  void *private_data;
};

/* ---------------------------------------------------------- task context */

/* What one partition's execution gets (DataFusion's TaskContext, gap G8).
 * A plain struct of pointers: creating one costs well under a microsecond.
 * Valid until the stream produced by the execute that received it is
 * released. Thread-safe to read. */
struct ql_task_context {
  uint32_t struct_size;
  int32_t reserved_;
  int64_t partition;  /* the partition being executed, 0-based */
  int64_t batch_size; /* target rows per record batch (a hint; batches may be smaller) */
  const struct ql_session *session;
  const struct ql_runtime_env *runtime_env;
  const struct ql_executor *executor; /* may be NULL */
  /* Non-zero once the query was cancelled; producers check it between batches
   * and return QL_ECANCELLED. May be NULL (never cancelled). */
  int (*is_cancelled)(const struct ql_task_context *self);
  void *private_data;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_SERVICES_H */
