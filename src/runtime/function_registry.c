/* SPDX-License-Identifier: Apache-2.0 */
/* The reference function registry: a chained hash table keyed by
 * (lower-cased name, kind) under a rwlock. A lookup hashes the query name
 * case-insensitively without copying it and walks one bucket, so its cost
 * does not depend on how many functions are registered. The generation is
 * an atomic counter bumped under the write lock on every change. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "qlink/lib/function_registry.h"
#include "qlink/lib/status.h"

struct ql_fn_entry {
  char *key; /* lower-cased registered name */
  int32_t kind;
  uint64_t hash;
  struct ql_function_info info; /* id strings point at the two below */
  char *id_name;
  char *library;
  void *payload;
  struct ql_fn_entry *next;
};

struct ql_function_registry {
  pthread_rwlock_t lock;
  struct ql_fn_entry **buckets;
  size_t n_buckets; /* a power of two, >= count */
  int64_t count;
  atomic_uint_fast64_t generation;
};

/* FNV-1a over the lower-cased name, then the kind. */
static uint64_t ql_fn_hash(const char *name, int32_t kind) {
  uint64_t h = 1469598103934665603u;
  for (const char *p = name; *p; p++) h = (h ^ (uint8_t)tolower((unsigned char)*p)) * 1099511628211u;
  h = (h ^ (uint64_t)(uint32_t)kind) * 1099511628211u;
  return h ^ (h >> 29);
}

/* Does `name` equal the lower-case `key` ignoring case? */
static int ql_fn_name_eq(const char *name, const char *key) {
  for (; *name && *key; name++, key++) {
    if (tolower((unsigned char)*name) != *key) return 0;
  }
  return *name == *key;
}

static struct ql_fn_entry **ql_fn_slot(const struct ql_function_registry *r, const char *name, int32_t kind,
                                       uint64_t hash) {
  struct ql_fn_entry **slot = &r->buckets[hash & (r->n_buckets - 1)];
  for (; *slot; slot = &(*slot)->next) {
    if ((*slot)->hash == hash && (*slot)->kind == kind && ql_fn_name_eq(name, (*slot)->key)) return slot;
  }
  return slot; /* the empty link at the chain's end */
}

int ql_function_registry_new(struct ql_function_registry **out, struct ql_error *error) {
  *out = NULL;
  struct ql_function_registry *r = calloc(1, sizeof(*r));
  if (r) {
    r->n_buckets = 64;
    r->buckets = calloc(r->n_buckets, sizeof(*r->buckets));
  }
  if (!r || !r->buckets || pthread_rwlock_init(&r->lock, NULL) != 0) {
    if (r) free(r->buckets);
    free(r);
    return ql_error_set(error, QL_ENOMEM, "out of memory creating a function registry");
  }
  atomic_init(&r->generation, 0);
  *out = r;
  return QL_OK;
}

static void ql_fn_entry_free(struct ql_fn_entry *e) {
  free(e->key);
  free(e->id_name);
  free(e->library);
  free(e);
}

void ql_function_registry_free(struct ql_function_registry *registry, void (*payload_free)(void *payload)) {
  if (!registry) return;
  for (size_t b = 0; b < registry->n_buckets; b++) {
    struct ql_fn_entry *e = registry->buckets[b];
    while (e) {
      struct ql_fn_entry *next = e->next;
      if (payload_free && e->payload) payload_free(e->payload);
      ql_fn_entry_free(e);
      e = next;
    }
  }
  free(registry->buckets);
  pthread_rwlock_destroy(&registry->lock);
  free(registry);
}

static int ql_fn_kind_valid(int32_t kind) { return kind >= QL_FUNCTION_SCALAR && kind <= QL_FUNCTION_TABLE; }

/* A new entry with copies of every string; NULL when out of memory. */
static struct ql_fn_entry *ql_fn_entry_new(const char *name, const struct ql_function_info *info, void *payload) {
  struct ql_fn_entry *e = calloc(1, sizeof(*e));
  if (!e) return NULL;
  e->key = ql_strdup(name);
  e->id_name = ql_strdup(info->id.name ? info->id.name : name);
  e->library = info->id.library ? ql_strdup(info->id.library) : NULL;
  if (!e->key || !e->id_name || (info->id.library && !e->library)) {
    ql_fn_entry_free(e);
    return NULL;
  }
  for (char *p = e->key; *p; p++) *p = (char)tolower((unsigned char)*p);
  e->kind = info->id.kind;
  e->hash = ql_fn_hash(e->key, e->kind);
  e->info = *info;
  e->info.id.name = e->id_name;
  e->info.id.library = e->library;
  e->payload = payload;
  return e;
}

