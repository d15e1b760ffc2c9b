/* SPDX-License-Identifier: Apache-2.0 */
/* Test helper: an object store forwarding to an in-memory store (`inner`,
 * filled with store_put.h), with read_into built on its get_range, counting
 * its calls and the bytes they returned. For the zarr ctests that check
 * which requests a scan makes. */
#ifndef QLINK_ZARR_CTEST_COUNTING_STORE_H
#define QLINK_ZARR_CTEST_COUNTING_STORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"

/* A store forwarding to a memory store, with read_into built on its
 * get_range, counting the calls. */
struct counting {
  struct ql_object_store inner;
  atomic_long reads_into, heads, get_ranges;
  atomic_llong bytes; /* returned by read_into and get_range */
};

static inline int c_head(const struct ql_object_store *self, const char *path, struct ql_object_meta *out,
                  struct ql_error *error) {
  struct counting *c = self->private_data;
  atomic_fetch_add(&c->heads, 1);
  return c->inner.head(&c->inner, path, out, error);
}

static inline int c_get_range(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                       struct ql_bytes *out, struct ql_error *error) {
  struct counting *c = self->private_data;
  atomic_fetch_add(&c->get_ranges, 1);
  int rc = c->inner.get_range(&c->inner, path, offset, length, out, error);
  if (rc == QL_OK) atomic_fetch_add(&c->bytes, out->size);
  return rc;
}

static inline int c_read_into(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                       uint8_t *dst, int64_t *out_len, struct ql_error *error) {
  struct counting *c = self->private_data;
  atomic_fetch_add(&c->reads_into, 1);
  *out_len = 0;
  if (length < 0) return ql_error_set(error, QL_EINVAL, "read_into: negative length");
  struct ql_bytes b;
  QL_RETURN_NOT_OK(c->inner.get_range(&c->inner, path, offset, length, &b, error));
  if (b.size > length) {
    b.release(&b);
    return ql_error_set(error, QL_EINTERNAL, "get_range returned more than asked");
  }
  if (b.size) memcpy(dst, b.data, (size_t)b.size);
  *out_len = b.size;
  atomic_fetch_add(&c->bytes, b.size);
  b.release(&b);
  return QL_OK;
}

static inline int c_list(const struct ql_object_store *self, const char *prefix, struct ql_object_list *out,
                  struct ql_error *error) {
  struct counting *c = self->private_data;
  return c->inner.list(&c->inner, prefix, out, error);
}

static inline void c_release(struct ql_object_store *self) {
  struct counting *c = self->private_data;
  c->inner.release(&c->inner);
  free(c);
  self->release = NULL;
}

/* `mode`: 0 read_into offered; 1 member present but NULL; 2 a struct_size
 * that stops before the member (smaller than the 0.1 struct). */
static inline struct counting *counting_new(struct ql_object_store *out, int mode) {
  struct ql_error err = {0};
  struct counting *c = calloc(1, sizeof(*c));
  QL_CHECK(c != NULL);
  QL_CHECK_OK(ql_memory_store_new(&c->inner, &err), err);
  memset(out, 0, sizeof(*out));
  out->struct_size = mode == 2 ? (uint32_t)offsetof(struct ql_object_store, read_into) : (uint32_t)sizeof(*out);
  out->head = c_head;
  out->get_range = c_get_range;
  out->list = c_list;
  out->release = c_release;
  out->private_data = c;
  /* mode 2 sets it anyway: a reader must not look past struct_size */
  out->read_into = mode == 1 ? NULL : c_read_into;
  return c;
}

#endif
