/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/memory_store.c. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static void test_put_get(void) {
  struct ql_error error = {0};
  struct ql_object_store s;
  QL_CHECK_OK(ql_memory_store_new(&s, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&s, "t/x/0.0", "abcdef", 6, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&s, "t/x/zarr.json", "{}", 2, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&s, "t/y", "", 0, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&s, "tt/z", "q", 1, &error), error);

  struct ql_object_meta meta;
  QL_CHECK_OK(s.head(&s, "t/x/0.0", &meta, &error), error);
  QL_CHECK_INT(meta.size, 6);
  QL_CHECK_STR(meta.path, "t/x/0.0");
  QL_CHECK(meta.last_modified_ns > 0);
  QL_CHECK_INT(s.head(&s, "t/x", &meta, &error), QL_ENOTFOUND);
  QL_CHECK_STR(error.message, "object not found: memory:///t/x");

  struct ql_bytes b;
  QL_CHECK_OK(s.get_range(&s, "t/x/0.0", 2, 3, &b, &error), error);
  QL_CHECK_INT(b.size, 3);
  QL_CHECK(memcmp(b.data, "cde", 3) == 0);
  /* Replacing the object does not disturb bytes a reader still holds. */
  QL_CHECK_OK(ql_memory_store_put(&s, "t/x/0.0", "XYZ", 3, &error), error);
  QL_CHECK(memcmp(b.data, "cde", 3) == 0);
  b.release(&b);
  QL_CHECK(b.release == NULL);
  QL_CHECK_OK(s.get_range(&s, "t/x/0.0", 0, -1, &b, &error), error);
  QL_CHECK_INT(b.size, 3);
  QL_CHECK(memcmp(b.data, "XYZ", 3) == 0);
  /* ... nor does releasing the whole store. */
  struct ql_bytes kept = b;
  b.release = NULL;

  QL_CHECK_OK(s.get_range(&s, "t/x/0.0", 3, 5, &b, &error), error);
  QL_CHECK_INT(b.size, 0);
  b.release(&b);
  QL_CHECK_INT(s.get_range(&s, "t/x/0.0", 4, 1, &b, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "get_range memory:///t/x/0.0: offset 4 is past the end (size 3 bytes)");
  QL_CHECK_INT(s.get_range(&s, "nope", 0, 1, &b, &error), QL_ENOTFOUND);
  QL_CHECK_INT(s.get_range(&s, "t/../t/y", 0, 1, &b, &error), QL_EINVAL);

  struct ql_object_list list;
  QL_CHECK_OK(s.list(&s, "t", &list, &error), error);
  QL_CHECK_INT(list.count, 3); /* not "tt/z" */
  if (list.count == 3) {
    QL_CHECK_STR(list.items[0].path, "t/x/0.0");
    QL_CHECK_INT(list.items[0].size, 3);
    QL_CHECK_STR(list.items[1].path, "t/x/zarr.json");
    QL_CHECK_STR(list.items[2].path, "t/y");
    QL_CHECK_INT(list.items[2].size, 0);
  }
  list.release(&list);
  QL_CHECK_OK(s.list(&s, "", &list, &error), error);
  QL_CHECK_INT(list.count, 4);
  list.release(&list);
  QL_CHECK_OK(s.list(&s, NULL, &list, &error), error);
  QL_CHECK_INT(list.count, 4);
  list.release(&list);
  QL_CHECK_OK(s.list(&s, "t/x/0.0", &list, &error), error);
  QL_CHECK_INT(list.count, 0);
  list.release(&list);

  QL_CHECK_INT(ql_memory_store_put(&s, "/abs", "x", 1, &error), QL_EINVAL);
  QL_CHECK_INT(ql_memory_store_put(&s, "a//b", "x", 1, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "invalid object path 'a//b': empty segment");
  QL_CHECK_INT(ql_memory_store_put(&s, "a", NULL, 3, &error), QL_EINVAL);
  struct ql_object_store files;
  QL_CHECK_OK(ql_file_store_new(&files, &error), error);
  QL_CHECK_INT(ql_memory_store_put(&files, "a", "x", 1, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "ql_memory_store_put: not a memory store");
  files.release(&files);

  s.release(&s);
  QL_CHECK(s.release == NULL);
  QL_CHECK(memcmp(kept.data, "XYZ", 3) == 0);
  kept.release(&kept);
  ql_error_release(&error);
}

static void test_many_objects(void) {
  /* Enough objects to grow the hash table several times. */
  struct ql_error error = {0};
  struct ql_object_store s;
  QL_CHECK_OK(ql_memory_store_new(&s, &error), error);
  char path[64];
  int failures = 0;
  for (int i = 0; i < 5000; i++) {
    snprintf(path, sizeof(path), "c/%d.%d", i / 100, i % 100);
    if (ql_memory_store_put(&s, path, &i, sizeof(i), &error) != QL_OK) failures++;
  }
  QL_CHECK_INT(failures, 0);
  for (int i = 0; i < 5000; i += 7) {
    snprintf(path, sizeof(path), "c/%d.%d", i / 100, i % 100);
    struct ql_bytes b;
    if (s.get_range(&s, path, 0, -1, &b, &error) != QL_OK) {
      failures++;
      continue;
    }
    int v;
    memcpy(&v, b.data, sizeof(v));
    if (b.size != (int64_t)sizeof(int) || v != i) failures++;
    b.release(&b);
  }
  QL_CHECK_INT(failures, 0);
  struct ql_object_list list;
  QL_CHECK_OK(s.list(&s, "c", &list, &error), error);
  QL_CHECK_INT(list.count, 5000);
  list.release(&list);
  s.release(&s);
}

struct reader_arg {
  const struct ql_object_store *s;
  int failures;
};

static void *reader(void *p) {
  struct reader_arg *a = p;
  for (int i = 0; i < 2000; i++) {
    struct ql_bytes b;
    if (a->s->get_range(a->s, "hot", 0, -1, &b, NULL) != QL_OK) {
      a->failures++;
      continue;
    }
    /* Every version written is 8 equal bytes. */
    if (b.size != 8 || memcmp(b.data, b.data + 4, 4) != 0) a->failures++;
    b.release(&b);
  }
  return NULL;
}

static void test_concurrent(void) {
  struct ql_error error = {0};
  struct ql_object_store s;
  QL_CHECK_OK(ql_memory_store_new(&s, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&s, "hot", "aaaaaaaa", 8, &error), error);
  pthread_t t[3];
  struct reader_arg args[3] = {{&s, 0}, {&s, 0}, {&s, 0}};
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, reader, &args[i]);
  int failures = 0;
  for (int i = 0; i < 2000; i++) {
    char v[8];
    memset(v, 'a' + i % 26, 8);
    if (ql_memory_store_put(&s, "hot", v, 8, &error) != QL_OK) failures++;
  }
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) QL_CHECK_INT(args[i].failures, 0);
  QL_CHECK_INT(failures, 0);
  s.release(&s);
}

int main(void) {
  test_put_get();
  test_many_objects();
  test_concurrent();
  QL_TEST_END();
}
