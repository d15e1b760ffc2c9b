/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray under the conformance kit (ql_check_plugin, in this
 * process: the registry is per process): the built plugin is dlopened, a
 * dataset registered through its descriptor's API (as Python does), and
 * every ABI rule checked against its `dataset` providers. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/check.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_ndarray.h"

static int released;
static void on_release(void *owner) {
  (void)owner;
  released++;
}

static int load(void *ctx, int32_t ndim, const int64_t *start, const int64_t *count, void *out, char *message,
                size_t cap) {
  (void)ctx;
  (void)message;
  (void)cap;
  QL_CHECK_INT(ndim, 2);
  float *o = out;
  for (int64_t i = 0; i < count[0]; i++) {
    for (int64_t j = 0; j < count[1]; j++) o[i * count[1] + j] = (float)((start[0] + i) * 100 + start[1] + j);
  }
  return 0;
}

int main(void) {
  const char *build = getenv("QL_BUILD_DIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/plugins/qlink_ndarray.so", build ? build : ".");
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  QL_CHECK(dl != NULL);
  if (!dl) {
    fprintf(stderr, "%s\n", dlerror());
    QL_TEST_END();
  }
  ql_plugin_init_fn init = (ql_plugin_init_fn)(uintptr_t)dlsym(dl, QL_PLUGIN_ENTRY_POINT);
  struct ql_plugin plugin;
  struct ql_error err = {0};
  QL_CHECK_OK(init(QL_ABI_VERSION, &plugin, &err), err);
  const struct nd_api *api = plugin.private_data;
  QL_CHECK_INT(api->magic, ND_API_MAGIC);

  enum { NT = 50, NX = 40 };
  static double x[NX];
  static int64_t t[NT];
  static float v[NT][NX];
  for (int i = 0; i < NX; i++) x[i] = -i * 0.5; /* decreasing */
  for (int i = 0; i < NT; i++) t[i] = (int64_t)i * 3600000000000LL;
  for (int i = 0; i < NT; i++) {
    for (int j = 0; j < NX; j++) v[i][j] = (float)(i * NX + j);
  }
  const char *dims[2] = {"time", "x"};
  const int64_t shape[2] = {NT, NX}, chunks[2] = {7, 16};
  struct nd_variable vars[4];
  memset(vars, 0, sizeof(vars));
  vars[0] = (struct nd_variable){"time", 1, 1, dims, shape, "<M8[ns]", t, NULL, NULL, NULL, NULL, NULL, NULL};
  vars[1] = (struct nd_variable){"x", 1, 1, dims + 1, shape + 1, "<f8", x, NULL, NULL, NULL, NULL, NULL, NULL};
  vars[2] = (struct nd_variable){"v", 2, 0, dims, shape, "<f4", v, NULL, chunks, "{\"units\":\"m\"}", NULL, NULL, NULL};
  vars[3] = (struct nd_variable){"lazy", 2, 0, dims, shape, "<f4", NULL, NULL, chunks, NULL, load, NULL, NULL};
  char msg[256];
  char handle[ND_HANDLE_HEX + 1];
  QL_CHECK_INT(api->register_dataset(vars, 4, "conformance", NULL, on_release, handle, msg, sizeof(msg)), 0);
  char spec_table[96], spec_schema[96];
  snprintf(spec_table, sizeof(spec_table), "dataset?id=%s&block_rows=1", handle);
  snprintf(spec_schema, sizeof(spec_schema), "dataset?id=%s", handle);
  const char *specs[2] = {spec_table, spec_schema};
  struct ql_check_options opts = {2, specs, 2, 0, stderr, 0};
  QL_CHECK_INT(ql_check_plugin(path, &opts), 0);
  QL_CHECK_INT(released, 0);
  QL_CHECK_INT(api->unregister_dataset(handle), 0);
  QL_CHECK_INT(released, 1);
  QL_CHECK_INT(api->live_count(), 0);
  plugin.release(&plugin);
  ql_error_release(&err);
  dlclose(dl);
  QL_TEST_END();
}
