/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: partial reads of a sharded v3 array (shard_read.h),
 * the shard index and inner-chunk ranges read through an object store.
 * Byte 0 picks the array's sharding layout (index at the end or start,
 * with or without crc32c, raw or compressed inner chunks), bytes 1-2 the
 * box read (origin and extents, one nibble each, over an 8 x 8 array of
 * 2 x 4 inner chunks in one shard); the rest is the stored shard. Must
 * never crash, leak, hang or read out of bounds; corrupt input is an
 * error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"
#include "qlink_zarr/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* {index codecs, index location, inner codecs} */
static const char *const LAYOUTS[][3] = {
    {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]", "end",
     "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]"},
    {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]", "start",
     "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]"},
    {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]", "end",
     "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"zstd\"}]"},
    {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]", "start",
     "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"gzip\"}]"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  const char *const *l = LAYOUTS[data[0] % (sizeof(LAYOUTS) / sizeof(LAYOUTS[0]))];
  char meta[2048];
  snprintf(meta, sizeof meta,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[8,8],\"data_type\":\"int32\","
           "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[8,8]}},"
           "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":-7,"
           "\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2,4],\"codecs\":%s,"
           "\"index_codecs\":%s,\"index_location\":\"%s\"}}],\"dimension_names\":[\"t\",\"x\"]}",
           l[2], l[0], l[1]);
  struct ql_error err = {0};
  json_t *doc = json_loads(meta, 0, NULL);
  struct zr_array a;
  if (!doc || zr_array_parse_v3("v", doc, &a, &err) != QL_OK) abort();
  json_decref(doc);
  struct zr_store st;
  memset(&st, 0, sizeof(st));
  if (ql_memory_store_new(&st.os, &err) != QL_OK) abort();
  st.url = "memory:///f.zarr";
  st.root = "f.zarr";
  if (ql_memory_store_put(&st.os, "f.zarr/v/c/0/0", data + 3, (int64_t)(size - 3), &err) != QL_OK) abort();
  int64_t lo[2] = {data[1] % 8, (data[1] >> 4) % 8};
  int64_t count[2] = {1 + data[2] % 8, 1 + (data[2] >> 4) % 8};
  for (int i = 0; i < 2; i++) {
    if (lo[i] + count[i] > 8) count[i] = 8 - lo[i];
  }
  int32_t out[64];
  struct zr_scratch scratch = {NULL, 0, {NULL, 0}};
  int64_t chunks = 0, bytes = 0;
  zr_read_box(&st, &a, NULL, lo, count, (uint8_t *)out, NULL, &scratch, &chunks, &bytes, &err);
  ql_error_release(&err);
  zr_scratch_free(&scratch);
  st.os.release(&st.os);
  zr_array_free(&a);
  return 0;
}
