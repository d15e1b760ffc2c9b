/* SPDX-License-Identifier: Apache-2.0 */
/* The reference object-store registry: store URL -> registered store.
 * Each registered store lives in a reference-counted record; get_store hands
 * out a handle holding one reference, so a store outlives both its
 * replacement in the registry and the registry itself while handles exist. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "store_internal.h"

struct ql_store_record {
  atomic_long refs;
  char *store_url;
  struct ql_object_store store;
};

struct ql_ref_store_registry {
  struct ql_object_store_registry view;
  pthread_rwlock_t lock;
  struct ql_store_record **records; /* a handful of schemes: a linear scan is enough */
  int64_t count, cap;
};

static void ql_store_record_unref(struct ql_store_record *r) {
  if (atomic_fetch_sub(&r->refs, 1) != 1) return;
  if (r->store.release) r->store.release(&r->store);
  free(r->store_url);
  free(r);
}

/* ---- handles: forward to the registered store */

static int ql_handle_head(const struct ql_object_store *self, const char *path, struct ql_object_meta *out,
                          struct ql_error *error) {
  const struct ql_store_record *r = self->private_data;
  return r->store.head(&r->store, path, out, error);
}

static int ql_handle_get_range(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                               struct ql_bytes *out, struct ql_error *error) {
  const struct ql_store_record *r = self->private_data;
  return r->store.get_range(&r->store, path, offset, length, out, error);
}

static int ql_handle_read_into(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                               uint8_t *dst, int64_t *out_len, struct ql_error *error) {
  const struct ql_store_record *r = self->private_data;
  return r->store.read_into(&r->store, path, offset, length, dst, out_len, error);
}

static int ql_handle_list(const struct ql_object_store *self, const char *prefix, struct ql_object_list *out,
                          struct ql_error *error) {
  const struct ql_store_record *r = self->private_data;
  return r->store.list(&r->store, prefix, out, error);
}

static void ql_handle_release(struct ql_object_store *self) {
  ql_store_record_unref(self->private_data);
  self->private_data = NULL;
  self->release = NULL;
}

const struct ql_object_store *ql_store_handle_unwrap(const struct ql_object_store *store) {
  if (store->head == ql_handle_head && store->private_data) {
    return &((const struct ql_store_record *)store->private_data)->store;
  }
  return store;
}

/* ---- the registry */

static struct ql_store_record *ql_registry_find(const struct ql_ref_store_registry *reg, const char *store_url) {
  for (int64_t i = 0; i < reg->count; i++) {
    if (strcmp(reg->records[i]->store_url, store_url) == 0) return reg->records[i];
  }
  return NULL;
}

static int ql_registry_get_store(const struct ql_object_store_registry *self, const char *url,
                                 struct ql_object_store *out, struct ql_error *error) {
  struct ql_ref_store_registry *reg = self->private_data;
  memset(out, 0, sizeof(*out));
  char *store_url = NULL, *path = NULL;
  QL_RETURN_NOT_OK(ql_url_split(url, &store_url, &path, error));
  free(path);
  pthread_rwlock_rdlock(&reg->lock);
  struct ql_store_record *r = ql_registry_find(reg, store_url);
  if (r) atomic_fetch_add(&r->refs, 1);
  pthread_rwlock_unlock(&reg->lock);
  if (!r) {
    int rc = ql_error_set(error, QL_ENOTFOUND, "no object store registered for '%s' (URL '%s')", store_url, url);
    free(store_url);
    return rc;
  }
  free(store_url);
  out->struct_size = (uint32_t)sizeof(*out);
  out->head = ql_handle_head;
  out->get_range = ql_handle_get_range;
  out->list = ql_handle_list;
  out->release = ql_handle_release;
  out->private_data = r;
  /* Offered only when the registered store has it: non-NULL, and within
   * its struct_size (a reader never looks past struct_size). */
  if (QL_HAS_MEMBER(&r->store, struct ql_object_store, read_into) && r->store.read_into) {
    out->read_into = ql_handle_read_into;
  }
  return QL_OK;
}

