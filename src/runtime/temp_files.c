/* SPDX-License-Identifier: Apache-2.0 */
/* The reference temp-file service: mkstemp in a directory ($TMPDIR or
 * /tmp by default); a file is unlinked when its handle is released. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/text.h"
#include "qlink/lib/status.h"
#include "runtime_internal.h"

static void ql_temp_file_release(struct ql_temp_file *self) {
  char *path = self->private_data;
  if (path) {
    unlink(path);
    free(path);
  }
  self->path = NULL;
  self->private_data = NULL;
  self->release = NULL;
}

static int ql_temp_files_create(const struct ql_temp_files *self, const char *purpose, struct ql_temp_file *out,
                                struct ql_error *error) {
  const char *dir = self->private_data;
  memset(out, 0, sizeof(*out));
  /* The purpose becomes part of the name, reduced to safe characters. */
  char tag[33];
  size_t n = 0;
  for (const char *p = purpose ? purpose : ""; *p && n < sizeof(tag) - 1; p++) {
    char c = *p;
    int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    tag[n++] = safe ? c : '_';
  }
  tag[n] = '\0';
  size_t size = strlen(dir) + strlen(tag) + 32;
  char *path = malloc(size);
  if (!path) return ql_error_set(error, QL_ENOMEM, "out of memory creating a temp file");
  snprintf(path, size, "%s/qlink-%s%sXXXXXX", dir, tag, n ? "-" : "");
  int fd = mkstemp(path);
  if (fd < 0) {
    int rc = ql_error_set(error, QL_EIO, "cannot create a temp file in '%s': %s", dir, strerror(errno));
    free(path);
    return rc;
  }
  close(fd);
  out->path = path;
  out->release = ql_temp_file_release;
  out->private_data = path;
  return QL_OK;
}

int ql_temp_files_init(struct ql_temp_files *out, const char *dir, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!dir || !dir[0]) dir = getenv("TMPDIR");
  if (!dir || !dir[0]) dir = "/tmp";
  char *copy = ql_strdup(dir);
  if (!copy) return ql_error_set(error, QL_ENOMEM, "out of memory creating the temp-file service");
  out->struct_size = (uint32_t)sizeof(*out);
  out->create = ql_temp_files_create;
  out->private_data = copy;
  return QL_OK;
}

void ql_temp_files_free(struct ql_temp_files *service) {
  if (!service) return;
  free(service->private_data);
  service->private_data = NULL;
  service->create = NULL;
}
