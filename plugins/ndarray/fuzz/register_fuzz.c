/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: registration and a full scan. The input describes a
 * dataset: byte 0 the variable count (1-4); per variable a byte of flags
 * (rank 0-3, coordinate, chunked, lazy, strided), a byte naming its
 * dimensions out of "a", "b", "c" (in any order, repeats included), a byte
 * per axis for extents 0-5, a NUL-terminated dtype text (numpy typestr or
 * Arrow format, as the caller hands it) and a NUL-terminated attributes
 * text (JSON, maybe broken); the input fills the buffers in memory, its
 * rest what loaders write. Registration
 * must refuse what it cannot serve with a message; whatever it accepts must
 * scan (every table, every partition) without crash, leak or read outside
 * the buffers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nd_internal.h"
#include "ql_fuzz_host.h"
#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/provider.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct cursor {
  const uint8_t *p;
  size_t n;
};

static uint8_t take(struct cursor *c) {
  if (c->n == 0) return 0;
  c->n--;
  return *c->p++;
}

static const char *take_text(struct cursor *c, char *buf, size_t cap) {
  size_t k = 0;
  while (c->n > 0 && *c->p != 0 && k + 1 < cap) buf[k++] = (char)take(c);
  take(c);
  buf[k] = '\0';
  return buf;
}

static const uint8_t *fill_source;
static size_t fill_size;

static void fill(uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = fill_size ? fill_source[i % fill_size] : (uint8_t)i;
}

static int load(void *ctx, int32_t ndim, const int64_t *start, const int64_t *count, void *out, char *message,
                size_t cap) {
  (void)start;
  size_t itemsize = (size_t)(uintptr_t)ctx, n = itemsize;
  for (int32_t i = 0; i < ndim; i++) n *= (size_t)count[i];
  if (ndim > 0 && start[0] == 3) { /* the fourth position along the first axis fails */
    snprintf(message, cap, "refused");
    return 1;
  }
  fill(out, n);
  return 0;
}

static void drain(struct ql_ref_host *host, struct ql_table_provider *tp) {
  struct ql_error err = {0};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  if (tp->scan(tp, ql_ref_host_session(host), &args, &plan, &err) == QL_OK) {
    struct ql_plan_properties props;
    memset(&props, 0, sizeof(props));
    props.struct_size = sizeof(props);
    if (plan.get_properties(&plan, &props, &err) == QL_OK) {
      for (int64_t p = 0; p < props.partition_count; p++) {
        struct ql_task_context ctx;
        ql_ref_host_task_context(host, p, &ctx);
        struct ArrowArrayStream st;
        if (plan.execute(&plan, p, &ctx, &st, &err) != QL_OK) break;
        for (;;) {
          struct ArrowArray a;
          if (st.get_next(&st, &a) != 0 || !a.release) break;
          a.release(&a);
        }
        st.release(&st);
      }
    }
    plan.release(&plan);
  }
  ql_error_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct ql_ref_host *host;
  static struct ql_plugin plugin;
  ql_fuzz_host(0, &host, &plugin);
  struct ql_error err = {0};
  struct cursor c = {data, size};
  fill_source = data; /* buffers made below take the whole input; loaders what the description leaves */
  fill_size = size;
  static const char *const names[4] = {"a", "b", "c", "v3"};
  static const char *const dim_names[3] = {"a", "b", "c"};
  int32_t n_vars = 1 + take(&c) % 4;
  struct nd_variable vars[4];
  const char *dims[4][3];
  int64_t shape[4][3], chunks[4][3], strides[4][3];
  char dtype[4][32], attrs[4][64], vname[4][8];
  uint8_t *buffers[4] = {NULL, NULL, NULL, NULL};
  memset(vars, 0, sizeof(vars));
  for (int32_t i = 0; i < n_vars; i++) {
    uint8_t flags = take(&c), pick = take(&c);
    int32_t ndim = flags % 4;
    for (int32_t k = 0; k < ndim; k++) {
      dims[i][k] = dim_names[(pick >> (2 * k)) % 3];
      shape[i][k] = take(&c) % 6;
      chunks[i][k] = 1 + take(&c) % 4;
    }
    take_text(&c, dtype[i], sizeof(dtype[i]));
    take_text(&c, attrs[i], sizeof(attrs[i]));
    snprintf(vname[i], sizeof(vname[i]), "%s", i < 3 && (flags & 4) ? names[i] : names[3 - (i % 4)]);
    if (i > 0 && strcmp(vname[i], vname[0]) == 0) snprintf(vname[i], sizeof(vname[i]), "x%d", (int)i);
    vars[i].name = vname[i];
    vars[i].ndim = ndim;
    vars[i].is_coord = (flags >> 2) & 1;
    vars[i].dims = dims[i];
    vars[i].shape = shape[i];
    vars[i].dtype = dtype[i];
    vars[i].chunks = (flags & 8) ? chunks[i] : NULL;
    vars[i].attrs_json = attrs[i][0] ? attrs[i] : NULL;
    struct zr_dtype dt;
    struct ql_error derr = {0};
    int64_t itemsize = nd_dtype_parse(dtype[i], &dt, &derr) == QL_OK ? dt.size : 8;
    ql_error_release(&derr);
    if (flags & 16) {
      vars[i].load = load;
      vars[i].load_ctx = (void *)(uintptr_t)itemsize;
      continue;
    }
    /* in memory: a buffer twice as large as needed when strided (every second element along the outermost
     * axis, walked backwards), so any stride the description gives stays inside it */
    int strided = (flags & 32) && ndim > 0;
    int64_t n = 1;
    for (int32_t k = 0; k < ndim; k++) n *= shape[i][k] ? shape[i][k] : 1;
    size_t bytes = (size_t)(n * itemsize * (strided ? 2 : 1));
    buffers[i] = malloc(bytes ? bytes : 1);
    fill(buffers[i], bytes);
    vars[i].data = buffers[i];
    vars[i].null_cell = (flags & 64) ? buffers[i] : NULL; /* the first cell's bytes: refused unless strings */
    if (strided) {
      int64_t s = itemsize;
      for (int32_t k = ndim - 1; k >= 0; k--) {
        strides[i][k] = k == 0 ? -2 * s : s;
        s *= shape[i][k] ? shape[i][k] : 1;
      }
      vars[i].data = buffers[i] + (shape[i][0] > 0 ? (size_t)((shape[i][0] - 1) * 2 * (n / shape[i][0]) * itemsize) : 0);
      vars[i].strides = strides[i];
    }
  }
  int keep_nan = take(&c) & 1;
  fill_source = c.p;
  fill_size = c.n;
  char message[256];
  char handle[ND_HANDLE_HEX + 1];
  if (nd_register(vars, n_vars, "fuzz", NULL, NULL, handle, message, sizeof(message)) == 0) {
    struct nd_registration *r = nd_lookup(handle);
    struct zr_dataset *ds = NULL;
    if (r && nd_dataset_open(r, NULL, 1, keep_nan ? ZR_NAN_FILL_NAN : ZR_NAN_FILL_ALL, &ds, &err) == QL_OK) {
      for (int32_t t = 0; t < ds->n_tables; t++) {
        struct ql_table_provider tp;
        if (zr_table_provider_new(ds, t, &tp, &err) == QL_OK) {
          drain(host, &tp);
          tp.release(&tp);
        }
      }
      zr_dataset_unref(ds);
    }
    nd_registration_unref(r);
    nd_unregister(handle);
  }
  ql_error_release(&err);
  for (int32_t i = 0; i < 4; i++) free(buffers[i]);
  return 0;
}
