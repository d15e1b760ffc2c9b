/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: a kerchunk reference set served as an object store, each
 * target read through the host's registry. See refs.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "refs.h"

struct refs_store {
  char *url; /* the reference file, for messages */
  struct zr_refs refs;
  struct ql_object_store *stores; /* one per refs.stores; release NULL when get_store failed */
  struct ql_error *store_errors;  /* why get_store failed, per store */
};

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  if (n < k) return 0;
  for (size_t i = 0; i < k; i++) {
    if (tolower((unsigned char)s[n - k + i]) != suffix[i]) return 0;
  }
  return 1;
}

int zr_refs_detect(const char *url) {
  size_t n = url ? strlen(url) : 0;
  while (n > 0 && url[n - 1] == '/') n--;
  if (ends_with(url, n, ".json")) return 1;
  if (ends_with(url, n, ".parq") || ends_with(url, n, ".parquet")) return 2;
  return 0;
}

/* ------------------------------------------------------------- reading */

static void free_bytes(struct ql_bytes *b) {
  free(b->private_data);
  memset(b, 0, sizeof(*b));
}

static int find(const struct refs_store *rs, const char *path, const struct zr_ref **out, struct ql_error *error) {
  *out = zr_refs_find(&rs->refs, path ? path : "");
  if (*out) return QL_OK;
  return ql_error_set(error, QL_ENOTFOUND, "kerchunk references %s: no key '%s'", rs->url, path ? path : "");
}

/* The store serving ref's target, or the error get_store gave for it
 * (QL_EIO for "no store serves it": QL_ENOTFOUND would read as a chunk
 * never written). */
static int target_store(const struct refs_store *rs, const struct zr_ref *r, const struct ql_object_store **os,
                        struct ql_error *error) {
  const struct zr_ref_target *t = &rs->refs.targets[r->target];
  *os = &rs->stores[t->store];
  if ((*os)->release) return QL_OK;
  const struct ql_error *why = &rs->store_errors[t->store];
  int status = why->status && why->status != QL_ENOTFOUND ? why->status : QL_EIO;
  return ql_error_set(error, status, "kerchunk references %s: key '%s' -> '%s': %s",
                      rs->url, r->key, t->url, ql_error_message(why));
}

/* A target's failure, naming the key, the target and the bytes asked; a
 * missing target is QL_EIO, not QL_ENOTFOUND (which would read as a chunk
 * never written, the fill value). */
static int target_error(const struct refs_store *rs, const struct zr_ref *r, int64_t offset, int64_t length, int rc,
                        struct ql_error *error) {
  const struct zr_ref_target *t = &rs->refs.targets[r->target];
  if (rc == QL_ENOTFOUND) {
    return ql_error_set(error, QL_EIO, "kerchunk references %s: key '%s' -> '%s': the target does not exist", rs->url,
                        r->key, t->url);
  }
  if (length < 0) return ql_error_prefix(error, "kerchunk references %s: key '%s' -> '%s'", rs->url, r->key, t->url);
  return ql_error_prefix(error, "kerchunk references %s: key '%s' -> '%s' bytes %lld..%lld", rs->url, r->key, t->url,
                         (long long)offset, (long long)(offset + length));
}

static int short_read(const struct refs_store *rs, const struct zr_ref *r, int64_t offset, int64_t want, int64_t got,
                      struct ql_error *error) {
  return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s' -> '%s' bytes %lld..%lld: the target ends "
                      "first (short read: %lld of %lld bytes)", rs->url, r->key, rs->refs.targets[r->target].url,
                      (long long)offset, (long long)(offset + want), (long long)got, (long long)want);
}

/* Clip a read of (offset, length) to an object of `size` bytes: the bytes
 * to read, or -1 when offset lies past the end. */
static int64_t clip(int64_t size, int64_t offset, int64_t length) {
  if (offset < 0 || offset > size) return -1;
  return length < 0 || length > size - offset ? size - offset : length;
}

