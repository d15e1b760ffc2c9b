/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: object-store access: reads, listings and closing a store
 * (store_open.c opens one). See store.h. */
#include "qlink_zarr/store.h"

#include <stdlib.h>
#include <string.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"

void zr_store_close(struct zr_store *store) {
  if (store->os.release) store->os.release(&store->os);
  free(store->url);
  free(store->root);
  memset(store, 0, sizeof(*store));
}

static int full_path(const struct zr_store *store, const char *key, char **out, struct ql_error *error) {
  if (!store->root || !store->root[0]) {
    /* Joining onto "" still validates the key. */
    int rc = ql_path_join("", key, out, error);
    if (rc == QL_OK && (*out)[0] == '/') memmove(*out, *out + 1, strlen(*out));
    return rc;
  }
  return ql_path_join(store->root, key, out, error);
}

/* The object-store path of `key`, or an error naming store and key. */
static int key_path(const struct zr_store *store, const char *key, char **path, struct ql_error *error) {
  int rc = full_path(store, key, path, error);
  if (rc != QL_OK) return ql_error_prefix(error, "zarr store %s: key '%s' lies outside the store", store->url, key);
  return QL_OK;
}

/* A store's answer about `key`, with the store and key in its message. */
static int named(const struct zr_store *store, const char *key, int rc, struct ql_error *error) {
  if (rc == QL_ENOTFOUND) return ql_error_set(error, QL_ENOTFOUND, "zarr store %s: no object '%s'", store->url, key);
  if (rc != QL_OK) return ql_error_prefix(error, "zarr store %s: reading '%s'", store->url, key);
  return QL_OK;
}

int zr_store_get(const struct zr_store *store, const char *key, struct ql_bytes *out, struct ql_error *error) {
  char *path = NULL;
  QL_RETURN_NOT_OK(key_path(store, key, &path, error));
  int rc = store->os.get_range(&store->os, path, 0, -1, out, error);
  free(path);
  return named(store, key, rc, error);
}

void zr_readbuf_free(struct zr_readbuf *buf) {
  free(buf->data);
  buf->data = NULL;
  buf->cap = 0;
}

/* A store whose struct_size stops before read_into (smaller than the 0.1
 * struct) has none: a reader never looks past struct_size. */
static int store_has_read_into(const struct zr_store *store) {
  return QL_HAS_MEMBER(&store->os, struct ql_object_store, read_into) && store->os.read_into != NULL;
}

/* Make buf hold at least `want` bytes, keeping its first `keep`. */
static int readbuf_reserve(struct zr_readbuf *buf, int64_t want, int64_t keep) {
  if (buf->cap >= want) return QL_OK;
  uint8_t *grown = malloc((size_t)want);
  if (!grown) return QL_ENOMEM;
  if (keep > 0) memcpy(grown, buf->data, (size_t)keep);
  free(buf->data);
  buf->data = grown;
  buf->cap = want;
  return QL_OK;
}

/* The whole object at `path` into buf: one read of buf's capacity, which
 * is enough unless it came back full; then `head` says how much is left. */
static int read_whole(const struct zr_store *store, const char *path, struct zr_readbuf *buf, int64_t size_hint,
                      int64_t *out_len, struct ql_error *error) {
  const struct ql_object_store *os = &store->os;
  int64_t first = size_hint > 65536 ? size_hint : 65536;
  if (readbuf_reserve(buf, first, 0) != QL_OK) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int64_t got = 0;
  QL_RETURN_NOT_OK(os->read_into(os, path, 0, buf->cap, buf->data, &got, error));
  if (got < buf->cap) {
    *out_len = got;
    return QL_OK;
  }
  struct ql_object_meta meta;
  QL_RETURN_NOT_OK(os->head(os, path, &meta, error));
  if (meta.size > got) {
    /* Room to spare, so the next object of this size is read in one call. */
    int64_t want = meta.size + meta.size / 8 + 1;
    if (readbuf_reserve(buf, want, got) != QL_OK) return ql_error_set(error, QL_ENOMEM, "out of memory");
    int64_t more = 0;
    QL_RETURN_NOT_OK(os->read_into(os, path, got, meta.size - got, buf->data + got, &more, error));
    got += more;
  }
  *out_len = got;
  return QL_OK;
}

