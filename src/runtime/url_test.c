/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/url.c: a table of URL splits and path joins. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

struct split_case {
  const char *url;
  int status;
  const char *store; /* expected outputs when status == QL_OK */
  const char *path;
};

static const struct split_case split_cases[] = {
    {"file:///data/x.zarr", QL_OK, "file://", "data/x.zarr"},
    {"file:///data/x.zarr/", QL_OK, "file://", "data/x.zarr"},
    {"file://localhost/data/x", QL_OK, "file://", "data/x"},
    {"FILE:///a", QL_OK, "file://", "a"},
    {"file:///", QL_OK, "file://", ""},
    {"file:///a/./b/../c", QL_OK, "file://", "a/c"},
    {"file:///a%20b/c%2Ed", QL_OK, "file://", "a b/c.d"},
    {"s3://bucket/a/b", QL_OK, "s3://bucket", "a/b"},
    {"s3://bucket", QL_OK, "s3://bucket", ""},
    {"s3://bucket/", QL_OK, "s3://bucket", ""},
    {"gs://b/k//x", QL_OK, "gs://b", "k/x"},
    {"memory:///t/x", QL_OK, "memory://", "t/x"},
    {"memory://", QL_OK, "memory://", ""},
    {"/data/x.zarr", QL_OK, "file://", "data/x.zarr"},
    {"/data/x.zarr/", QL_OK, "file://", "data/x.zarr"},
    {"//data///x", QL_OK, "file://", "data/x"},
    {"/a/b/../../c", QL_OK, "file://", "c"},
    {"/", QL_OK, "file://", ""},
    {"/a:b/c", QL_OK, "file://", "a:b/c"},
    {"/../x", QL_EINVAL, NULL, NULL},
    {"file:///a/../../x", QL_EINVAL, NULL, NULL},
    {"file://otherhost/x", QL_EINVAL, NULL, NULL},
    {"file:///a%2", QL_EINVAL, NULL, NULL},
    {"file:///a%zz", QL_EINVAL, NULL, NULL},
    {"file:///a%00b", QL_EINVAL, NULL, NULL},
    {"", QL_EINVAL, NULL, NULL},
};

static void test_split_table(void) {
  for (size_t i = 0; i < sizeof(split_cases) / sizeof(split_cases[0]); i++) {
    const struct split_case *c = &split_cases[i];
    struct ql_error error = {0};
    char *store = (char *)1, *path = (char *)1;
    int rc = ql_url_split(c->url, &store, &path, &error);
    if (rc != c->status) fprintf(stderr, "case '%s': %s\n", c->url, ql_error_message(&error));
    QL_CHECK_INT(rc, c->status);
    if (c->status == QL_OK && rc == QL_OK) {
      QL_CHECK_STR(store, c->store);
      QL_CHECK_STR(path, c->path);
    } else {
      QL_CHECK(store == NULL && path == NULL);
      QL_CHECK(error.release != NULL);
    }
    free(store);
    free(path);
    ql_error_release(&error);
  }
  struct ql_error error = {0};
  char *store, *path;
  QL_CHECK_INT(ql_url_split("/../x", &store, &path, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "path '/../x' climbs above its root with '..'");
  QL_CHECK_INT(ql_url_split("file://otherhost/x", &store, &path, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "file URL 'file://otherhost/x' names host 'otherhost'; only local files are supported");
  ql_error_release(&error);
}

static void test_split_relative(void) {
  char cwd[4096];
  QL_CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
  char expected[4200];
  snprintf(expected, sizeof(expected), "%s/rel/x", cwd + 1);
  if (strcmp(cwd, "/") == 0) snprintf(expected, sizeof(expected), "rel/x");
  struct ql_error error = {0};
  char *store = NULL, *path = NULL;
  QL_CHECK_OK(ql_url_split("rel/x", &store, &path, &error), error);
  QL_CHECK_STR(store, "file://");
  QL_CHECK_STR(path, expected);
  free(store);
  free(path);
}

struct join_case {
  const char *base, *key;
  int status;
  const char *out;
};

static const struct join_case join_cases[] = {
    {"a/b", "c/d", QL_OK, "a/b/c/d"},
    {"a/b/", "c", QL_OK, "a/b/c"},
    {"", "c/d", QL_OK, "c/d"},
    {NULL, "c", QL_OK, "c"},
    {"a", "", QL_OK, "a"},
    {"a", "./c/./d/", QL_OK, "a/c/d"},
    {"a", "c/../d", QL_OK, "a/d"},
    {"a", "../x", QL_EINVAL, NULL},
    {"a", "c/../../x", QL_EINVAL, NULL},
    {"a", "/etc/passwd", QL_EINVAL, NULL},
    {"a", NULL, QL_EINVAL, NULL},
};

static void test_join_table(void) {
  for (size_t i = 0; i < sizeof(join_cases) / sizeof(join_cases[0]); i++) {
    const struct join_case *c = &join_cases[i];
    struct ql_error error = {0};
    char *out = (char *)1;
    QL_CHECK_INT(ql_path_join(c->base, c->key, &out, &error), c->status);
    if (c->out) {
      QL_CHECK_STR(out, c->out);
    } else {
      QL_CHECK(out == NULL);
    }
    free(c->out ? out : NULL);
    ql_error_release(&error);
  }
  struct ql_error error = {0};
  char *out;
  QL_CHECK_INT(ql_path_join("a", "/etc/passwd", &out, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "key '/etc/passwd' is absolute; expected a relative key");
  QL_CHECK_INT(ql_path_join("a", "../x", &out, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "key '../x' climbs above its root with '..'");
  ql_error_release(&error);
}

int main(void) {
  test_split_table();
  test_split_relative();
  test_join_table();
  QL_TEST_END();
}