static int beyond(const struct refs_store *rs, const struct zr_ref *r, int64_t offset, struct ql_error *error) {
  return ql_error_set(error, QL_EINVAL, "kerchunk references %s: key '%s': offset %lld lies past its %lld bytes",
                      rs->url, r->key, (long long)offset, (long long)r->size);
}

static int refs_head(const struct ql_object_store *self, const char *path, struct ql_object_meta *out,
                     struct ql_error *error) {
  const struct refs_store *rs = self->private_data;
  const struct zr_ref *r;
  memset(out, 0, sizeof(*out));
  out->path = path;
  QL_RETURN_NOT_OK(find(rs, path, &r, error));
  if (r->kind != ZR_REF_WHOLE) {
    out->size = r->size;
    return QL_OK;
  }
  const struct ql_object_store *os;
  QL_RETURN_NOT_OK(target_store(rs, r, &os, error));
  int rc = os->head(os, rs->refs.targets[r->target].path, out, error);
  out->path = path;
  return rc == QL_OK ? QL_OK : target_error(rs, r, 0, -1, rc, error);
}

static int refs_get_range(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                          struct ql_bytes *out, struct ql_error *error) {
  const struct refs_store *rs = self->private_data;
  const struct zr_ref *r;
  memset(out, 0, sizeof(*out));
  QL_RETURN_NOT_OK(find(rs, path, &r, error));
  if (r->kind == ZR_REF_INLINE) {
    int64_t n = clip(r->size, offset, length);
    if (n < 0) return beyond(rs, r, offset, error);
    uint8_t *copy = malloc((size_t)(n ? n : 1));
    if (!copy) return ql_error_set(error, QL_ENOMEM, "out of memory");
    if (n) memcpy(copy, r->data + offset, (size_t)n);
    out->data = copy;
    out->size = n;
    out->private_data = copy;
    out->release = free_bytes;
    return QL_OK;
  }
  const struct ql_object_store *os;
  QL_RETURN_NOT_OK(target_store(rs, r, &os, error));
  const char *tpath = rs->refs.targets[r->target].path;
  if (r->kind == ZR_REF_WHOLE) {
    int rc = os->get_range(os, tpath, offset, length, out, error);
    return rc == QL_OK ? QL_OK : target_error(rs, r, offset, length, rc, error);
  }
  int64_t n = clip(r->size, offset, length);
  if (n < 0) return beyond(rs, r, offset, error);
  if (n == 0) return QL_OK;
  int rc = os->get_range(os, tpath, r->offset + offset, n, out, error);
  if (rc != QL_OK) return target_error(rs, r, r->offset + offset, n, rc, error);
  if (out->size != n) {
    int64_t got = out->size;
    if (out->release) out->release(out);
    memset(out, 0, sizeof(*out));
    return short_read(rs, r, r->offset + offset, n, got, error);
  }
  return QL_OK;
}

/* read_into of a target store, or get_range and a copy where it has none. */
static int target_read_into(const struct ql_object_store *os, const char *path, int64_t offset, int64_t length,
                            uint8_t *dst, int64_t *got, struct ql_error *error) {
  if (QL_HAS_MEMBER(os, struct ql_object_store, read_into) && os->read_into) {
    return os->read_into(os, path, offset, length, dst, got, error);
  }
  struct ql_bytes b;
  memset(&b, 0, sizeof(b));
  QL_RETURN_NOT_OK(os->get_range(os, path, offset, length, &b, error));
  *got = b.size < length ? b.size : length;
  if (*got > 0) memcpy(dst, b.data, (size_t)*got);
  if (b.release) b.release(&b);
  return QL_OK;
}

