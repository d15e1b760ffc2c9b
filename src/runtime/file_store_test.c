/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/file_store.c over files written to a temp dir. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static char root[512];     /* absolute temp dir */
static const char *root_rel; /* the same without the leading '/': the object path */

static void write_file(const char *rel, const char *content) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", root, rel);
  FILE *f = fopen(path, "wb");
  QL_CHECK(f != NULL);
  if (!f) return;
  fwrite(content, 1, strlen(content), f);
  fclose(f);
}

static char *object_path(const char *rel) {
  static char buf[1024];
  snprintf(buf, sizeof(buf), "%s/%s", root_rel, rel);
  return buf;
}

static void setup(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof(root), "%s/ql_file_store_XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
  QL_CHECK(mkdtemp(root) != NULL);
  root_rel = root + 1;
  char dir[600];
  snprintf(dir, sizeof(dir), "%s/sub", root);
  mkdir(dir, 0700);
  snprintf(dir, sizeof(dir), "%s/sub/deeper", root);
  mkdir(dir, 0700);
  snprintf(dir, sizeof(dir), "%s/empty_dir", root);
  mkdir(dir, 0700);
  write_file("a.bin", "0123456789");
  write_file("sub/b.txt", "hello");
  write_file("sub/deeper/c", "");
  char link[600], target[600];
  snprintf(link, sizeof(link), "%s/loop", root);
  snprintf(target, sizeof(target), "%s", root);
  QL_CHECK_INT(symlink(target, link), 0); /* a cycle the walk must not follow */
}

static void teardown(void) {
  const char *rels[] = {"a.bin", "sub/b.txt", "sub/deeper/c", "loop"};
  char path[1024];
  for (size_t i = 0; i < 4; i++) {
    snprintf(path, sizeof(path), "%s/%s", root, rels[i]);
    unlink(path);
  }
  const char *dirs[] = {"sub/deeper", "sub", "empty_dir"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
    rmdir(path);
  }
  QL_CHECK_INT(rmdir(root), 0);
}

