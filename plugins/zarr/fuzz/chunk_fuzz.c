/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the chunk decoders. Byte 0 picks a codec pipeline
 * (every compressor, checksum, transpose and sharding layout qlink_zarr
 * reads, zarr-python 3's numcodecs.<id> codecs, then v2 pipelines with
 * numcodecs filters, compressors and checksums), byte 1 the element
 * type, bytes 2-3 the chunk shape; the rest is
 * the stored chunk. Must never crash, leak, hang or write out of bounds;
 * corrupt input is an error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_zarr/codecs.h"
#include "qlink_zarr/dtype.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const PIPELINES[] = {
    "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
    "[{\"name\":\"bytes\"},{\"name\":\"blosc\"}]",
    "[{\"name\":\"bytes\"},{\"name\":\"zstd\"}]",
    "[{\"name\":\"bytes\"},{\"name\":\"gzip\"}]",
    "[{\"name\":\"bytes\"},{\"name\":\"numcodecs.zlib\"}]",
    "[{\"name\":\"bytes\"},{\"name\":\"numcodecs.lz4\"}]",
    "[{\"name\":\"bytes\"},{\"name\":\"zstd\"},{\"name\":\"crc32c\"}]",
    "[{\"name\":\"transpose\",\"configuration\":{\"order\":[1,0]}},{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},{\"name\":\"blosc\"}]",
    "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[1,2],\"codecs\":[{\"name\":\"bytes\"}],"
    "\"index_codecs\":[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}],\"index_location\":\"end\"}}]",
    "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[1,1],\"codecs\":[{\"name\":\"bytes\"},"
    "{\"name\":\"zstd\"}],\"index_codecs\":[{\"name\":\"bytes\"}],\"index_location\":\"start\"}}]",
    "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2,2],\"codecs\":[{\"name\":\"bytes\"},"
    "{\"name\":\"gzip\"}],\"index_codecs\":[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}]}},{\"name\":\"zstd\"}]",
    "[{\"name\":\"vlen-utf8\"}]",
    "[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"}]",
    /* zarr-python 3's numcodecs.<id> codecs: filters before bytes (decoded
     * on its bytes), compressors and checksums after it */
    "[{\"name\":\"numcodecs.delta\",\"configuration\":{\"dtype\":\"f8\"}},{\"name\":\"bytes\"},"
    "{\"name\":\"numcodecs.bz2\",\"configuration\":{\"level\":1}}]",
    "[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{\"offset\":1000,\"scale\":10,\"dtype\":\"f8\","
    "\"astype\":\"u2\"}},{\"name\":\"bytes\"},{\"name\":\"numcodecs.lzma\",\"configuration\":{}}]",
    "[{\"name\":\"numcodecs.quantize\",\"configuration\":{\"digits\":2,\"dtype\":\"f8\"}},{\"name\":\"bytes\"},"
    "{\"name\":\"numcodecs.shuffle\",\"configuration\":{\"elementsize\":8}},{\"name\":\"numcodecs.zstd\"},"
    "{\"name\":\"numcodecs.crc32\"}]",
    "[{\"name\":\"bytes\"},{\"name\":\"numcodecs.lzma\",\"configuration\":{\"format\":2}},"
    "{\"name\":\"numcodecs.fletcher32\"}]",
    "[{\"name\":\"numcodecs.packbits\"},{\"name\":\"bytes\"},"
    "{\"name\":\"numcodecs.jenkins_lookup3\",\"configuration\":{\"initval\":5}}]",
    "[{\"name\":\"numcodecs.bitround\",\"configuration\":{\"keepbits\":9}},{\"name\":\"numcodecs.astype\","
    "\"configuration\":{\"encode_dtype\":\"f4\",\"decode_dtype\":\"f8\"}},{\"name\":\"bytes\",\"configuration\":"
    "{\"endian\":\"big\"}},{\"name\":\"numcodecs.adler32\",\"configuration\":{\"location\":\"end\"}},"
    "{\"name\":\"numcodecs.crc32c\",\"configuration\":{\"location\":\"start\"}}]",
    "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[1,2],\"codecs\":[{\"name\":"
    "\"numcodecs.delta\",\"configuration\":{\"dtype\":\"f8\"}},{\"name\":\"bytes\"},{\"name\":\"numcodecs.bz2\"}],"
    "\"index_codecs\":[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}]}}]",
};

