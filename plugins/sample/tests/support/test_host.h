/* SPDX-License-Identifier: Apache-2.0 */
/* The sample plugin's C tests (plugin_test.c, range_test.c): the built
 * plugin loaded through libqlink's loader beside a reference host with
 * 4-row batches (so streams cross many batches), and the checks every test
 * ends with: the executor hooks balanced on this thread and the memory pool
 * returned to zero. Include after ql_test.h. */
#ifndef QLINK_SAMPLE_TEST_HOST_H
#define QLINK_SAMPLE_TEST_HOST_H

#include <stdlib.h>

#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink_sample.h"

struct smp_test_host {
  struct ql_loaded_plugin *loaded;
  const struct ql_plugin *plugin;
  struct ql_ref_host *host;
  struct smp_hook_counts *counts; /* this thread's hook counters */
};

/* 0 with everything open, -1 (after failed checks) when the plugin or the
 * host cannot be had. */
static int smp_test_host_open(struct smp_test_host *t) {
  const char *build = getenv("QL_BUILD_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/plugins/qlink_sample.so", build ? build : ".");
  struct ql_error err = {0};
  memset(t, 0, sizeof *t);
  QL_CHECK_OK(ql_plugin_load(path, &t->loaded, &err), err);
  if (t->loaded == NULL) return -1;
  t->plugin = &t->loaded->plugin;
  struct ql_ref_host_options o = {-1, 4, 2};
  QL_CHECK_OK(ql_ref_host_new(&o, &t->host, &err), err);
  if (t->host == NULL) return -1;
  t->counts = ql_plugin_enter(t->plugin);
  ql_plugin_leave(t->plugin, t->counts);
  return 0;
}

static void smp_test_host_close(struct smp_test_host *t) {
  struct ql_error err = {0};
  QL_CHECK_INT(t->counts->leaves, t->counts->enters);
  QL_CHECK_INT(t->counts->depth, 0);
  QL_CHECK_INT(t->counts->mismatches, 0);
  const struct ql_memory_pool *pool = ql_ref_host_runtime_env(t->host)->memory_pool;
  QL_CHECK_INT(pool->reserved(pool), 0);
  ql_plugin_unload(t->loaded);
  QL_CHECK_OK(ql_ref_host_free(t->host, &err), err);
}

#endif /* QLINK_SAMPLE_TEST_HOST_H */
