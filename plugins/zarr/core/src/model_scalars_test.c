/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr's table names and the scalars table, end to end through the
 * ABI over an in-memory store: the 0-d data variables make one one-row
 * table "scalars" (scalar coordinates first), decoded as xarray decodes
 * them, with their attributes as Arrow field metadata; two dimension
 * groups whose names joined by '_' are equal (a_b x c, a x b_c) are each
 * named by their dimensions joined by "__"; a dimension group named like
 * the scalars table yields to it ("scalars_2"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/test_util.h"
#include "store_put.h"

static void array_v2(const struct ql_object_store *s, const char *name, const char *zarray, const char *zattrs) {
  char path[256];
  snprintf(path, sizeof path, "m.zarr/%s/.zarray", name);
  put_text(s, path, zarray);
  snprintf(path, sizeof path, "m.zarr/%s/.zattrs", name);
  put_text(s, path, zattrs);
}

/* u(a_b=2, c=3) float64 with the scalar coordinate `height`; v(a=2, b_c=2)
 * int32; w(scalars=2) int8; 0-d: elev int16 packed (0.5 x + 100, fill
 * -32767), crs int32 (a grid mapping), flag int16 equal to its _FillValue,
 * height float64 (a coordinate of u). */
static void build_store(const struct ql_object_store *s) {
  put_text(s, "m.zarr/.zgroup", "{\"zarr_format\":2}");
  array_v2(s, "u",
           "{\"zarr_format\":2,\"shape\":[2,3],\"chunks\":[2,3],\"dtype\":\"<f8\",\"fill_value\":null,\"compressor\":null}",
           "{\"_ARRAY_DIMENSIONS\":[\"a_b\",\"c\"],\"coordinates\":\"height\",\"units\":\"m s-1\","
           "\"long_name\":\"eastward wind\",\"standard_name\":\"eastward_wind\"}");
  double u[6] = {0, 1, 2, 3, 4, 5};
  put(s, "m.zarr/u/0.0", u, sizeof(u));
  array_v2(s, "v",
           "{\"zarr_format\":2,\"shape\":[2,2],\"chunks\":[2,2],\"dtype\":\"<i4\",\"fill_value\":null,\"compressor\":null}",
           "{\"_ARRAY_DIMENSIONS\":[\"a\",\"b_c\"]}");
  int32_t v[4] = {1, 2, 3, 4};
  put(s, "m.zarr/v/0.0", v, sizeof(v));
  array_v2(s, "w",
           "{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"|i1\",\"fill_value\":null,\"compressor\":null}",
           "{\"_ARRAY_DIMENSIONS\":[\"scalars\"]}");
  int8_t w[2] = {5, 6};
  put(s, "m.zarr/w/0", w, sizeof(w));
  array_v2(s, "elev",
           "{\"zarr_format\":2,\"shape\":[],\"chunks\":[],\"dtype\":\"<i2\",\"fill_value\":-32767,\"compressor\":null}",
           "{\"_ARRAY_DIMENSIONS\":[],\"scale_factor\":0.5,\"add_offset\":100.0,\"units\":\"m\","
           "\"long_name\":\"station elevation\",\"standard_name\":\"height_above_mean_sea_level\",\"valid_range\":[0.1,2000]}");
  int16_t elev = 663; /* 663 * 0.5 + 100 = 431.5 */
  put(s, "m.zarr/elev/0", &elev, sizeof(elev));
  array_v2(s, "crs",
           "{\"zarr_format\":2,\"shape\":[],\"chunks\":[],\"dtype\":\"<i4\",\"fill_value\":null,\"compressor\":null}",
           "{\"_ARRAY_DIMENSIONS\":[],\"grid_mapping_name\":\"latitude_longitude\",\"inverse_flattening\":298.257223563}");
  int32_t crs = 7;
  put(s, "m.zarr/crs/0", &crs, sizeof(crs));
  array_v2(s, "flag",
           "{\"zarr_format\":2,\"shape\":[],\"chunks\":[],\"dtype\":\"<i2\",\"fill_value\":-999,\"compressor\":null}",
           "{\"_ARRAY_DIMENSIONS\":[]}");
  int16_t flag = -999;
  put(s, "m.zarr/flag/0", &flag, sizeof(flag));
  array_v2(s, "height",
           "{\"zarr_format\":2,\"shape\":[],\"chunks\":[],\"dtype\":\"<f8\",\"fill_value\":null,\"compressor\":null}",
           "{\"_ARRAY_DIMENSIONS\":[],\"units\":\"m\"}");
  double height = 2.0;
  put(s, "m.zarr/height/0", &height, sizeof(height));
}

static void check_meta(const struct ArrowSchema *f, const char *key, const char *want) {
  char *got = NULL;
  int rc = ql_schema_metadata_get(f, key, &got);
  if (want) {
    QL_CHECK_INT(rc, QL_OK);
    QL_CHECK_STR(got ? got : "(none)", want);
  } else {
    QL_CHECK_INT(rc, QL_ENOTFOUND);
  }
  free(got);
}

/* The one batch of a one-partition scan of `tp`. */
static void scan_one_batch(struct ql_ref_host *host, struct ql_table_provider *tp, struct ArrowArray *out) {
  struct ql_error err = {0};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(host), &args, &plan, &err), err);
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  QL_CHECK_INT(props.partition_count, 1);
  struct ql_task_context ctx;
  ql_ref_host_task_context(host, 0, &ctx);
  struct ArrowArrayStream st;
  QL_CHECK_OK(plan.execute(&plan, 0, &ctx, &st, &err), err);
  QL_CHECK_INT(st.get_next(&st, out), 0);
  struct ArrowArray end;
  QL_CHECK_INT(st.get_next(&st, &end), 0);
  QL_CHECK(end.release == NULL);
  st.release(&st);
  plan.release(&plan);
  ql_error_release(&err);
}

