/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf end to end through the ABI: files written here with
 * libnetcdf (netCDF-3 classic, netCDF-4 with groups and chunks), read back
 * through the reference host's file:// and memory:// stores; the options
 * group and concat_dim; clean errors naming file, group and variable. */
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/test_util.h"

#define NC_OK(call) QL_CHECK_INT((call), NC_NOERR)

static struct ql_ref_host *host;
static struct ql_plugin plugin;
static char dir[256];

/* time(unlimited) x x(3): time int32 "hours since 2000-01-01", v float32
 * with _FillValue -1 (v[1][2] is the fill), the record values t0 + k. */
static void write_classic(const char *path, int mode, int t0, int nt, int unlimited) {
  int ncid, dt, dx, vt, vv, vs;
  NC_OK(nc_create(path, mode | NC_CLOBBER, &ncid));
  NC_OK(nc_def_dim(ncid, "time", unlimited ? NC_UNLIMITED : (size_t)nt, &dt));
  NC_OK(nc_def_dim(ncid, "x", 3, &dx));
  NC_OK(nc_def_var(ncid, "time", NC_INT, 1, &dt, &vt));
  const char *units = "hours since 2000-01-01 00:00";
  NC_OK(nc_put_att_text(ncid, vt, "units", strlen(units), units));
  int dims[2] = {dt, dx};
  NC_OK(nc_def_var(ncid, "v", NC_FLOAT, 2, dims, &vv));
  float fill = -1.0f;
  NC_OK(nc_put_att_float(ncid, vv, "_FillValue", NC_FLOAT, 1, &fill));
  NC_OK(nc_put_att_text(ncid, vv, "units", 1, "K"));
  NC_OK(nc_def_var(ncid, "station", NC_DOUBLE, 0, NULL, &vs));
  NC_OK(nc_enddef(ncid));
  for (int t = 0; t < nt; t++) {
    size_t start[2] = {(size_t)t, 0}, count[2] = {1, 3};
    int hour = t0 + t;
    float row[3] = {(float)(t0 + t), 0.5f, (t0 + t) == 1 ? -1.0f : 2.5f};
    NC_OK(nc_put_vara_int(ncid, vt, start, count, &hour));
    NC_OK(nc_put_vara_float(ncid, vv, start, count, row));
  }
  double s = 812.5;
  NC_OK(nc_put_var_double(ncid, vs, &s));
  NC_OK(nc_close(ncid));
}

/* Table `table` (NULL: the default) of `path`, with one more option k1=v1
 * when k1 is not NULL. */
static int open_table(const char *path, const char *table, const char *k1, const char *v1,
                      struct ql_table_provider *out, struct ql_error *err) {
  const char *keys[3] = {"path"}, *values[3] = {path};
  struct ql_options opts = {1, keys, values};
  if (table) keys[opts.count] = "table", values[opts.count++] = table;
  if (k1) keys[opts.count] = k1, values[opts.count++] = v1;
  return plugin.table_provider_open(&plugin, "table", &opts, ql_ref_host_session(host), out, err);
}

/* Every cell of column `col` (float32, int32, int64 or timestamp) as a
 * double (NaN for NULL), in partition order. */
struct cells {
  int32_t col;
  double out[64];
  int64_t n;
};

static void take(const struct ArrowArray *a, void *ctx) {
  struct cells *c = ctx;
  const struct ArrowArray *k = a->children[c->col];
  for (int64_t r = 0; r < a->length && c->n < 64; r++) {
    int64_t i = r + k->offset;
    double x = NAN;
    if (ql_array_is_valid(k, r)) {
      if (k->n_buffers == 2 && c->col == 0)
        x = (double)((const int64_t *)k->buffers[1])[i];
      else
        x = ((const float *)k->buffers[1])[i];
    }
    c->out[c->n++] = x;
  }
}

static int64_t scan_column(struct ql_table_provider *tp, int32_t col, struct cells *c) {
  struct ql_error err = {0};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {0}, -1};
  struct ql_execution_plan plan;
  memset(&plan, 0, sizeof(plan));
  memset(c, 0, sizeof(*c));
  c->col = col;
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(host), &args, &plan, &err), err);
  QL_CHECK_OK(zr_test_each_batch(host, &plan, take, c, &err), err);
  plan.release(&plan);
  ql_error_release(&err);
  return c->n;
}

