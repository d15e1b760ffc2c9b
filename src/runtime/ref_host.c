/* SPDX-License-Identifier: Apache-2.0 */
/* The reference host: a memory pool, object stores (file://, memory://),
 * temp files, a pthread executor, the built-in function registry and config
 * options, behind the ABI's session, runtime-environment and task-context
 * views. Every view member is O(1): hash lookups, atomic loads, or a
 * pointer into the host. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/text.h"
#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "runtime_internal.h"

struct ql_config_entry {
  char *key;
  char *value;
  uint64_t hash;
  struct ql_config_entry *next;
};

struct ql_ref_host {
  struct ql_session session;
  struct ql_runtime_env env;
  struct ql_temp_files temp_files;
  struct ql_ref_memory_pool *pool;
  struct ql_ref_store_registry *stores;
  struct ql_function_registry *functions;
  struct ql_thread_executor *executor;
  int64_t batch_size;
  atomic_int cancelled;
  atomic_uint_fast64_t config_generation;
  char id[64];
  pthread_rwlock_t config_lock;
  struct ql_config_entry **config; /* chained hash, n_config buckets (a power of two) */
  size_t n_config;
  size_t config_count;
};

/* ---- config options */

static uint64_t ql_config_hash(const char *key) {
  uint64_t h = 1469598103934665603u;
  for (; *key; key++) h = (h ^ (uint8_t)*key) * 1099511628211u;
  return h;
}

static struct ql_config_entry *ql_config_find(const struct ql_ref_host *host, const char *key, uint64_t hash) {
  for (struct ql_config_entry *e = host->config[hash & (host->n_config - 1)]; e; e = e->next) {
    if (e->hash == hash && strcmp(e->key, key) == 0) return e;
  }
  return NULL;
}

static void ql_config_grow(struct ql_ref_host *host) {
  if (host->config_count <= host->n_config) return;
  size_t n = host->n_config * 2;
  struct ql_config_entry **buckets = calloc(n, sizeof(*buckets));
  if (!buckets) return; /* still correct, only slower */
  for (size_t b = 0; b < host->n_config; b++) {
    struct ql_config_entry *e = host->config[b];
    while (e) {
      struct ql_config_entry *next = e->next;
      e->next = buckets[e->hash & (n - 1)];
      buckets[e->hash & (n - 1)] = e;
      e = next;
    }
  }
  free(host->config);
  host->config = buckets;
  host->n_config = n;
}

int ql_ref_host_config_set(struct ql_ref_host *host, const char *key, const char *value, struct ql_error *error) {
  if (!key || !key[0] || !value) return ql_error_set(error, QL_EINVAL, "config_set: empty key or NULL value");
  char *v = ql_strdup(value);
  if (!v) return ql_error_set(error, QL_ENOMEM, "out of memory setting config '%s'", key);
  uint64_t hash = ql_config_hash(key);
  pthread_rwlock_wrlock(&host->config_lock);
  struct ql_config_entry *e = ql_config_find(host, key, hash);
  char *old = NULL;
  if (e) {
    old = e->value;
    e->value = v;
  } else {
    e = calloc(1, sizeof(*e));
    char *k = ql_strdup(key);
    if (!e || !k) {
      pthread_rwlock_unlock(&host->config_lock);
      free(e);
      free(k);
      free(v);
      return ql_error_set(error, QL_ENOMEM, "out of memory setting config '%s'", key);
    }
    *e = (struct ql_config_entry){k, v, hash, host->config[hash & (host->n_config - 1)]};
    host->config[hash & (host->n_config - 1)] = e;
    host->config_count++;
    ql_config_grow(host);
  }
  atomic_fetch_add(&host->config_generation, 1);
  pthread_rwlock_unlock(&host->config_lock);
  free(old);
  return QL_OK;
}

/* ---- the session view */

static struct ql_ref_host *ql_session_host(const struct ql_session *self) { return self->private_data; }

static const char *ql_session_id(const struct ql_session *self) { return ql_session_host(self)->id; }

static uint64_t ql_session_generation(const struct ql_session *self) {
  struct ql_ref_host *host = ql_session_host(self);
  /* Both counters only grow, so their sum changes whenever either does. */
  return ql_function_registry_generation(host->functions) + atomic_load(&host->config_generation);
}

