/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: opening a store (store.h): a kerchunk reference file as the
 * virtual store refs_store.c makes, anything else through the host's
 * object-store registry. Above both store.c and refs_store.c. */
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/store.h"
#include "refs.h"

int zr_store_open(const struct ql_object_store_registry *registry, const char *url, struct zr_store *out,
                  struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!registry || !registry->get_store) {
    return ql_error_set(error, QL_ENOTSUP, "zarr store %s: the host offers no object-store registry", url);
  }
  /* a kerchunk reference file: a virtual store over its targets (refs.h) */
  if (zr_refs_detect(url)) return zr_refs_store_open(registry, url, out, error);
  char *store_url = NULL, *path = NULL;
  int rc = ql_url_split(url, &store_url, &path, error);
  if (rc != QL_OK) return ql_error_prefix(error, "zarr store %s", url);
  rc = registry->get_store(registry, store_url, &out->os, error);
  if (rc != QL_OK) {
    ql_error_prefix(error, "zarr store %s", url);
    free(store_url);
    free(path);
    memset(out, 0, sizeof(*out));
    return rc;
  }
  free(store_url);
  out->root = path;
  out->url = strdup(url);
  if (!out->url) {
    zr_store_close(out);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  return QL_OK;
}
