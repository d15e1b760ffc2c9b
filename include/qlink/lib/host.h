/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: a reference host, for hosts (and tests) without an engine.
 *
 * Bundles a memory pool, an object-store registry (file:// and memory://),
 * a temp-file service, a pthread executor, a function registry with the
 * built-ins, and config options, and exposes them as the ABI's session,
 * runtime environment and task-context views.
 */
#ifndef QLINK_LIB_HOST_H
#define QLINK_LIB_HOST_H

#include "qlink/lib/function_registry.h"
#include "qlink/lib/memory_pool.h"
#include "qlink/lib/object_store.h"
#include "qlink/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_ref_host_options {
  int64_t memory_limit; /* bytes, -1 unbounded */
  int64_t batch_size;   /* rows; 0: 8192 */
  int32_t threads;      /* executor workers; 0: number of CPUs */
};

struct ql_ref_host;

/* options NULL: unbounded memory, batch 8192, one thread per CPU. The
 * session id is "qlink-ref-PID-N"; config starts with the engine-neutral
 * keys QL_CONFIG_BATCH_SIZE (the batch size) and QL_CONFIG_TARGET_PARTITIONS
 * (the thread count), which an engine host updates from its own settings
 * with ql_ref_host_config_set.
 * The session's generation changes on every function-registry change and
 * every ql_ref_host_config_set. table_lookup is QL_ENOTSUP (no catalog). */
int ql_ref_host_new(const struct ql_ref_host_options *options, struct ql_ref_host **out, struct ql_error *error);
/* QL_ESTATE if memory is still reserved (a leak in some plugin), after freeing everything else;
 * the memory pool itself is then kept so the leaked reservations stay valid
 * (free it with ql_ref_memory_pool_free after releasing them). Runs every
 * queued executor job to completion first; release job handles before. */
int ql_ref_host_free(struct ql_ref_host *host, struct ql_error *error);

const struct ql_session *ql_ref_host_session(struct ql_ref_host *host);
const struct ql_runtime_env *ql_ref_host_runtime_env(struct ql_ref_host *host);
const struct ql_executor *ql_ref_host_executor(struct ql_ref_host *host);
/* Fill a task context for `partition`; O(1), no allocation. Valid while the host lives. */
void ql_ref_host_task_context(struct ql_ref_host *host, int64_t partition, struct ql_task_context *out);
/* Set the cancellation flag seen by every task context of this host. */
void ql_ref_host_cancel(struct ql_ref_host *host, int cancelled);

int ql_ref_host_config_set(struct ql_ref_host *host, const char *key, const char *value, struct ql_error *error);
struct ql_function_registry *ql_ref_host_functions(struct ql_ref_host *host);
struct ql_ref_memory_pool *ql_ref_host_memory_pool(struct ql_ref_host *host);
struct ql_ref_store_registry *ql_ref_host_stores(struct ql_ref_host *host);

/* Executor bracketing (gap G4): call around every call into a plugin's objects. */
static inline void *ql_plugin_enter(const struct ql_plugin *p) {
  return (p && p->executor_enter) ? p->executor_enter(p) : (void *)0;
}
static inline void ql_plugin_leave(const struct ql_plugin *p, void *token) {
  if (p && p->executor_leave) p->executor_leave(p, token);
}

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_HOST_H */