int ql_ref_store_registry_register(struct ql_ref_store_registry *registry, const char *store_url,
                                   struct ql_object_store *store, struct ql_error *error) {
  if (!store || !store->release || !store->head || !store->get_range || !store->list) {
    if (store && store->release) store->release(store);
    return ql_error_set(error, QL_EINVAL, "register '%s': the store is released or incomplete",
                        store_url ? store_url : "(null)");
  }
  /* Canonical form, as get_store's ql_url_split produces it ("S3://b/" -> "s3://b"). */
  char *url = NULL, *path = NULL;
  int rc = store_url ? ql_url_split(store_url, &url, &path, error)
                     : ql_error_set(error, QL_EINVAL, "register: store URL is NULL");
  if (rc == QL_OK && (path[0] != '\0' || !strstr(store_url, "://"))) {
    rc = ql_error_set(error, QL_EINVAL, "register: '%s' is not a store URL (scheme://authority without a path)",
                      store_url);
  }
  free(path);
  if (rc != QL_OK) {
    free(url);
    store->release(store);
    return rc;
  }
  struct ql_store_record *r = calloc(1, sizeof(*r));
  if (!r) {
    free(r);
    free(url);
    store->release(store); /* moved in: the registry owns it even on failure */
    return ql_error_set(error, QL_ENOMEM, "out of memory registering an object store");
  }
  atomic_init(&r->refs, 1);
  r->store_url = url;
  r->store = *store;
  store->release = NULL;

  pthread_rwlock_wrlock(&registry->lock);
  struct ql_store_record *old = NULL;
  int64_t slot = registry->count;
  for (int64_t i = 0; i < registry->count; i++) {
    if (strcmp(registry->records[i]->store_url, url) == 0) slot = i;
  }
  if (slot < registry->count) {
    old = registry->records[slot];
  } else if (registry->count == registry->cap) {
    int64_t cap = registry->cap ? registry->cap * 2 : 8;
    struct ql_store_record **records = realloc(registry->records, (size_t)cap * sizeof(*records));
    if (!records) {
      pthread_rwlock_unlock(&registry->lock);
      ql_store_record_unref(r);
      return ql_error_set(error, QL_ENOMEM, "out of memory registering '%s'", store_url);
    }
    registry->records = records;
    registry->cap = cap;
  }
  registry->records[slot] = r;
  if (slot == registry->count) registry->count++;
  pthread_rwlock_unlock(&registry->lock);
  if (old) ql_store_record_unref(old);
  return QL_OK;
}

int ql_ref_store_registry_new(struct ql_ref_store_registry **out, struct ql_error *error) {
  *out = NULL;
  struct ql_ref_store_registry *reg = calloc(1, sizeof(*reg));
  if (!reg) return ql_error_set(error, QL_ENOMEM, "out of memory creating an object-store registry");
  if (pthread_rwlock_init(&reg->lock, NULL) != 0) {
    free(reg);
    return ql_error_set(error, QL_EINTERNAL, "pthread_rwlock_init failed for an object-store registry");
  }
  reg->view.struct_size = (uint32_t)sizeof(reg->view);
  reg->view.get_store = ql_registry_get_store;
  reg->view.private_data = reg;
  struct ql_object_store files;
  int rc = ql_file_store_new(&files, error);
  if (rc == QL_OK) rc = ql_ref_store_registry_register(reg, "file://", &files, error);
  if (rc != QL_OK) {
    ql_ref_store_registry_free(reg);
    return rc;
  }
  *out = reg;
  return QL_OK;
}

void ql_ref_store_registry_free(struct ql_ref_store_registry *registry) {
  if (!registry) return;
  for (int64_t i = 0; i < registry->count; i++) ql_store_record_unref(registry->records[i]);
  free(registry->records);
  pthread_rwlock_destroy(&registry->lock);
  free(registry);
}

const struct ql_object_store_registry *ql_ref_store_registry_view(struct ql_ref_store_registry *registry) {
  return &registry->view;
}
