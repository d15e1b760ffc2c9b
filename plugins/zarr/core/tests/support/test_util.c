/* SPDX-License-Identifier: Apache-2.0 */
/* Test support for the plugins over qlink_zarr_core. See qlink_zarr/test_util.h. */
#include "qlink_zarr/test_util.h"

#include <string.h>

#include "qlink/lib/status.h"

int zr_test_open(const struct ql_ref_host_options *options, struct ql_ref_host **host, struct ql_plugin *plugin,
                 struct ql_error *error) {
  memset(plugin, 0, sizeof(*plugin));
  *host = NULL;
  QL_RETURN_NOT_OK(ql_ref_host_new(options, host, error));
  int rc = qlink_plugin_init(QL_ABI_VERSION, plugin, error);
  if (rc != QL_OK) {
    ql_ref_host_free(*host, NULL);
    *host = NULL;
  }
  return rc;
}

int zr_test_close(struct ql_ref_host *host, struct ql_plugin *plugin, struct ql_error *error) {
  if (plugin->release) plugin->release(plugin);
  return ql_ref_host_free(host, error);
}

int zr_test_build_store(struct ql_ref_host *host, zr_test_build_fn build, struct ql_error *error) {
  struct ql_object_store mem;
  const struct ql_object_store_registry *reg = ql_ref_store_registry_view(ql_ref_host_stores(host));
  QL_RETURN_NOT_OK(reg->get_store(reg, "memory://", &mem, error));
  build(&mem);
  mem.release(&mem);
  return QL_OK;
}

/* Partition p's batches to `each`. */
static int each_of_partition(struct ql_ref_host *host, const struct ql_execution_plan *plan, int64_t p,
                             zr_test_batch_fn each, void *ctx, struct ql_error *error) {
  struct ql_task_context task;
  ql_ref_host_task_context(host, p, &task);
  struct ArrowArrayStream st;
  QL_RETURN_NOT_OK(plan->execute(plan, p, &task, &st, error));
  int rc = QL_OK;
  for (;;) {
    struct ArrowArray a;
    int code = st.get_next(&st, &a);
    if (code != 0) {
      const char *msg = st.get_last_error(&st);
      rc = ql_error_set(error, ql_status_from_errno(code), "partition %lld: get_next returned %d: %s", (long long)p,
                        code, msg ? msg : "(no message)");
      break;
    }
    if (!a.release) break;
    each(&a, ctx);
    a.release(&a);
  }
  st.release(&st);
  return rc;
}

int zr_test_each_batch(struct ql_ref_host *host, const struct ql_execution_plan *plan, zr_test_batch_fn each,
                       void *ctx, struct ql_error *error) {
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_RETURN_NOT_OK(plan->get_properties(plan, &props, error));
  for (int64_t p = 0; p < props.partition_count; p++) {
    QL_RETURN_NOT_OK(each_of_partition(host, plan, p, each, ctx, error));
  }
  return QL_OK;
}

int64_t zr_test_metric(const struct ql_execution_plan *plan, const char *name) {
  struct ql_error err = {0};
  struct ql_metrics m;
  int64_t v = -1;
  if (plan->get_metrics(plan, &m, &err) == QL_OK) {
    for (int64_t i = 0; i < m.count; i++) {
      if (strcmp(m.items[i].name, name) == 0) v = m.items[i].value;
    }
    m.release(&m);
  }
  ql_error_release(&err);
  return v;
}