static void expect_error(const char *path, const char *k1, const char *v1, const char *needle1, const char *needle2) {
  struct ql_error err = {0};
  struct ql_table_provider tp;
  memset(&tp, 0, sizeof(tp));
  int rc = open_table(path, NULL, k1, v1, &tp, &err);
  QL_CHECK(rc != QL_OK);
  const char *m = ql_error_message(&err);
  QL_CHECK(m && strstr(m, needle1) != NULL);
  QL_CHECK(m && (!needle2 || strstr(m, needle2) != NULL));
  if (!(m && strstr(m, needle1) && (!needle2 || strstr(m, needle2)))) fprintf(stderr, "message: %s\n", m ? m : "");
  if (rc == QL_OK && tp.release) tp.release(&tp);
  ql_error_release(&err);
}

/* netCDF-3 classic: times decode to timestamps, the fill value is NULL. */
static void test_classic(void) {
  char path[512];
  snprintf(path, sizeof(path), "%s/classic.nc", dir);
  write_classic(path, NC_CLASSIC_MODEL, 0, 4, 1);
  struct ql_error err = {0};
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(path, NULL, NULL, NULL, &tp, &err), err);
  struct cells c;
  QL_CHECK_INT(scan_column(&tp, 0, &c), 12);
  QL_CHECK(c.out[0] == 946684800e9 && c.out[11] == 946684800e9 + 3 * 3600e9);
  QL_CHECK_INT(scan_column(&tp, 2, &c), 12);
  double want[12] = {0, 0.5, 2.5, 1, 0.5, NAN, 2, 0.5, 2.5, 3, 0.5, 2.5};
  for (int i = 0; i < 12; i++) QL_CHECK(isnan(want[i]) ? isnan(c.out[i]) : c.out[i] == want[i]);
  struct ql_statistics st;
  memset(&st, 0, sizeof(st));
  QL_CHECK_OK(tp.get_statistics(&tp, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 12);
  if (st.release) st.release(&st);
  tp.release(&tp);
  ql_error_release(&err);
}

/* The same bytes from the memory:// store (nc_open_mem). */
static void put_file(const struct ql_object_store *mem) {
  char path[512];
  snprintf(path, sizeof(path), "%s/classic.nc", dir);
  FILE *fp = fopen(path, "rb");
  QL_CHECK(fp != NULL);
  static uint8_t buf[1 << 16];
  size_t n = fp ? fread(buf, 1, sizeof(buf), fp) : 0;
  if (fp) fclose(fp);
  struct ql_error err = {0};
  QL_CHECK_OK(ql_memory_store_put(mem, "data/classic.nc", buf, (int64_t)n, &err), err);
  ql_error_release(&err);
}

static void test_memory_store(void) {
  struct ql_error err = {0};
  QL_CHECK_OK(zr_test_build_store(host, put_file, &err), err);
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table("memory:///data/classic.nc", NULL, NULL, NULL, &tp, &err), err);
  struct cells c;
  QL_CHECK_INT(scan_column(&tp, 2, &c), 12);
  QL_CHECK(c.out[3] == 1.0 && isnan(c.out[5]));
  tp.release(&tp);
  QL_CHECK_OK(open_table("memory:///data/classic.nc", "scalars", NULL, NULL, &tp, &err), err);
  tp.release(&tp);
  ql_error_release(&err);
}

/* Two files without an unlimited dimension: refused, then concatenated
 * with concat_dim=time. */
static void test_concat_dim(void) {
  char path[512], pattern[512];
  snprintf(path, sizeof(path), "%s/multi/a.nc", dir);
  write_classic(path, NC_64BIT_OFFSET, 0, 2, 0);
  snprintf(path, sizeof(path), "%s/multi/b.nc", dir);
  write_classic(path, NC_64BIT_DATA, 2, 3, 0);
  snprintf(pattern, sizeof(pattern), "%s/multi/*.nc", dir);
  expect_error(pattern, NULL, NULL, "no unlimited dimension", "concat_dim");
  struct ql_error err = {0};
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(pattern, NULL, "concat_dim", "time", &tp, &err), err);
  struct cells c;
  QL_CHECK_INT(scan_column(&tp, 2, &c), 15);
  QL_CHECK(c.out[0] == 0 && isnan(c.out[5]) && c.out[12] == 4);
  tp.release(&tp);
  expect_error(pattern, "concat_dim", "x", "variable 'time' differs", "b.nc");
  ql_error_release(&err);
}

