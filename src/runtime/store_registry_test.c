/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/store_registry.c. */
#include <pthread.h>
#include <string.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static void test_registry(void) {
  struct ql_error error = {0};
  struct ql_ref_store_registry *reg = NULL;
  QL_CHECK_OK(ql_ref_store_registry_new(&reg, &error), error);
  const struct ql_object_store_registry *view = ql_ref_store_registry_view(reg);
  QL_CHECK_INT(view->struct_size, sizeof(struct ql_object_store_registry));

  /* file:// out of the box. */
  struct ql_object_store files;
  QL_CHECK_OK(view->get_store(view, "file:///etc", &files, &error), error);
  struct ql_object_meta meta;
  QL_CHECK_INT(files.head(&files, "definitely/not/here", &meta, &error), QL_ENOTFOUND);
  files.release(&files);
  QL_CHECK(files.release == NULL);
  QL_CHECK_OK(view->get_store(view, "/tmp/x", &files, &error), error); /* a local path is file:// */
  files.release(&files);

  /* memory:// is absent until registered. */
  struct ql_object_store mem;
  QL_CHECK_INT(view->get_store(view, "memory:///t", &mem, &error), QL_ENOTFOUND);
  QL_CHECK_STR(error.message, "no object store registered for 'memory://' (URL 'memory:///t')");
  QL_CHECK(mem.release == NULL);
  QL_CHECK_OK(ql_memory_store_new(&mem, &error), error);
  QL_CHECK_OK(ql_ref_store_registry_register(reg, "memory://", &mem, &error), error);
  QL_CHECK(mem.release == NULL); /* moved in */

  struct ql_object_store h1, h2;
  QL_CHECK_OK(view->get_store(view, "memory:///t/a", &h1, &error), error);
  /* Handles accept puts: they reach the registered store. */
  QL_CHECK_OK(ql_memory_store_put(&h1, "t/a", "hello", 5, &error), error);
  QL_CHECK_OK(view->get_store(view, "MEMORY://", &h2, &error), error);
  struct ql_bytes b;
  QL_CHECK_OK(h2.get_range(&h2, "t/a", 1, 3, &b, &error), error);
  QL_CHECK_INT(b.size, 3);
  QL_CHECK(memcmp(b.data, "ell", 3) == 0);
  b.release(&b);
  struct ql_object_list list;
  QL_CHECK_OK(h2.list(&h2, "t", &list, &error), error);
  QL_CHECK_INT(list.count, 1);
  list.release(&list);

  /* Replacing the registration: old handles keep the old store alive. */
  struct ql_object_store mem2;
  QL_CHECK_OK(ql_memory_store_new(&mem2, &error), error);
  QL_CHECK_OK(ql_ref_store_registry_register(reg, "memory:///", &mem2, &error), error);
  struct ql_object_store h3;
  QL_CHECK_OK(view->get_store(view, "memory:///t/a", &h3, &error), error);
  QL_CHECK_INT(h3.head(&h3, "t/a", &meta, &error), QL_ENOTFOUND);
  QL_CHECK_OK(h1.head(&h1, "t/a", &meta, &error), error);
  QL_CHECK_INT(meta.size, 5);
  h1.release(&h1);

  /* s3://bucket is keyed by scheme and authority. */
  struct ql_object_store bucket;
  QL_CHECK_OK(ql_memory_store_new(&bucket, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&bucket, "k", "v", 1, &error), error);
  QL_CHECK_OK(ql_ref_store_registry_register(reg, "s3://bucket/", &bucket, &error), error);
  struct ql_object_store hb;
  QL_CHECK_OK(view->get_store(view, "s3://bucket/k", &hb, &error), error);
  QL_CHECK_OK(hb.head(&hb, "k", &meta, &error), error);
  QL_CHECK_INT(view->get_store(view, "s3://other/k", &mem, &error), QL_ENOTFOUND);

  /* Bad registrations: the store is still consumed (no leak). */
  struct ql_object_store bad;
  QL_CHECK_OK(ql_memory_store_new(&bad, &error), error);
  QL_CHECK_INT(ql_ref_store_registry_register(reg, "s3://bucket/with/path", &bad, &error), QL_EINVAL);
  QL_CHECK(bad.release == NULL);
  QL_CHECK_OK(ql_memory_store_new(&bad, &error), error);
  QL_CHECK_INT(ql_ref_store_registry_register(reg, "/local/path", &bad, &error), QL_EINVAL);
  QL_CHECK(bad.release == NULL);

  /* The registry goes first; handles still work until released. */
  ql_ref_store_registry_free(reg);
  QL_CHECK_OK(h2.head(&h2, "t/a", &meta, &error), error);
  QL_CHECK_OK(hb.head(&hb, "k", &meta, &error), error);
  h2.release(&h2);
  h3.release(&h3);
  hb.release(&hb);
  ql_error_release(&error);
}

struct racer {
  const struct ql_object_store_registry *view;
  int failures;
};

/* Readers take handles while the main thread keeps replacing the store. */
static void *racer_main(void *arg) {
  struct racer *r = arg;
  for (int i = 0; i < 3000; i++) {
    struct ql_object_store h;
    if (r->view->get_store(r->view, "memory:///k", &h, NULL) != QL_OK) {
      r->failures++;
      continue;
    }
    struct ql_bytes b;
    /* Every registered generation holds "k" = 4 bytes. */
    if (h.get_range(&h, "k", 0, -1, &b, NULL) != QL_OK) {
      r->failures++;
    } else {
      if (b.size != 4) r->failures++;
      b.release(&b);
    }
    h.release(&h);
  }
  return NULL;
}

static void test_concurrent_replace(void) {
  struct ql_error error = {0};
  struct ql_ref_store_registry *reg = NULL;
  QL_CHECK_OK(ql_ref_store_registry_new(&reg, &error), error);
  struct ql_object_store m;
  QL_CHECK_OK(ql_memory_store_new(&m, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&m, "k", "gen0", 4, &error), error);
  QL_CHECK_OK(ql_ref_store_registry_register(reg, "memory://", &m, &error), error);
  struct racer racers[3] = {{ql_ref_store_registry_view(reg), 0}, {ql_ref_store_registry_view(reg), 0},
                            {ql_ref_store_registry_view(reg), 0}};
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, racer_main, &racers[i]);
  int failures = 0;
  for (int i = 0; i < 500; i++) {
    if (ql_memory_store_new(&m, &error) != QL_OK || ql_memory_store_put(&m, "k", "genN", 4, &error) != QL_OK ||
        ql_ref_store_registry_register(reg, "memory://", &m, &error) != QL_OK) {
      failures++;
    }
  }
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  QL_CHECK_INT(failures, 0);
  for (int i = 0; i < 3; i++) QL_CHECK_INT(racers[i].failures, 0);
  ql_ref_store_registry_free(reg);
  ql_error_release(&error);
}

int main(void) {
  test_registry();
  test_concurrent_replace();
  QL_TEST_END();
}