/* v2 pipelines with numcodecs filters: {compressor, filters}, selected by
 * byte 0 values past PIPELINES (the filters' dtypes are fixed by the
 * filters, not by byte 1: a mismatch with the chunk is an error too). */
static const char *const V2_PIPELINES[][2] = {
    {"null", "[{\"id\":\"delta\",\"dtype\":\"<i4\"},{\"id\":\"shuffle\",\"elementsize\":4}]"},
    {"{\"id\":\"zstd\"}", "[{\"id\":\"fixedscaleoffset\",\"dtype\":\"<f8\",\"astype\":\"<u2\","
                         "\"scale\":10,\"offset\":1000}]"},
    {"null", "[{\"id\":\"quantize\",\"digits\":2,\"dtype\":\"<f8\",\"astype\":\"<f4\"}]"},
    {"null", "[{\"id\":\"bitround\",\"keepbits\":5},{\"id\":\"astype\",\"encode_dtype\":\">f4\","
             "\"decode_dtype\":\"<f8\"}]"},
    {"null", "[{\"id\":\"delta\",\"dtype\":\"<f4\",\"astype\":\"<f8\"},{\"id\":\"fixedscaleoffset\","
             "\"dtype\":\"<f8\",\"astype\":\"|i1\",\"scale\":0.5,\"offset\":-1}]"},
    /* numcodecs compressors and checksums, as compressor and as filter */
    {"{\"id\":\"bz2\",\"level\":1}", "[{\"id\":\"crc32\"}]"},
    {"{\"id\":\"lzma\",\"format\":1,\"check\":-1,\"preset\":null,\"filters\":null}",
     "[{\"id\":\"delta\",\"dtype\":\"<f8\"}]"},
    {"{\"id\":\"fletcher32\"}", "[{\"id\":\"packbits\"}]"},
    {"{\"id\":\"jenkins_lookup3\",\"initval\":0,\"prefix\":null}", "[{\"id\":\"lzma\",\"format\":2}]"},
};

static const char *const DTYPES[] = {"<f8", "<f4", ">i2", "|u1", "<f2", "<M8[ns]", "<U3", "|S5", "|b1", ">u8"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  size_t np = sizeof(PIPELINES) / sizeof(PIPELINES[0]);
  size_t nd = sizeof(DTYPES) / sizeof(DTYPES[0]);
  size_t nv2 = sizeof(V2_PIPELINES) / sizeof(V2_PIPELINES[0]);
  size_t pick = data[0] % (np + nv2);
  const char *pipeline = pick < np ? PIPELINES[pick] : V2_PIPELINES[pick - np][1];
  struct ql_error err = {0};
  struct zr_dtype dtype;
  int vlen = strstr(pipeline, "vlen-utf8") != NULL;
  if (zr_dtype_parse_v2(vlen ? "|O" : DTYPES[data[1] % nd], &dtype, &err) != QL_OK) abort();
  /* shapes up to 16 x 16, even extents for the sharded layouts */
  int64_t shape[2] = {2 * (1 + data[2] % 8), 2 * (1 + data[3] % 8)};
  json_t *codecs = json_loads(pipeline, 0, NULL);
  struct zr_pipeline p;
  if (pick < np) {
    if (zr_pipeline_parse_v3(codecs, 2, &p, &err) != QL_OK) abort();
  } else {
    json_t *compressor = json_loads(V2_PIPELINES[pick - np][0], JSON_DECODE_ANY, NULL);
    int rc = zr_pipeline_from_v2(compressor, codecs, 2, 0, dtype.big_endian, &p, &err);
    json_decref(compressor);
    if (rc != QL_OK) abort();
  }
  uint8_t *out = malloc((size_t)(shape[0] * shape[1] * dtype.size));
  uint8_t fill[32] = {0};
  struct zr_heap heap = {0};
  if (out) {
    zr_chunk_decode(&p, &dtype, 2, shape, fill, data + 4, (int64_t)(size - 4), out, &heap, &err);
  }
  zr_heap_free(&heap);
  free(out);
  zr_pipeline_free(&p);
  json_decref(codecs);
  ql_error_release(&err);
  return 0;
}