/* netCDF-4 groups: the root serves nothing here, its error names the
 * groups; group=/forecast serves that group; an unknown group is named. */
static void test_groups(void) {
  char path[512];
  snprintf(path, sizeof(path), "%s/groups.nc", dir);
  int ncid, gid, dx, vv;
  NC_OK(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid));
  NC_OK(nc_def_grp(ncid, "forecast", &gid));
  NC_OK(nc_def_dim(gid, "x", 4, &dx));
  NC_OK(nc_def_var(gid, "v", NC_FLOAT, 1, &dx, &vv));
  size_t chunk = 2;
  NC_OK(nc_def_var_chunking(gid, vv, NC_CHUNKED, &chunk));
  NC_OK(nc_def_var_deflate(gid, vv, 1, 1, 4));
  float v[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  NC_OK(nc_put_var_float(gid, vv, v));
  NC_OK(nc_close(ncid));
  expect_error(path, NULL, NULL, "has no variables", "forecast");
  expect_error(path, "group", "/nowhere", "no group '/nowhere'", "groups.nc");
  struct ql_error err = {0};
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(path, NULL, "group", "/forecast", &tp, &err), err);
  struct cells c;
  QL_CHECK_INT(scan_column(&tp, 1, &c), 4);
  QL_CHECK(c.out[0] == 1.5 && c.out[3] == 4.5);
  tp.release(&tp);
  ql_error_release(&err);
}

static void test_errors(void) {
  char path[512];
  snprintf(path, sizeof(path), "%s/missing.nc", dir);
  expect_error(path, NULL, NULL, "missing.nc", NULL);
  snprintf(path, sizeof(path), "%s/junk.nc", dir);
  FILE *fp = fopen(path, "wb");
  if (fp) {
    fputs("CDF\001 but nothing after it", fp);
    fclose(fp);
  }
  expect_error(path, NULL, NULL, "junk.nc", "header byte 8: expected the dimensions tag");
  /* 40 bytes declaring 2^30 dimensions: libnetcdf 4.9 crashes on them,
   * the header check refuses them first (header_test.c has the rest) */
  static const uint8_t crash[] = "CDF\5\0\0\0\0\0\0\0\0\0\0\0\12\0\0\0\0////////\0\0\0\0\1\5\0\0\0\0\0";
  snprintf(path, sizeof(path), "%s/crash.nc", dir);
  fp = fopen(path, "wb");
  if (fp) {
    fwrite(crash, 1, sizeof(crash) - 1, fp);
    fclose(fp);
  }
  expect_error(path, NULL, NULL, "crash.nc", "dimensions declared, more than");
  snprintf(path, sizeof(path), "%s/text.nc", dir);
  fp = fopen(path, "wb");
  if (fp) {
    fputs("neither classic nor HDF5", fp);
    fclose(fp);
  }
  expect_error(path, NULL, NULL, "text.nc", "cannot open");
  snprintf(path, sizeof(path), "%s/classic.nc", dir);
  expect_error(path, "bogus", "1", "bogus", NULL);
  expect_error("https://example.invalid/x.nc", NULL, NULL, "https://example.invalid/x.nc", NULL);
}

int main(void) {
  snprintf(dir, sizeof(dir), "/tmp/qlink_netcdf_test_%d", (int)getpid());
  char multi[300];
  snprintf(multi, sizeof(multi), "%s/multi", dir);
  QL_CHECK_INT(mkdir(dir, 0700), 0);
  QL_CHECK_INT(mkdir(multi, 0700), 0);
  struct ql_error err = {0};
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(zr_test_open(&ho, &host, &plugin, &err), err);
  test_classic();
  test_memory_store();
  test_concat_dim();
  test_groups();
  test_errors();
  QL_CHECK_OK(zr_test_close(host, &plugin, &err), err);
  ql_error_release(&err);
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  QL_CHECK_INT(system(cmd), 0);
  QL_TEST_END();
}