static int ql_session_config_get(const struct ql_session *self, const char *key, char *buf, size_t cap, size_t *len,
                                 struct ql_error *error) {
  struct ql_ref_host *host = ql_session_host(self);
  if (!key) return ql_error_set(error, QL_EINVAL, "config_get: key is NULL");
  pthread_rwlock_rdlock(&host->config_lock);
  struct ql_config_entry *e = ql_config_find(host, key, ql_config_hash(key));
  if (e) {
    size_t n = strlen(e->value);
    if (len) *len = n;
    if (buf && cap > 0) {
      size_t copy = n < cap - 1 ? n : cap - 1;
      memcpy(buf, e->value, copy);
      buf[copy] = '\0';
    }
  }
  pthread_rwlock_unlock(&host->config_lock);
  return e ? QL_OK : ql_error_set(error, QL_ENOTFOUND, "unknown config option '%s'", key);
}

static const char *ql_kind_name(int32_t kind) {
  switch (kind) {
    case QL_FUNCTION_SCALAR:
      return "scalar";
    case QL_FUNCTION_AGGREGATE:
      return "aggregate";
    case QL_FUNCTION_WINDOW:
      return "window";
    case QL_FUNCTION_TABLE:
      return "table";
    default:
      return "unknown-kind";
  }
}

static int ql_session_function_lookup(const struct ql_session *self, const char *name, int32_t kind,
                                      struct ql_function_info *out, struct ql_error *error) {
  struct ql_ref_host *host = ql_session_host(self);
  if (ql_function_registry_lookup(host->functions, name, kind, out, NULL) == QL_OK) return QL_OK;
  return ql_error_set(error, QL_ENOTFOUND, "no %s function '%s' in session %s", ql_kind_name(kind),
                      name ? name : "(null)", host->id);
}

static int ql_session_table_lookup(const struct ql_session *self, const char *name, struct ql_table_ref *out,
                                   struct ql_error *error) {
  (void)out;
  return ql_error_set(error, QL_ENOTSUP, "the reference host has no table catalog (looking up '%s' in session %s)",
                      name ? name : "(null)", ql_session_host(self)->id);
}

static const struct ql_runtime_env *ql_session_runtime_env(const struct ql_session *self) {
  return &ql_session_host(self)->env;
}

/* ---- task contexts */

static int ql_task_is_cancelled(const struct ql_task_context *self) {
  const struct ql_ref_host *host = self->private_data;
  return atomic_load(&((struct ql_ref_host *)host)->cancelled);
}

void ql_ref_host_task_context(struct ql_ref_host *host, int64_t partition, struct ql_task_context *out) {
  out->struct_size = (uint32_t)sizeof(*out);
  out->reserved_ = 0;
  out->partition = partition;
  out->batch_size = host->batch_size;
  out->session = &host->session;
  out->runtime_env = &host->env;
  out->executor = ql_thread_executor_view(host->executor);
  out->is_cancelled = ql_task_is_cancelled;
  out->private_data = host;
}

void ql_ref_host_cancel(struct ql_ref_host *host, int cancelled) { atomic_store(&host->cancelled, cancelled ? 1 : 0); }

/* ---- lifecycle */

static int ql_ref_host_init_services(struct ql_ref_host *host, const struct ql_ref_host_options *o,
                                     struct ql_error *error) {
  int32_t threads = o->threads;
  if (threads <= 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    threads = cpus > 0 ? (int32_t)cpus : 1;
  }
  QL_RETURN_NOT_OK(ql_ref_memory_pool_new(o->memory_limit, &host->pool, error));
  QL_RETURN_NOT_OK(ql_ref_store_registry_new(&host->stores, error));
  struct ql_object_store memory;
  QL_RETURN_NOT_OK(ql_memory_store_new(&memory, error));
  QL_RETURN_NOT_OK(ql_ref_store_registry_register(host->stores, "memory://", &memory, error));
  QL_RETURN_NOT_OK(ql_temp_files_init(&host->temp_files, NULL, error));
  QL_RETURN_NOT_OK(ql_thread_executor_new(threads, &host->executor, error));
  QL_RETURN_NOT_OK(ql_function_registry_new(&host->functions, error));
  QL_RETURN_NOT_OK(ql_function_registry_add_builtins(host->functions, error));
  /* The engine-neutral keys every host answers (docs/abi.md, R8). */
  char value[32];
  snprintf(value, sizeof(value), "%lld", (long long)host->batch_size);
  QL_RETURN_NOT_OK(ql_ref_host_config_set(host, QL_CONFIG_BATCH_SIZE, value, error));
  snprintf(value, sizeof(value), "%d", (int)threads);
  QL_RETURN_NOT_OK(ql_ref_host_config_set(host, QL_CONFIG_TARGET_PARTITIONS, value, error));
  return QL_OK;
}