static int refs_read_into(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                          uint8_t *dst, int64_t *out_len, struct ql_error *error) {
  const struct refs_store *rs = self->private_data;
  const struct zr_ref *r;
  *out_len = 0;
  if (length < 0 || (length > 0 && !dst)) {
    return ql_error_set(error, QL_EINVAL, "kerchunk references %s: read_into of '%s' with a bad length or buffer",
                        rs->url, path ? path : "");
  }
  QL_RETURN_NOT_OK(find(rs, path, &r, error));
  if (r->kind == ZR_REF_INLINE) {
    int64_t n = clip(r->size, offset, length);
    if (n < 0) return beyond(rs, r, offset, error);
    if (n) memcpy(dst, r->data + offset, (size_t)n);
    *out_len = n;
    return QL_OK;
  }
  const struct ql_object_store *os;
  QL_RETURN_NOT_OK(target_store(rs, r, &os, error));
  const char *tpath = rs->refs.targets[r->target].path;
  if (r->kind == ZR_REF_WHOLE) {
    int rc = target_read_into(os, tpath, offset, length, dst, out_len, error);
    return rc == QL_OK ? QL_OK : target_error(rs, r, offset, length, rc, error);
  }
  int64_t n = clip(r->size, offset, length);
  if (n < 0) return beyond(rs, r, offset, error);
  if (n == 0) return QL_OK;
  int64_t got = 0;
  int rc = target_read_into(os, tpath, r->offset + offset, n, dst, &got, error);
  if (rc != QL_OK) return target_error(rs, r, r->offset + offset, n, rc, error);
  if (got != n) return short_read(rs, r, r->offset + offset, n, got, error);
  *out_len = n;
  return QL_OK;
}

static void list_release(struct ql_object_list *list) {
  for (int64_t i = 0; i < list->count; i++) free((char *)list->items[i].path);
  free(list->items);
  memset(list, 0, sizeof(*list));
}

static int refs_list(const struct ql_object_store *self, const char *prefix, struct ql_object_list *out,
                     struct ql_error *error) {
  const struct refs_store *rs = self->private_data;
  memset(out, 0, sizeof(*out));
  size_t pl = prefix ? strlen(prefix) : 0;
  out->items = calloc((size_t)rs->refs.n_refs + 1, sizeof(*out->items));
  if (!out->items) return ql_error_set(error, QL_ENOMEM, "out of memory");
  out->release = list_release;
  for (int64_t i = 0; i < rs->refs.n_refs; i++) {
    const struct zr_ref *r = &rs->refs.refs[i];
    if (pl && (strncmp(r->key, prefix, pl) != 0 || r->key[pl] != '/')) continue;
    char *p = strdup(r->key);
    if (!p) {
      list_release(out);
      return ql_error_set(error, QL_ENOMEM, "out of memory");
    }
    out->items[out->count].path = p;
    out->items[out->count].size = r->kind == ZR_REF_WHOLE ? 0 : r->size; /* a whole file's size: head */
    out->count++;
  }
  return QL_OK;
}

static void refs_release(struct ql_object_store *self) {
  struct refs_store *rs = self->private_data;
  if (rs) {
    for (int32_t i = 0; rs->stores && i < rs->refs.n_stores; i++) {
      if (rs->stores[i].release) rs->stores[i].release(&rs->stores[i]);
      ql_error_release(&rs->store_errors[i]);
    }
    free(rs->stores);
    free(rs->store_errors);
    zr_refs_free(&rs->refs);
    free(rs->url);
    free(rs);
  }
  self->release = NULL;
  self->private_data = NULL;
}

/* ------------------------------------------------------------- opening */

