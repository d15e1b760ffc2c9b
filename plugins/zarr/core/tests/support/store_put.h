/* SPDX-License-Identifier: Apache-2.0 */
/* Test helpers: write objects into the reference host's in-memory store
 * (ql_memory_store_put), failing the test on error. For the zarr C tests that
 * build small stores byte by byte. */
#ifndef QLINK_ZARR_STORE_PUT_H
#define QLINK_ZARR_STORE_PUT_H

#include <string.h>

#include "ql_test.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"

/* Store `n` bytes of `data` at `path` (copied). */
static inline void put(const struct ql_object_store *s, const char *path, const void *data, size_t n) {
  struct ql_error err = {0};
  QL_CHECK_OK(ql_memory_store_put(s, path, data, (int64_t)n, &err), err);
  ql_error_release(&err);
}

/* Store the NUL-terminated `text` (without its NUL) at `path`. */
static inline void put_text(const struct ql_object_store *s, const char *path, const char *text) {
  put(s, path, text, strlen(text));
}

#endif