static void test_names_and_scalars(struct ql_ref_host *host, struct ql_plugin *plugin) {
  struct ql_error err = {0};
  const char *keys[1] = {"path"};
  const char *values[1] = {"memory:///m.zarr"};
  struct ql_options opts = {1, keys, values};
  struct ql_schema_provider sp;
  QL_CHECK_OK(plugin->schema_provider_open(plugin, "store", &opts, ql_ref_host_session(host), &sp, &err), err);
  /* tables in array order (u, v, w), then the scalars table */
  QL_CHECK_INT(sp.table_count(&sp), 4);
  QL_CHECK_STR(sp.table_name(&sp, 0), "a_b__c");
  QL_CHECK_STR(sp.table_name(&sp, 1), "a__b_c");
  QL_CHECK_STR(sp.table_name(&sp, 2), "scalars_2");
  QL_CHECK_STR(sp.table_name(&sp, 3), "scalars");
  struct ql_table_provider tp;
  /* the ambiguous joined name is no table; the message lists them all */
  QL_CHECK_INT(sp.table(&sp, "a_b_c", &tp, &err), QL_ENOTFOUND);
  QL_CHECK_STR(ql_error_message(&err),
               "zarr store memory:///m.zarr has no table 'a_b_c' (tables: a_b__c (a_b x c), a__b_c (a x b_c), "
               "scalars_2 (scalars), scalars (0-d variables))");
  ql_error_release(&err);

  struct ArrowSchema schema;
  QL_CHECK_OK(sp.table(&sp, "a_b__c", &tp, &err), err);
  QL_CHECK_OK(tp.get_schema(&tp, &schema, &err), err);
  QL_CHECK_INT(schema.n_children, 4);
  QL_CHECK_STR(schema.children[0]->name, "a_b");
  QL_CHECK_STR(schema.children[2]->name, "height");
  QL_CHECK_STR(schema.children[3]->name, "u");
  /* a data variable's CF attributes; what decoding consumed is left out */
  check_meta(schema.children[3], "units", "m s-1");
  check_meta(schema.children[3], "long_name", "eastward wind");
  check_meta(schema.children[3], "standard_name", "eastward_wind");
  check_meta(schema.children[3], "coordinates", NULL);
  check_meta(schema.children[3], "_ARRAY_DIMENSIONS", NULL);
  /* a (scalar) coordinate's */
  check_meta(schema.children[2], "units", "m");
  ql_schema_release(&schema);
  tp.release(&tp);

  QL_CHECK_OK(sp.table(&sp, "scalars", &tp, &err), err);
  QL_CHECK_OK(tp.get_schema(&tp, &schema, &err), err);
  QL_CHECK_INT(schema.n_children, 4);
  const char *names[4] = {"height", "crs", "elev", "flag"};
  /* packed int16 -> float64; a masked int16 -> float32, as xarray decodes them */
  const char *formats[4] = {"g", "i", "g", "f"};
  for (int i = 0; i < 4 && i < schema.n_children; i++) {
    QL_CHECK_STR(schema.children[i]->name, names[i]);
    QL_CHECK_STR(schema.children[i]->format, formats[i]);
  }
  check_meta(schema.children[2], "units", "m");
  check_meta(schema.children[2], "long_name", "station elevation");
  check_meta(schema.children[2], "standard_name", "height_above_mean_sea_level");
  check_meta(schema.children[2], "valid_range", "[0.1,2000]");
  check_meta(schema.children[2], "scale_factor", NULL);
  check_meta(schema.children[2], "_FillValue", NULL);
  check_meta(schema.children[1], "grid_mapping_name", "latitude_longitude");
  check_meta(schema.children[1], "inverse_flattening", "298.257223563");
  check_meta(schema.children[3], "units", NULL);
  ql_schema_release(&schema);
  struct ql_statistics stats;
  QL_CHECK_OK(tp.get_statistics(&tp, &stats, &err), err);
  QL_CHECK_INT(stats.num_rows, 1);
  QL_CHECK_INT(stats.num_rows_precision, QL_PRECISION_EXACT);
  stats.release(&stats);

  struct ArrowArray batch;
  scan_one_batch(host, &tp, &batch);
  QL_CHECK_INT(batch.length, 1);
  QL_CHECK_INT(batch.n_children, 4);
  if (batch.release && batch.n_children == 4) {
    QL_CHECK(((const double *)batch.children[0]->buffers[1])[batch.children[0]->offset] == 2.0);
    QL_CHECK_INT(((const int32_t *)batch.children[1]->buffers[1])[batch.children[1]->offset], 7);
    QL_CHECK(((const double *)batch.children[2]->buffers[1])[batch.children[2]->offset] == 431.5);
    QL_CHECK_INT(batch.children[2]->null_count, 0);
    QL_CHECK_INT(batch.children[3]->null_count, 1);
    QL_CHECK(!ql_array_is_valid(batch.children[3], 0));
    batch.release(&batch);
  }
  tp.release(&tp);

  /* the dimension group named "scalars" */
  QL_CHECK_OK(sp.table(&sp, "scalars_2", &tp, &err), err);
  QL_CHECK_OK(tp.get_schema(&tp, &schema, &err), err);
  QL_CHECK_INT(schema.n_children, 3);
  QL_CHECK_STR(schema.children[0]->name, "scalars");
  QL_CHECK_STR(schema.children[2]->name, "w");
  ql_schema_release(&schema);
  tp.release(&tp);
  sp.release(&sp);
  ql_error_release(&err);
}