/* The reference file's bytes, read through the store serving `url`. */
static int read_file(const struct ql_object_store_registry *registry, const char *url, struct ql_bytes *out,
                     struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  char *store_url = NULL, *path = NULL;
  QL_RETURN_NOT_OK(ql_url_split(url, &store_url, &path, error));
  struct ql_object_store os;
  memset(&os, 0, sizeof(os));
  /* the store URL, as zr_store_open asks: hosts take URLs, not local paths */
  int rc = registry->get_store(registry, store_url, &os, error);
  free(store_url);
  struct ql_object_meta meta;
  memset(&meta, 0, sizeof(meta));
  if (rc == QL_OK) rc = os.head(&os, path, &meta, error);
  if (rc == QL_OK && meta.size > ZR_REFS_MAX_FILE) {
    rc = ql_error_set(error, QL_EOVERFLOW, "kerchunk references %s: the file holds %lld bytes, more than the %lld "
                      "read", url, (long long)meta.size, (long long)ZR_REFS_MAX_FILE);
  } else if (rc == QL_OK) {
    rc = os.get_range(&os, path, 0, -1, out, error);
  }
  if (rc == QL_ENOTFOUND) {
    ql_error_release(error);
    rc = ql_error_set(error, QL_ENOTFOUND, "kerchunk references %s: the file does not exist", url);
  } else if (rc != QL_OK && rc != QL_EOVERFLOW) {
    ql_error_prefix(error, "kerchunk references %s", url);
  }
  if (os.release) os.release(&os);
  free(path);
  return rc;
}

static int has_group(const struct zr_refs *refs) {
  return zr_refs_find(refs, ".zgroup") || zr_refs_find(refs, ".zmetadata") || zr_refs_find(refs, "zarr.json");
}

/* One get_store per store the targets name; a failure is kept for the
 * reads that need that store. */
static int open_stores(const struct ql_object_store_registry *registry, struct refs_store *rs,
                       struct ql_error *error) {
  int32_t n = rs->refs.n_stores;
  rs->stores = calloc((size_t)n + 1, sizeof(*rs->stores));
  rs->store_errors = calloc((size_t)n + 1, sizeof(*rs->store_errors));
  if (!rs->stores || !rs->store_errors) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    const char *root = rs->refs.stores[i];
    struct ql_error *why = &rs->store_errors[i];
    why->struct_size = sizeof(*why);
    int rc = registry->get_store(registry, root, &rs->stores[i], why);
    if (rc != QL_OK) {
      memset(&rs->stores[i], 0, sizeof(rs->stores[i]));
      if (!why->message) ql_error_set(why, rc, "no object store serves %s", root);
      why->status = rc;
    }
  }
  return QL_OK;
}

int zr_refs_store_open(const struct ql_object_store_registry *registry, const char *url, struct zr_store *out,
                       struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (zr_refs_detect(url) == 2) {
    return ql_error_set(error, QL_ENOTSUP, "kerchunk references %s: Parquet references are not supported (no "
                        "Parquet reader is linked): write the references as JSON (kerchunk's translate() output)",
                        url);
  }
  if (!registry || !registry->get_store) {
    return ql_error_set(error, QL_ENOTSUP, "kerchunk references %s: the host offers no object-store registry", url);
  }
  struct refs_store *rs = calloc(1, sizeof(*rs));
  if (!rs || !(rs->url = strdup(url))) {
    free(rs);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  out->os.struct_size = sizeof(out->os);
  out->os.head = refs_head;
  out->os.get_range = refs_get_range;
  out->os.read_into = refs_read_into;
  out->os.list = refs_list;
  out->os.release = refs_release;
  out->os.private_data = rs;
  struct ql_bytes text;
  int rc = read_file(registry, url, &text, error);
  if (rc == QL_OK) {
    rc = zr_refs_parse((const char *)text.data, (size_t)text.size, url, &rs->refs, error);
    if (text.release) text.release(&text);
  }
  if (rc == QL_OK && !has_group(&rs->refs)) {
    rc = ql_error_set(error, QL_EDATA, "kerchunk references %s: no Zarr group (no key .zgroup, .zmetadata or "
                      "zarr.json)", url);
  }
  if (rc == QL_OK) rc = open_stores(registry, rs, error);
  if (rc == QL_OK && (!(out->url = strdup(url)) || !(out->root = strdup("")))) {
    rc = ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  if (rc != QL_OK) zr_store_close(out);
  return rc;
}