/* Double the buckets once entries outnumber them (keeps chains ~1 long). */
static void ql_fn_maybe_grow(struct ql_function_registry *r) {
  if ((size_t)r->count <= r->n_buckets) return;
  size_t n = r->n_buckets * 2;
  struct ql_fn_entry **buckets = calloc(n, sizeof(*buckets));
  if (!buckets) return; /* still correct, only slower */
  for (size_t b = 0; b < r->n_buckets; b++) {
    struct ql_fn_entry *e = r->buckets[b];
    while (e) {
      struct ql_fn_entry *next = e->next;
      e->next = buckets[e->hash & (n - 1)];
      buckets[e->hash & (n - 1)] = e;
      e = next;
    }
  }
  free(r->buckets);
  r->buckets = buckets;
  r->n_buckets = n;
}

int ql_function_registry_put(struct ql_function_registry *registry, const char *name,
                             const struct ql_function_info *info, void *payload, void **replaced,
                             struct ql_error *error) {
  if (replaced) *replaced = NULL;
  if (!name || !name[0]) return ql_error_set(error, QL_EINVAL, "function registry put: empty function name");
  if (!info) return ql_error_set(error, QL_EINVAL, "function registry put '%s': info is NULL", name);
  if (!ql_fn_kind_valid(info->id.kind)) {
    return ql_error_set(error, QL_EINVAL, "function registry put '%s': unknown function kind %d", name,
                        (int)info->id.kind);
  }
  struct ql_fn_entry *e = ql_fn_entry_new(name, info, payload);
  if (!e) return ql_error_set(error, QL_ENOMEM, "out of memory registering function '%s'", name);

  pthread_rwlock_wrlock(&registry->lock);
  struct ql_fn_entry **slot = ql_fn_slot(registry, e->key, e->kind, e->hash);
  struct ql_fn_entry *old = *slot;
  if (old) {
    e->next = old->next;
  } else {
    registry->count++;
  }
  *slot = e;
  atomic_fetch_add(&registry->generation, 1);
  if (!old) ql_fn_maybe_grow(registry);
  pthread_rwlock_unlock(&registry->lock);

  if (old) {
    if (replaced) *replaced = old->payload;
    ql_fn_entry_free(old);
  }
  return QL_OK;
}

int ql_function_registry_remove(struct ql_function_registry *registry, const char *name, int32_t kind,
                                void **payload, struct ql_error *error) {
  if (payload) *payload = NULL;
  if (!name) return ql_error_set(error, QL_EINVAL, "function registry remove: name is NULL");
  uint64_t hash = ql_fn_hash(name, kind);
  pthread_rwlock_wrlock(&registry->lock);
  struct ql_fn_entry **slot = ql_fn_slot(registry, name, kind, hash);
  struct ql_fn_entry *e = *slot;
  if (e) {
    *slot = e->next;
    registry->count--;
    atomic_fetch_add(&registry->generation, 1);
  }
  pthread_rwlock_unlock(&registry->lock);
  if (!e) return ql_error_set(error, QL_ENOTFOUND, "no function '%s' of kind %d is registered", name, (int)kind);
  if (payload) *payload = e->payload;
  ql_fn_entry_free(e);
  return QL_OK;
}

int ql_function_registry_lookup(const struct ql_function_registry *registry, const char *name, int32_t kind,
                                struct ql_function_info *out, void **payload) {
  if (!name) return QL_ENOTFOUND;
  struct ql_function_registry *r = (struct ql_function_registry *)registry; /* the lock is not const */
  uint64_t hash = ql_fn_hash(name, kind);
  pthread_rwlock_rdlock(&r->lock);
  struct ql_fn_entry *e = *ql_fn_slot(r, name, kind, hash);
  if (e) {
    if (out) *out = e->info;
    if (payload) *payload = e->payload;
  }
  pthread_rwlock_unlock(&r->lock);
  return e ? QL_OK : QL_ENOTFOUND;
}

uint64_t ql_function_registry_generation(const struct ql_function_registry *registry) {
  return atomic_load(&((struct ql_function_registry *)registry)->generation);
}

int64_t ql_function_registry_count(const struct ql_function_registry *registry) {
  struct ql_function_registry *r = (struct ql_function_registry *)registry;
  pthread_rwlock_rdlock(&r->lock);
  int64_t n = r->count;
  pthread_rwlock_unlock(&r->lock);
  return n;
}
