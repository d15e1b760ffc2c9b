/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: reading a Zarr store through the host's object-store registry.
 *
 * Every byte the plugin reads goes through a `struct ql_object_store` the
 * session's registry handed out (qlink/services.h), so a local path and any
 * store the host registered (memory://, s3://...) work alike.
 *
 * Thread-safety: a zr_store is immutable after zr_store_open; reads may run
 * from any thread (object stores are thread-safe by contract).
 */
#ifndef QLINK_ZARR_STORE_H
#define QLINK_ZARR_STORE_H

#include <stdint.h>

#include "qlink/services.h"
#include "qlink/types.h"

struct zr_store {
  struct ql_object_store os; /* owned; released by zr_store_close */
  char *url;                 /* the store's location as the user gave it (for messages) */
  char *root;                /* path of the Zarr root inside the object store ("" possible) */
};

/* Find the object store for `url` (a local path or a URL such as
 * file:///data/x.zarr or memory:///x.zarr) in `registry`. QL_ENOTFOUND when
 * no store serves the URL; QL_EINVAL for a malformed URL. */
int zr_store_open(const struct ql_object_store_registry *registry, const char *url, struct zr_store *out,
                  struct ql_error *error);
void zr_store_close(struct zr_store *store);

/* Read the object `key` (relative to the Zarr root, e.g. "t2m/.zarray")
 * whole into `out` (owned by the caller). QL_ENOTFOUND if absent; QL_EINVAL
 * for a key that escapes the root ("../x"). Messages name the store and key. */
int zr_store_get(const struct zr_store *store, const char *key, struct ql_bytes *out, struct ql_error *error);

/* A grow-only buffer that whole-object reads reuse (its owner frees data):
 * a scan reads chunk after chunk into one buffer instead of receiving a
 * freshly allocated (and page-faulted) one per chunk from the host. */
struct zr_readbuf {
  uint8_t *data;
  int64_t cap;
};
void zr_readbuf_free(struct zr_readbuf *buf);

/* zr_store_get into `buf`: where the store offers read_into
 * (qlink/services.h), the object is read into buf (grown when it is too
 * small, to at least `size_hint` bytes on first use: the size the caller
 * expects, e.g. a chunk's decoded bytes) and `out` views buf's bytes
 * (out->release NULL: nothing to release; valid until buf's next read or
 * free). Otherwise, or with buf NULL, exactly zr_store_get. Same errors. */
int zr_store_read(const struct zr_store *store, const char *key, struct zr_readbuf *buf, int64_t size_hint,
                  struct ql_bytes *out, struct ql_error *error);

/* The size in bytes of object `key` (the store's `head`): QL_ENOTFOUND if
 * absent (message naming store and key). */
int zr_store_size(const struct zr_store *store, const char *key, int64_t *size, struct ql_error *error);

/* Read `length` (>= 0) bytes at `offset` of object `key`: with read_into
 * into `buf` (grown to `length`; `out` views it, out->release NULL), else
 * get_range (`out` owned by the caller). out->size is less than `length`
 * only when the object ends first. Same errors as zr_store_get. */
int zr_store_read_range(const struct zr_store *store, const char *key, int64_t offset, int64_t length,
                        struct zr_readbuf *buf, struct ql_bytes *out, struct ql_error *error);

/* Keys (relative to the root) of every object under the root; `*out` is a
 * malloc'd array of malloc'd strings, `*n` entries. */
int zr_store_list(const struct zr_store *store, char ***out, int64_t *n, struct ql_error *error);
void zr_store_list_free(char **keys, int64_t n);

#endif /* QLINK_ZARR_STORE_H */
