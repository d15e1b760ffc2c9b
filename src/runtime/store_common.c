/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the object stores: path rules and owned listings. */
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "store_internal.h"

int ql_object_path_check(const char *path, int allow_empty, struct ql_error *error) {
  if (!path) return ql_error_set(error, QL_EINVAL, "object path is NULL");
  if (!path[0]) return allow_empty ? QL_OK : ql_error_set(error, QL_EINVAL, "object path is empty");
  if (path[0] == '/') return ql_error_set(error, QL_EINVAL, "invalid object path '%s': leading '/'", path);
  const char *p = path;
  while (1) {
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0) return ql_error_set(error, QL_EINVAL, "invalid object path '%s': empty segment", path);
    if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
      return ql_error_set(error, QL_EINVAL, "invalid object path '%s': '%.*s' segment", path, (int)len, p);
    }
    if (!end) return QL_OK;
    p = end + 1;
  }
}

int ql_object_path_under(const char *path, const char *prefix) {
  if (!prefix || !prefix[0]) return 1;
  size_t n = strlen(prefix);
  return strncmp(path, prefix, n) == 0 && path[n] == '/';
}

static int ql_object_meta_cmp(const void *a, const void *b) {
  return strcmp(((const struct ql_object_meta *)a)->path, ((const struct ql_object_meta *)b)->path);
}

void ql_object_metas_free(struct ql_object_meta *items, int64_t count) {
  if (!items) return;
  for (int64_t i = 0; i < count; i++) free((void *)items[i].path);
  free(items);
}

static void ql_object_list_release(struct ql_object_list *self) {
  ql_object_metas_free(self->items, self->count);
  self->items = NULL;
  self->count = 0;
  self->release = NULL;
}

void ql_object_list_adopt(struct ql_object_list *out, struct ql_object_meta *items, int64_t count) {
  if (count > 1) qsort(items, (size_t)count, sizeof(*items), ql_object_meta_cmp);
  out->count = count;
  out->items = items;
  out->release = ql_object_list_release;
  out->private_data = NULL;
}
