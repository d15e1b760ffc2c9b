/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/temp_files.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qlink/lib/status.h"
#include "ql_test.h"
#include "runtime_internal.h"

int main(void) {
  struct ql_error error = {0};
  char dir[] = "/tmp/ql_temp_files_XXXXXX";
  QL_CHECK(mkdtemp(dir) != NULL);
  struct ql_temp_files service;
  QL_CHECK_OK(ql_temp_files_init(&service, dir, &error), error);
  QL_CHECK_INT(service.struct_size, sizeof(struct ql_temp_files));

  struct ql_temp_file a, b;
  QL_CHECK_OK(service.create(&service, "sort spill/1", &a, &error), error);
  QL_CHECK_OK(service.create(&service, NULL, &b, &error), error);
  char prefix[128];
  snprintf(prefix, sizeof(prefix), "%s/qlink-sort_spill_1-", dir);
  QL_CHECK(strncmp(a.path, prefix, strlen(prefix)) == 0);
  QL_CHECK_INT(strlen(a.path), strlen(prefix) + 6);
  snprintf(prefix, sizeof(prefix), "%s/qlink-", dir);
  QL_CHECK(strncmp(b.path, prefix, strlen(prefix)) == 0);
  QL_CHECK(strcmp(a.path, b.path) != 0);

  /* The file exists, is empty and writable. */
  struct stat st;
  QL_CHECK_INT(stat(a.path, &st), 0);
  QL_CHECK_INT(st.st_size, 0);
  FILE *f = fopen(a.path, "wb");
  QL_CHECK(f != NULL);
  if (f) {
    fputs("spilled", f);
    fclose(f);
  }
  QL_CHECK_INT(stat(a.path, &st), 0);
  QL_CHECK_INT(st.st_size, 7);

  /* Release deletes it. */
  char path[256];
  snprintf(path, sizeof(path), "%s", a.path);
  a.release(&a);
  QL_CHECK(a.release == NULL && a.path == NULL);
  QL_CHECK_INT(stat(path, &st), -1);
  b.release(&b);
  QL_CHECK_INT(rmdir(dir), 0); /* empty: nothing left behind */

  /* A missing directory gives QL_EIO naming it. */
  struct ql_temp_file c;
  QL_CHECK_INT(service.create(&service, "x", &c, &error), QL_EIO);
  char expected[256];
  snprintf(expected, sizeof(expected), "cannot create a temp file in '%s': No such file or directory", dir);
  QL_CHECK_STR(error.message, expected);
  QL_CHECK(c.release == NULL);
  ql_temp_files_free(&service);

  /* Default directory: $TMPDIR. */
  char dir2[] = "/tmp/ql_temp_env_XXXXXX";
  QL_CHECK(mkdtemp(dir2) != NULL);
  setenv("TMPDIR", dir2, 1);
  QL_CHECK_OK(ql_temp_files_init(&service, NULL, &error), error);
  QL_CHECK_OK(service.create(&service, "t", &c, &error), error);
  QL_CHECK(strncmp(c.path, dir2, strlen(dir2)) == 0);
  c.release(&c);
  ql_temp_files_free(&service);
  QL_CHECK_INT(rmdir(dir2), 0);
  ql_error_release(&error);
  QL_TEST_END();
}
