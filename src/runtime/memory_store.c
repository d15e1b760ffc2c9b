/* SPDX-License-Identifier: Apache-2.0 */
/* The memory:// object store: a chained hash map from path to an immutable,
 * reference-counted blob, under a rwlock. get_range hands out a view into
 * the blob (zero-copy) that keeps it alive, so a later put or the store's
 * release never invalidates bytes a reader still holds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/text.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "store_internal.h"

struct ql_blob {
  atomic_long refs;
  int64_t size;
  uint8_t data[];
};

struct ql_mem_entry {
  char *path;
  uint64_t hash;
  struct ql_blob *blob;
  int64_t last_modified_ns;
  struct ql_mem_entry *next;
};

struct ql_mem_store {
  pthread_rwlock_t lock;
  struct ql_mem_entry **buckets;
  size_t n_buckets; /* a power of two */
  int64_t count;
};

static void ql_blob_unref(struct ql_blob *blob) {
  if (atomic_fetch_sub(&blob->refs, 1) == 1) free(blob);
}

/* FNV-1a. */
static uint64_t ql_path_hash(const char *s) {
  uint64_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211u;
  return h;
}

static struct ql_mem_entry *ql_mem_find(const struct ql_mem_store *m, const char *path, uint64_t hash) {
  for (struct ql_mem_entry *e = m->buckets[hash & (m->n_buckets - 1)]; e; e = e->next) {
    if (e->hash == hash && strcmp(e->path, path) == 0) return e;
  }
  return NULL;
}

static int ql_mem_head(const struct ql_object_store *self, const char *path, struct ql_object_meta *out,
                       struct ql_error *error) {
  struct ql_mem_store *m = self->private_data;
  QL_RETURN_NOT_OK(ql_object_path_check(path, 0, error));
  pthread_rwlock_rdlock(&m->lock);
  struct ql_mem_entry *e = ql_mem_find(m, path, ql_path_hash(path));
  if (e) {
    out->path = path;
    out->size = e->blob->size;
    out->last_modified_ns = e->last_modified_ns;
  }
  pthread_rwlock_unlock(&m->lock);
  return e ? QL_OK : ql_error_set(error, QL_ENOTFOUND, "object not found: memory:///%s", path);
}

static void ql_blob_bytes_release(struct ql_bytes *self) {
  ql_blob_unref(self->private_data);
  self->data = NULL;
  self->private_data = NULL;
  self->release = NULL;
}

static int ql_mem_get_range(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                            struct ql_bytes *out, struct ql_error *error) {
  struct ql_mem_store *m = self->private_data;
  memset(out, 0, sizeof(*out));
  QL_RETURN_NOT_OK(ql_object_path_check(path, 0, error));
  if (offset < 0 || length < -1) {
    return ql_error_set(error, QL_EINVAL, "get_range memory:///%s: bad range offset %lld length %lld", path,
                        (long long)offset, (long long)length);
  }
  pthread_rwlock_rdlock(&m->lock);
  struct ql_mem_entry *e = ql_mem_find(m, path, ql_path_hash(path));
  struct ql_blob *blob = e ? e->blob : NULL;
  if (blob) atomic_fetch_add(&blob->refs, 1);
  pthread_rwlock_unlock(&m->lock);
  if (!blob) return ql_error_set(error, QL_ENOTFOUND, "object not found: memory:///%s", path);
  if (offset > blob->size) {
    int64_t size = blob->size;
    ql_blob_unref(blob);
    return ql_error_set(error, QL_EINVAL, "get_range memory:///%s: offset %lld is past the end (size %lld bytes)",
                        path, (long long)offset, (long long)size);
  }
  int64_t n = blob->size - offset;
  if (length >= 0 && length < n) n = length;
  out->data = blob->data + offset;
  out->size = n;
  out->release = ql_blob_bytes_release;
  out->private_data = blob;
  return QL_OK;
}

static int ql_mem_list(const struct ql_object_store *self, const char *prefix, struct ql_object_list *out,
                       struct ql_error *error) {
  struct ql_mem_store *m = self->private_data;
  memset(out, 0, sizeof(*out));
  prefix = prefix ? prefix : "";
  QL_RETURN_NOT_OK(ql_object_path_check(prefix, 1, error));
  pthread_rwlock_rdlock(&m->lock);
  struct ql_object_meta *items = calloc((size_t)(m->count > 0 ? m->count : 1), sizeof(*items));
  int64_t n = 0;
  int rc = items ? QL_OK : QL_ENOMEM;
  for (size_t b = 0; rc == QL_OK && b < m->n_buckets; b++) {
    for (struct ql_mem_entry *e = m->buckets[b]; rc == QL_OK && e; e = e->next) {
      if (!ql_object_path_under(e->path, prefix)) continue;
      char *path = ql_strdup(e->path);
      if (!path) {
        rc = QL_ENOMEM;
        break;
      }
      items[n++] = (struct ql_object_meta){path, e->blob->size, e->last_modified_ns};
    }
  }
  pthread_rwlock_unlock(&m->lock);
  if (rc != QL_OK) {
    ql_object_metas_free(items, n);
    return ql_error_set(error, QL_ENOMEM, "out of memory listing memory:///%s", prefix);
  }
  ql_object_list_adopt(out, items, n);
  return QL_OK;
}