int zr_store_read(const struct zr_store *store, const char *key, struct zr_readbuf *buf, int64_t size_hint,
                  struct ql_bytes *out, struct ql_error *error) {
  if (!buf || !store_has_read_into(store)) return zr_store_get(store, key, out, error);
  memset(out, 0, sizeof(*out));
  char *path = NULL;
  QL_RETURN_NOT_OK(key_path(store, key, &path, error));
  int64_t got = 0;
  int rc = read_whole(store, path, buf, size_hint, &got, error);
  free(path);
  QL_RETURN_NOT_OK(named(store, key, rc, error));
  out->data = buf->data;
  out->size = got;
  return QL_OK;
}

int zr_store_size(const struct zr_store *store, const char *key, int64_t *size, struct ql_error *error) {
  char *path = NULL;
  QL_RETURN_NOT_OK(key_path(store, key, &path, error));
  struct ql_object_meta meta;
  memset(&meta, 0, sizeof(meta));
  int rc = store->os.head(&store->os, path, &meta, error);
  free(path);
  *size = meta.size;
  return named(store, key, rc, error);
}

int zr_store_read_range(const struct zr_store *store, const char *key, int64_t offset, int64_t length,
                        struct zr_readbuf *buf, struct ql_bytes *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  char *path = NULL;
  QL_RETURN_NOT_OK(key_path(store, key, &path, error));
  int rc;
  if (buf && store_has_read_into(store)) {
    rc = readbuf_reserve(buf, length > 0 ? length : 1, 0) == QL_OK ? QL_OK
                                                                    : ql_error_set(error, QL_ENOMEM, "out of memory");
    int64_t got = 0;
    if (rc == QL_OK) rc = store->os.read_into(&store->os, path, offset, length, buf->data, &got, error);
    out->data = buf->data;
    out->size = rc == QL_OK ? got : 0;
  } else {
    rc = length == 0 ? QL_OK : store->os.get_range(&store->os, path, offset, length, out, error);
  }
  free(path);
  return named(store, key, rc, error);
}

void zr_store_list_free(char **keys, int64_t n) {
  if (!keys) return;
  for (int64_t i = 0; i < n; i++) free(keys[i]);
  free(keys);
}

int zr_store_list(const struct zr_store *store, char ***out, int64_t *n, struct ql_error *error) {
  *out = NULL;
  *n = 0;
  struct ql_object_list list;
  memset(&list, 0, sizeof(list));
  int rc = store->os.list(&store->os, store->root ? store->root : "", &list, error);
  /* Only a store without consolidated metadata is listed; web servers and
   * some object stores cannot list, so say what avoids it. */
  if (rc != QL_OK) {
    return ql_error_prefix(error,
                           "zarr store %s has no consolidated metadata, so its arrays must be listed "
                           "(zarr.consolidate_metadata or xarray's to_zarr(consolidated=True) avoids that); listing",
                           store->url);
  }
  size_t rl = store->root ? strlen(store->root) : 0;
  char **keys = calloc((size_t)list.count + 1, sizeof(char *));
  if (!keys) {
    if (list.release) list.release(&list);
    return ql_error_set(error, QL_ENOMEM, "out of memory listing %s", store->url);
  }
  int64_t k = 0;
  for (int64_t i = 0; i < list.count; i++) {
    const char *p = list.items[i].path;
    if (!p) continue;
    if (rl) {
      if (strncmp(p, store->root, rl) != 0 || p[rl] != '/') continue;
      p += rl + 1;
    }
    keys[k] = strdup(p);
    if (!keys[k]) {
      zr_store_list_free(keys, k);
      if (list.release) list.release(&list);
      return ql_error_set(error, QL_ENOMEM, "out of memory listing %s", store->url);
    }
    k++;
  }
  if (list.release) list.release(&list);
  *out = keys;
  *n = k;
  return QL_OK;
}