static void test_head(const struct ql_object_store *s) {
  struct ql_error error = {0};
  struct ql_object_meta meta = {0};
  QL_CHECK_OK(s->head(s, object_path("a.bin"), &meta, &error), error);
  QL_CHECK_INT(meta.size, 10);
  QL_CHECK(meta.last_modified_ns > 0);
  QL_CHECK_INT(s->head(s, object_path("missing"), &meta, &error), QL_ENOTFOUND);
  QL_CHECK_STR(error.sqlstate, "42704");
  QL_CHECK_INT(s->head(s, object_path("sub"), &meta, &error), QL_ENOTFOUND); /* a directory is not an object */
  QL_CHECK_INT(s->head(s, object_path("a.bin/x"), &meta, &error), QL_ENOTFOUND);
  QL_CHECK_INT(s->head(s, "/etc/passwd", &meta, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "invalid object path '/etc/passwd': leading '/'");
  QL_CHECK_INT(s->head(s, object_path("sub/../a.bin"), &meta, &error), QL_EINVAL);
  QL_CHECK_INT(s->head(s, "", &meta, &error), QL_EINVAL);
  ql_error_release(&error);
}

static void check_range(const struct ql_object_store *s, int64_t offset, int64_t length, const char *expected) {
  struct ql_error error = {0};
  struct ql_bytes bytes = {0};
  QL_CHECK_OK(s->get_range(s, object_path("a.bin"), offset, length, &bytes, &error), error);
  QL_CHECK_INT(bytes.size, (int64_t)strlen(expected));
  QL_CHECK(bytes.size == 0 || memcmp(bytes.data, expected, (size_t)bytes.size) == 0);
  QL_CHECK(bytes.release != NULL);
  if (bytes.release) bytes.release(&bytes);
  QL_CHECK(bytes.release == NULL);
}

static void test_get_range(const struct ql_object_store *s) {
  check_range(s, 0, -1, "0123456789");
  check_range(s, 3, 4, "3456");
  check_range(s, 8, 100, "89"); /* shorter: the object ends first */
  check_range(s, 10, -1, "");   /* at the end: empty */
  check_range(s, 0, 0, "");
  struct ql_error error = {0};
  struct ql_bytes bytes = {0};
  QL_CHECK_INT(s->get_range(s, object_path("a.bin"), 11, 1, &bytes, &error), QL_EINVAL);
  char expected[1200];
  snprintf(expected, sizeof(expected), "get_range file:///%s/a.bin: offset 11 is past the end (size 10 bytes)", root_rel);
  QL_CHECK_STR(error.message, expected);
  QL_CHECK(bytes.release == NULL);
  QL_CHECK_INT(s->get_range(s, object_path("a.bin"), -1, 1, &bytes, &error), QL_EINVAL);
  QL_CHECK_INT(s->get_range(s, object_path("a.bin"), 0, -2, &bytes, &error), QL_EINVAL);
  QL_CHECK_INT(s->get_range(s, object_path("nope.bin"), 0, -1, &bytes, &error), QL_ENOTFOUND);
  snprintf(expected, sizeof(expected), "object not found: file:///%s/nope.bin", root_rel);
  QL_CHECK_STR(error.message, expected);
  QL_CHECK_INT(s->get_range(s, object_path("sub"), 0, -1, &bytes, &error), QL_ENOTFOUND);
  QL_CHECK_INT(s->get_range(s, "a/../../etc/passwd", 0, -1, &bytes, &error), QL_EINVAL);
  QL_CHECK_OK(s->get_range(s, object_path("sub/b.txt"), 1, -1, &bytes, &error), error);
  QL_CHECK_INT(bytes.size, 4);
  QL_CHECK(memcmp(bytes.data, "ello", 4) == 0);
  bytes.release(&bytes);
  ql_error_release(&error);
}

static void test_list(const struct ql_object_store *s) {
  struct ql_error error = {0};
  struct ql_object_list list = {0};
  QL_CHECK_OK(s->list(s, root_rel, &list, &error), error);
  /* Exactly the three files (sorted), not the symlink loop or empty dirs. */
  QL_CHECK_INT(list.count, 3);
  if (list.count == 3) {
    char expected[1024];
    snprintf(expected, sizeof(expected), "%s/a.bin", root_rel);
    QL_CHECK_STR(list.items[0].path, expected);
    QL_CHECK_INT(list.items[0].size, 10);
    snprintf(expected, sizeof(expected), "%s/sub/b.txt", root_rel);
    QL_CHECK_STR(list.items[1].path, expected);
    QL_CHECK_INT(list.items[1].size, 5);
    snprintf(expected, sizeof(expected), "%s/sub/deeper/c", root_rel);
    QL_CHECK_STR(list.items[2].path, expected);
    QL_CHECK_INT(list.items[2].size, 0);
    QL_CHECK(list.items[2].last_modified_ns > 0);
  }
  list.release(&list);
  QL_CHECK(list.release == NULL);

  QL_CHECK_OK(s->list(s, object_path("sub"), &list, &error), error);
  QL_CHECK_INT(list.count, 2);
  list.release(&list);
  QL_CHECK_OK(s->list(s, object_path("empty_dir"), &list, &error), error);
  QL_CHECK_INT(list.count, 0);
  list.release(&list);
  QL_CHECK_OK(s->list(s, object_path("no_such_dir"), &list, &error), error);
  QL_CHECK_INT(list.count, 0);
  list.release(&list);
  QL_CHECK_OK(s->list(s, object_path("a.bin"), &list, &error), error); /* a file is not a prefix */
  QL_CHECK_INT(list.count, 0);
  list.release(&list);
  QL_CHECK_INT(s->list(s, "tmp/../..", &list, &error), QL_EINVAL);
  QL_CHECK(list.release == NULL);
  ql_error_release(&error);
}

/* A FIFO is not an object: opening it must not wait for a writer (the
 * open is non-blocking), and a read is "not found", as for a directory. */
static void test_fifo(const struct ql_object_store *s) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/pipe", root);
  QL_CHECK_INT(mkfifo(path, 0600), 0);
  struct ql_error error = {0};
  struct ql_bytes bytes = {0};
  QL_CHECK_INT(s->get_range(s, object_path("pipe"), 0, -1, &bytes, &error), QL_ENOTFOUND);
  char expected[1200];
  snprintf(expected, sizeof(expected), "object not found: file:///%s/pipe is not a file", root_rel);
  QL_CHECK_STR(error.message, expected);
  QL_CHECK(bytes.release == NULL);
  uint8_t buf[8];
  int64_t got = -1;
  QL_CHECK_INT(s->read_into(s, object_path("pipe"), 0, (int64_t)sizeof(buf), buf, &got, &error), QL_ENOTFOUND);
  ql_error_release(&error);
  unlink(path);
}

int main(void) {
  setup();
  struct ql_error error = {0};
  struct ql_object_store store;
  QL_CHECK_OK(ql_file_store_new(&store, &error), error);
  QL_CHECK_INT(store.struct_size, sizeof(struct ql_object_store));
  test_head(&store);
  test_get_range(&store);
  test_list(&store);
  test_fifo(&store);
  store.release(&store);
  QL_CHECK(store.release == NULL);
  teardown();
  QL_TEST_END();
}