static void ql_mem_release(struct ql_object_store *self) {
  struct ql_mem_store *m = self->private_data;
  for (size_t b = 0; b < m->n_buckets; b++) {
    struct ql_mem_entry *e = m->buckets[b];
    while (e) {
      struct ql_mem_entry *next = e->next;
      ql_blob_unref(e->blob);
      free(e->path);
      free(e);
      e = next;
    }
  }
  free(m->buckets);
  pthread_rwlock_destroy(&m->lock);
  free(m);
  self->private_data = NULL;
  self->release = NULL;
}

int ql_memory_store_new(struct ql_object_store *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  struct ql_mem_store *m = calloc(1, sizeof(*m));
  if (m) {
    m->n_buckets = 64;
    m->buckets = calloc(m->n_buckets, sizeof(*m->buckets));
  }
  if (!m || !m->buckets || pthread_rwlock_init(&m->lock, NULL) != 0) {
    if (m) free(m->buckets);
    free(m);
    return ql_error_set(error, QL_ENOMEM, "out of memory creating a memory store");
  }
  out->struct_size = (uint32_t)sizeof(*out);
  out->head = ql_mem_head;
  out->get_range = ql_mem_get_range;
  out->list = ql_mem_list;
  out->release = ql_mem_release;
  out->private_data = m;
  return QL_OK;
}

/* Double the buckets when entries outnumber them (keeps chains short). */
static void ql_mem_maybe_grow(struct ql_mem_store *m) {
  if ((size_t)m->count < m->n_buckets) return;
  size_t n = m->n_buckets * 2;
  struct ql_mem_entry **buckets = calloc(n, sizeof(*buckets));
  if (!buckets) return; /* still correct, only slower */
  for (size_t b = 0; b < m->n_buckets; b++) {
    struct ql_mem_entry *e = m->buckets[b];
    while (e) {
      struct ql_mem_entry *next = e->next;
      e->next = buckets[e->hash & (n - 1)];
      buckets[e->hash & (n - 1)] = e;
      e = next;
    }
  }
  free(m->buckets);
  m->buckets = buckets;
  m->n_buckets = n;
}

int ql_memory_store_put(const struct ql_object_store *store, const char *path, const void *data, int64_t size,
                        struct ql_error *error) {
  store = store ? ql_store_handle_unwrap(store) : NULL;
  if (!store || !store->release || store->head != ql_mem_head) {
    return ql_error_set(error, QL_EINVAL, "ql_memory_store_put: not a memory store");
  }
  QL_RETURN_NOT_OK(ql_object_path_check(path, 0, error));
  if (size < 0 || (size > 0 && !data)) {
    return ql_error_set(error, QL_EINVAL, "ql_memory_store_put memory:///%s: bad data or size %lld", path,
                        (long long)size);
  }
  struct ql_blob *blob = malloc(sizeof(*blob) + (size_t)size);
  if (!blob) return ql_error_set(error, QL_ENOMEM, "out of memory storing %lld bytes at memory:///%s", (long long)size, path);
  atomic_init(&blob->refs, 1);
  blob->size = size;
  if (size > 0) memcpy(blob->data, data, (size_t)size);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t mtime = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;

  struct ql_mem_store *m = store->private_data;
  uint64_t hash = ql_path_hash(path);
  pthread_rwlock_wrlock(&m->lock);
  struct ql_mem_entry *e = ql_mem_find(m, path, hash);
  struct ql_blob *old = NULL;
  if (e) {
    old = e->blob;
    e->blob = blob;
    e->last_modified_ns = mtime;
  } else {
    e = calloc(1, sizeof(*e));
    char *copy = ql_strdup(path);
    if (!e || !copy) {
      pthread_rwlock_unlock(&m->lock);
      free(e);
      free(copy);
      free(blob);
      return ql_error_set(error, QL_ENOMEM, "out of memory storing memory:///%s", path);
    }
    *e = (struct ql_mem_entry){copy, hash, blob, mtime, m->buckets[hash & (m->n_buckets - 1)]};
    m->buckets[hash & (m->n_buckets - 1)] = e;
    m->count++;
    ql_mem_maybe_grow(m);
  }
  pthread_rwlock_unlock(&m->lock);
  if (old) ql_blob_unref(old);
  return QL_OK;
}