/* `tables` renames by the unique default names; an unknown one is named
 * with the list of tables. */
static void test_renames(struct ql_ref_host *host, struct ql_plugin *plugin) {
  struct ql_error err = {0};
  const char *keys[2] = {"path", "tables"};
  const char *values[2] = {"memory:///m.zarr", "a_b__c=wind,scalars=station"};
  struct ql_options opts = {2, keys, values};
  struct ql_schema_provider sp;
  QL_CHECK_OK(plugin->schema_provider_open(plugin, "store", &opts, ql_ref_host_session(host), &sp, &err), err);
  QL_CHECK_STR(sp.table_name(&sp, 0), "wind");
  QL_CHECK_STR(sp.table_name(&sp, 3), "station");
  sp.release(&sp);
  values[1] = "a_b_c=x";
  QL_CHECK_INT(plugin->schema_provider_open(plugin, "store", &opts, ql_ref_host_session(host), &sp, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err),
               "option 'tables': zarr store memory:///m.zarr has no table 'a_b_c' (tables: a_b__c (a_b x c), "
               "a__b_c (a x b_c), scalars_2 (scalars), scalars (0-d variables))");
  ql_error_release(&err);
}

int main(void) {
  struct ql_error err = {0};
  struct ql_ref_host_options ho = {-1, 0, 2};
  struct ql_ref_host *host = NULL;
  struct ql_plugin plugin;
  QL_CHECK_OK(zr_test_open(&ho, &host, &plugin, &err), err);
  QL_CHECK_OK(zr_test_build_store(host, build_store, &err), err);
  test_names_and_scalars(host, &plugin);
  test_renames(host, &plugin);
  QL_CHECK_OK(zr_test_close(host, &plugin, &err), err);
  ql_error_release(&err);
  QL_TEST_END();
}
