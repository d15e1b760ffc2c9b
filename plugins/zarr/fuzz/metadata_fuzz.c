/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the metadata parsers. The input is one JSON document,
 * read as a consolidated root (v3 zarr.json or v2 .zmetadata), as a v2
 * .zarray (with itself as .zattrs) and as a v3 array zarr.json; every array
 * that parses also gets its CF decoder and a chunk key. Must never crash,
 * leak or read out of bounds. The text goes through zr_json_parse, as the
 * store's documents do (Python's NaN / Infinity tokens). */
#include <stdint.h>
#include <string.h>

#include "json_text.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"
#include "qlink_zarr/cf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const struct zr_array *a) {
  struct ql_error err = {0};
  struct zr_decoder d;
  if (zr_decoder_init(a, 1, &d, &err) == QL_OK) {
    struct zr_value v;
    zr_decode_value(&d, a->fill, &v);
  }
  ql_error_release(&err);
  char key[256];
  int64_t chunk[ZR_MAX_DIMS] = {0};
  zr_chunk_key(a, chunk, key, sizeof(key));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t jerr;
  json_t *doc = zr_json_parse((const char *)data, size, &jerr);
  if (!doc) return 0;
  struct ql_error err = {0};
  struct zr_group g;
  if (zr_group_from_consolidated("fuzz", doc, &g, &err) == QL_OK) {
    for (int64_t i = 0; i < g.n_arrays; i++) exercise(&g.arrays[i]);
  }
  zr_group_free(&g);
  ql_error_release(&err);
  struct zr_array a;
  if (zr_array_parse_v2("a", doc, doc, &a, &err) == QL_OK) exercise(&a);
  zr_array_free(&a);
  ql_error_release(&err);
  if (zr_array_parse_v3("a", doc, &a, &err) == QL_OK) exercise(&a);
  zr_array_free(&a);
  ql_error_release(&err);
  if (json_is_string(doc)) {
    int64_t ns, ref, y, m, d;
    zr_cf_parse_time_units(json_string_value(doc), &ns, &ref, &y, &m, &d);
  }
  json_decref(doc);
  return 0;
}
