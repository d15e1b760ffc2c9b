/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: the files a `path` option names, each allowed by the
 * host's object store before it is opened (ncf.h: ncf_inputs_resolve). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncf.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"

void ncf_inputs_free(struct ncf_input *inputs, int32_t n) {
  for (int32_t i = 0; inputs && i < n; i++) {
    free(inputs[i].label);
    free(inputs[i].mem);
    if (inputs[i].fd >= 0) close(inputs[i].fd);
  }
  free(inputs);
}

static int has_glob(const char *s) { return strpbrk(s, "*?[") != NULL; }

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Store paths of the objects directly inside `dir` whose name matches
 * `pattern` (fnmatch), sorted. `dir` "" is the store's root. */
static int list_matching(const struct ql_object_store *os, const char *dir, const char *pattern, char ***out,
                         int32_t *n, struct ql_error *error) {
  *out = NULL;
  *n = 0;
  if (!os->list) return ql_error_set(error, QL_ENOTSUP, "the store cannot list '%s'", dir);
  struct ql_object_list list;
  memset(&list, 0, sizeof(list));
  QL_RETURN_NOT_OK(os->list(os, dir, &list, error));
  size_t dlen = strlen(dir);
  char **names = calloc((size_t)list.count + 1, sizeof(*names));
  int rc = names ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int64_t i = 0; rc == QL_OK && i < list.count; i++) {
    const char *p = list.items[i].path;
    if (dlen && (strncmp(p, dir, dlen) != 0 || p[dlen] != '/')) continue;
    const char *name = dlen ? p + dlen + 1 : p;
    if (strchr(name, '/') || fnmatch(pattern, name, FNM_PERIOD) != 0) continue;
    if (!(names[*n] = strdup(p))) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
    else (*n)++;
  }
  if (list.release) list.release(&list);
  if (rc != QL_OK) {
    for (int32_t i = 0; i < *n; i++) free(names[i]);
    free(names);
    *n = 0;
    return rc;
  }
  qsort(names, (size_t)*n, sizeof(*names), by_name);
  *out = names;
  return QL_OK;
}

/* The store paths `path` names: a glob in its last component, a file, or
 * a folder's ".nc" files. */