int ql_ref_host_new(const struct ql_ref_host_options *options, struct ql_ref_host **out, struct ql_error *error) {
  *out = NULL;
  static const struct ql_ref_host_options defaults = {-1, 0, 0};
  const struct ql_ref_host_options *o = options ? options : &defaults;
  if (o->batch_size < 0) return ql_error_set(error, QL_EINVAL, "ref host: batch_size %lld is negative", (long long)o->batch_size);
  struct ql_ref_host *host = calloc(1, sizeof(*host));
  if (host) {
    host->n_config = 16;
    host->config = calloc(host->n_config, sizeof(*host->config));
  }
  if (!host || !host->config || pthread_rwlock_init(&host->config_lock, NULL) != 0) {
    if (host) free(host->config);
    free(host);
    return ql_error_set(error, QL_ENOMEM, "out of memory creating the reference host");
  }
  static atomic_uint_fast64_t next_id = 1;
  snprintf(host->id, sizeof(host->id), "qlink-ref-%ld-%llu", (long)getpid(),
           (unsigned long long)atomic_fetch_add(&next_id, 1));
  host->batch_size = o->batch_size > 0 ? o->batch_size : 8192;
  atomic_init(&host->cancelled, 0);
  atomic_init(&host->config_generation, 0);

  int rc = ql_ref_host_init_services(host, o, error);
  if (rc != QL_OK) {
    ql_ref_host_free(host, NULL);
    return rc;
  }
  host->env.struct_size = (uint32_t)sizeof(host->env);
  host->env.memory_pool = ql_ref_memory_pool_view(host->pool);
  host->env.object_stores = ql_ref_store_registry_view(host->stores);
  host->env.temp_files = &host->temp_files;
  host->env.private_data = host;

  host->session.struct_size = (uint32_t)sizeof(host->session);
  host->session.id = ql_session_id;
  host->session.generation = ql_session_generation;
  host->session.config_get = ql_session_config_get;
  host->session.function_lookup = ql_session_function_lookup;
  host->session.table_lookup = ql_session_table_lookup;
  host->session.runtime_env = ql_session_runtime_env;
  host->session.private_data = host;
  *out = host;
  return QL_OK;
}

int ql_ref_host_free(struct ql_ref_host *host, struct ql_error *error) {
  if (!host) return QL_OK;
  /* The executor first: its queued jobs may still use the other services. */
  ql_thread_executor_free(host->executor);
  ql_function_registry_free(host->functions, NULL);
  ql_ref_store_registry_free(host->stores);
  ql_temp_files_free(&host->temp_files);
  for (size_t b = 0; b < host->n_config; b++) {
    struct ql_config_entry *e = host->config[b];
    while (e) {
      struct ql_config_entry *next = e->next;
      free(e->key);
      free(e->value);
      free(e);
      e = next;
    }
  }
  free(host->config);
  pthread_rwlock_destroy(&host->config_lock);
  int rc = QL_OK;
  if (host->pool) {
    struct ql_error pool_error = {0};
    rc = ql_ref_memory_pool_free(host->pool, &pool_error);
    /* On failure the pool stays allocated on purpose: the leaked reservations still point at it. */
    if (rc != QL_OK) ql_error_set(error, rc, "reference host freed with memory still reserved: %s", ql_error_message(&pool_error));
    ql_error_release(&pool_error);
  }
  free(host);
  return rc;
}

const struct ql_session *ql_ref_host_session(struct ql_ref_host *host) { return &host->session; }
const struct ql_runtime_env *ql_ref_host_runtime_env(struct ql_ref_host *host) { return &host->env; }
const struct ql_executor *ql_ref_host_executor(struct ql_ref_host *host) {
  return ql_thread_executor_view(host->executor);
}
struct ql_function_registry *ql_ref_host_functions(struct ql_ref_host *host) { return host->functions; }
struct ql_ref_memory_pool *ql_ref_host_memory_pool(struct ql_ref_host *host) { return host->pool; }
struct ql_ref_store_registry *ql_ref_host_stores(struct ql_ref_host *host) { return host->stores; }