static int expand(const struct ql_object_store *os, const char *spec, const char *path, char ***out, int32_t *n,
                  struct ql_error *error) {
  const char *slash = strrchr(path, '/');
  const char *last = slash ? slash + 1 : path;
  if (has_glob(path)) {
    char *dir = strndup(path, slash ? (size_t)(slash - path) : 0);
    if (!dir) return ql_error_set(error, QL_ENOMEM, "out of memory");
    if (has_glob(dir)) {
      free(dir);
      return ql_error_set(error, QL_EINVAL, "netcdf path %s: a pattern may only be in the last path component", spec);
    }
    int rc = list_matching(os, dir, last, out, n, error);
    free(dir);
    if (rc != QL_OK) return ql_error_prefix(error, "netcdf path %s", spec);
    if (*n == 0) return ql_error_set(error, QL_ENOTFOUND, "netcdf path %s: no file matches", spec);
    return QL_OK;
  }
  struct ql_object_meta meta;
  int rc = os->head(os, path, &meta, error);
  if (rc == QL_ENOTFOUND) {
    struct ql_error folder;
    memset(&folder, 0, sizeof(folder));
    int lrc = list_matching(os, path, "*.nc", out, n, &folder);
    ql_error_release(&folder);
    if (lrc == QL_OK && *n > 0) {
      ql_error_release(error);
      return QL_OK;
    }
    if (lrc == QL_OK) free(*out);
    *out = NULL;
  }
  if (rc != QL_OK) return ql_error_prefix(error, "netcdf file %s", spec);
  *out = calloc(2, sizeof(**out));
  if (!*out || !((*out)[0] = strdup(path))) {
    free(*out);
    *out = NULL;
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  *n = 1;
  return QL_OK;
}

/* A local file the store allowed: opened read-only, a regular file. */
static int open_local(const struct ql_object_store *os, const char *path, struct ncf_input *in,
                      struct ql_error *error) {
  struct ql_object_meta meta;
  QL_RETURN_NOT_OK(os->head(os, path, &meta, error)); /* the host's gate, for this very file */
  int fd = open(in->label, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ql_error_set(error, QL_EIO, "cannot open: %s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ql_error_set(error, QL_ENOTFOUND, "not a regular file");
  }
  in->fd = fd;
  return QL_OK;
}

/* A file of another store, read whole. */
static int read_whole(const struct ql_object_store *os, const char *path, struct ncf_input *in,
                      struct ql_error *error) {
  struct ql_object_meta meta;
  QL_RETURN_NOT_OK(os->head(os, path, &meta, error));
  if (meta.size > NCF_MAX_MEMORY_BYTES) {
    return ql_error_set(error, QL_EOVERFLOW, "%lld bytes: files over %lld bytes are read from local paths only",
                        (long long)meta.size, (long long)NCF_MAX_MEMORY_BYTES);
  }
  struct ql_bytes bytes;
  memset(&bytes, 0, sizeof(bytes));
  QL_RETURN_NOT_OK(os->get_range(os, path, 0, -1, &bytes, error));
  in->mem = malloc(bytes.size ? (size_t)bytes.size : 1);
  if (in->mem && bytes.size) memcpy(in->mem, bytes.data, (size_t)bytes.size);
  in->mem_len = (size_t)bytes.size;
  if (bytes.release) bytes.release(&bytes);
  return in->mem ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
}

static int resolve_in(const struct ql_object_store *os, const char *spec, const char *store_url, const char *path,
                      struct ncf_input **out, int32_t *n, struct ql_error *error) {
  char **paths = NULL;
  int32_t count = 0;
  QL_RETURN_NOT_OK(expand(os, spec, path, &paths, &count, error));
  int local = strcmp(store_url, "file://") == 0;
  struct ncf_input *inputs = calloc((size_t)count, sizeof(*inputs));
  int rc = inputs ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; inputs && i < count; i++) inputs[i].fd = -1;
  for (int32_t i = 0; rc == QL_OK && i < count; i++) {
    struct ncf_input *in = &inputs[i];
    /* local files by their absolute path; others by their URL (the spec itself for one file) */
    size_t len = strlen(store_url) + strlen(paths[i]) + 2;
    in->label = count == 1 && !local ? strdup(spec) : malloc(len);
    if (in->label && (count > 1 || local)) {
      snprintf(in->label, len, "%s/%s", local ? "" : store_url, paths[i]);
    }
    if (!in->label) {
      rc = ql_error_set(error, QL_ENOMEM, "out of memory");
      break;
    }
    rc = local ? open_local(os, paths[i], in, error) : read_whole(os, paths[i], in, error);
    if (rc != QL_OK) ql_error_prefix(error, "netcdf file %s", in->label);
  }
  for (int32_t i = 0; i < count; i++) free(paths[i]);
  free(paths);
  if (rc != QL_OK) {
    ncf_inputs_free(inputs, count);
    return rc;
  }
  *out = inputs;
  *n = count;
  return QL_OK;
}

int ncf_inputs_resolve(const struct ql_object_store_registry *registry, const char *spec, struct ncf_input **out,
                       int32_t *n, struct ql_error *error) {
  *out = NULL;
  *n = 0;
  if (!registry || !registry->get_store) {
    return ql_error_set(error, QL_ENOTSUP, "netcdf file %s: the host offers no object-store registry", spec);
  }
  char *store_url = NULL, *path = NULL;
  int rc = ql_url_split(spec, &store_url, &path, error);
  if (rc != QL_OK) return ql_error_prefix(error, "netcdf file %s", spec);
  struct ql_object_store os;
  memset(&os, 0, sizeof(os));
  rc = registry->get_store(registry, store_url, &os, error);
  if (rc != QL_OK) {
    ql_error_prefix(error, "netcdf file %s", spec);
  } else {
    rc = resolve_in(&os, spec, store_url, path, out, n, error);
    if (os.release) os.release(&os);
  }
  free(store_url);
  free(path);
  return rc;
}
