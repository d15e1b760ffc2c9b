/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: codec pipeline and dtype tests with exact values. */
#include <blosc.h>
#include <bzlib.h>
#include <lzma.h>
#include <stdio.h>
#include <lz4.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "ql_test.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/codecs.h"
#include "qlink_zarr/dtype.h"

static struct zr_dtype f64(void) {
  struct zr_dtype d = {ZR_FLOAT, 8, 0, 8, 0, ""};
  return d;
}

static int decode_v2(const char *compressor_json, const char *dtype, int order_f, const int64_t *shape, int32_t ndim,
                     const uint8_t *in, int64_t n, uint8_t *out, struct ql_error *err) {
  struct zr_dtype d;
  int rc = zr_dtype_parse_v2(dtype, &d, err);
  if (rc != QL_OK) return rc;
  json_t *comp = compressor_json ? json_loads(compressor_json, 0, NULL) : NULL;
  struct zr_pipeline p;
  rc = zr_pipeline_from_v2(comp, NULL, ndim, order_f, d.big_endian, &p, err);
  uint8_t fill[8] = {0};
  if (rc == QL_OK) rc = zr_chunk_decode(&p, &d, ndim, shape, fill, in, n, out, NULL, err);
  zr_pipeline_free(&p);
  if (comp) json_decref(comp);
  return rc;
}

static void test_crc32c(void) {
  QL_CHECK_INT(zr_crc32c((const uint8_t *)"123456789", 9), 0xE3069283u);
  QL_CHECK_INT(zr_crc32c((const uint8_t *)"", 0), 0);
}

static void test_dtypes(void) {
  struct ql_error err = {0};
  struct zr_dtype d;
  QL_CHECK_OK(zr_dtype_parse_v2("<f4", &d, &err), err);
  QL_CHECK_INT(d.type, ZR_FLOAT);
  QL_CHECK_INT(d.size, 4);
  QL_CHECK_OK(zr_dtype_parse_v2(">i8", &d, &err), err);
  QL_CHECK_INT(d.big_endian, 1);
  QL_CHECK_OK(zr_dtype_parse_v2("<M8[ms]", &d, &err), err);
  QL_CHECK_INT(d.type, ZR_DATETIME);
  QL_CHECK_INT(d.unit_ns, 1000000);
  QL_CHECK_OK(zr_dtype_parse_v2("<U7", &d, &err), err);
  QL_CHECK_INT(d.size, 28);
  QL_CHECK_OK(zr_dtype_parse_v2("|S3", &d, &err), err);
  QL_CHECK_INT(d.type, ZR_BYTES);
  QL_CHECK_INT(zr_dtype_parse_v2("<c8", &d, &err), QL_ENOTSUP);
  QL_CHECK(strstr(ql_error_message(&err), "'<c8'") != NULL);
  QL_CHECK_INT(zr_dtype_parse_v2("<M8[Y]", &d, &err), QL_ENOTSUP);
  QL_CHECK_INT(zr_dtype_parse_v2("x", &d, &err), QL_EDATA);
  json_t *j = json_loads("{\"name\":\"fixed_length_utf32\",\"configuration\":{\"length_bytes\":12}}", 0, NULL);
  QL_CHECK_OK(zr_dtype_parse_v3(j, &d, &err), err);
  QL_CHECK_INT(d.type, ZR_UNICODE);
  QL_CHECK_INT(d.size, 12);
  json_decref(j);
  j = json_string("uint16");
  QL_CHECK_OK(zr_dtype_parse_v3(j, &d, &err), err);
  QL_CHECK_INT(d.type, ZR_UINT);
  json_decref(j);
  j = json_string("complex64");
  QL_CHECK_INT(zr_dtype_parse_v3(j, &d, &err), QL_ENOTSUP);
  json_decref(j);
  QL_CHECK(zr_half_to_float(0x3C00) == 1.0f);
  QL_CHECK(zr_half_to_float(0xC000) == -2.0f);
  QL_CHECK(isinf(zr_half_to_float(0x7C00)));
  QL_CHECK(zr_half_to_float(0x0001) == ldexpf(1.0f, -24));
  QL_CHECK(isnan(zr_half_to_float(0x7E00)));
  ql_error_release(&err);
}

static void test_compressors(void) {
  struct ql_error err = {0};
  double values[6] = {1.5, -2, 3.25, 0, 1e300, -7};
  int64_t shape[2] = {2, 3};
  double out[6];
  uint8_t buf[1024];
  /* zstd */
  size_t n = ZSTD_compress(buf, sizeof(buf), values, sizeof(values), 3);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_v2("{\"id\":\"zstd\"}", "<f8", 0, shape, 2, buf, (int64_t)n, (uint8_t *)out, &err), err);
  QL_CHECK(memcmp(out, values, sizeof(values)) == 0);
  QL_CHECK_INT(decode_v2("{\"id\":\"zstd\"}", "<f8", 0, shape, 2, buf, (int64_t)n - 3, (uint8_t *)out, &err), QL_EDATA);
  /* blosc with shuffle */
  int bn = blosc_compress_ctx(5, 1, 8, sizeof(values), values, buf, sizeof(buf), "lz4", 0, 1);
  QL_CHECK(bn > 0);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_v2("{\"id\":\"blosc\"}", "<f8", 0, shape, 2, buf, bn, (uint8_t *)out, &err), err);
  QL_CHECK(memcmp(out, values, sizeof(values)) == 0);
  QL_CHECK_INT(decode_v2("{\"id\":\"blosc\"}", "<f8", 0, shape, 2, buf, bn / 2, (uint8_t *)out, &err), QL_EDATA);
  /* zlib and gzip */
  uLongf zn = sizeof(buf);
  QL_CHECK_INT(compress2(buf, &zn, (const Bytef *)values, sizeof(values), 6), Z_OK);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_v2("{\"id\":\"zlib\"}", "<f8", 0, shape, 2, buf, (int64_t)zn, (uint8_t *)out, &err), err);
  QL_CHECK(memcmp(out, values, sizeof(values)) == 0);
  QL_CHECK_INT(decode_v2("{\"id\":\"zlib\"}", "<f8", 0, shape, 2, buf, (int64_t)zn - 4, (uint8_t *)out, &err), QL_EDATA);
  z_stream zs;
  memset(&zs, 0, sizeof(zs));
  deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = (Bytef *)values;
  zs.avail_in = sizeof(values);
  zs.next_out = buf;
  zs.avail_out = sizeof(buf);
  QL_CHECK_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
  int64_t gn = (int64_t)(sizeof(buf) - zs.avail_out);
  deflateEnd(&zs);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_v2("{\"id\":\"gzip\"}", "<f8", 0, shape, 2, buf, gn, (uint8_t *)out, &err), err);
  QL_CHECK(memcmp(out, values, sizeof(values)) == 0);
  /* numcodecs lz4: 4-byte little-endian size, then a raw LZ4 block */
  int ln = LZ4_compress_default((const char *)values, (char *)buf + 4, sizeof(values), (int)sizeof(buf) - 4);
  buf[0] = sizeof(values);
  buf[1] = buf[2] = buf[3] = 0;
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_v2("{\"id\":\"lz4\"}", "<f8", 0, shape, 2, buf, ln + 4, (uint8_t *)out, &err), err);
  QL_CHECK(memcmp(out, values, sizeof(values)) == 0);
  buf[0] = 40; /* a wrong size header */
  QL_CHECK_INT(decode_v2("{\"id\":\"lz4\"}", "<f8", 0, shape, 2, buf, ln + 4, (uint8_t *)out, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "lz4") != NULL);
  /* uncompressed, size mismatch */
  QL_CHECK_INT(decode_v2(NULL, "<f8", 0, shape, 2, (const uint8_t *)values, 40, (uint8_t *)out, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "expected 48") != NULL);
  QL_CHECK_INT(decode_v2("{\"id\":\"zfpy\"}", "<f8", 0, shape, 2, buf, 1, (uint8_t *)out, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "unsupported compressor 'zfpy'");
  ql_error_release(&err);
}

static void test_order_and_endianness(void) {
  struct ql_error err = {0};
  int64_t shape[2] = {2, 3};
  /* F order: column-major storage of [[0,1,2],[3,4,5]] */
  double fdata[6] = {0, 3, 1, 4, 2, 5};
  double out[6];
  QL_CHECK_OK(decode_v2(NULL, "<f8", 1, shape, 2, (const uint8_t *)fdata, 48, (uint8_t *)out, &err), err);
  for (int i = 0; i < 6; i++) QL_CHECK(out[i] == i);
  /* big-endian int32 */
  uint8_t be[8] = {0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE};
  int32_t iv[2];
  int64_t s1[1] = {2};
  QL_CHECK_OK(decode_v2(NULL, ">i4", 0, s1, 1, be, 8, (uint8_t *)iv, &err), err);
  QL_CHECK_INT(iv[0], 258);
  QL_CHECK_INT(iv[1], -2);
  ql_error_release(&err);
}

static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void test_v3_pipelines(void) {
  struct ql_error err = {0};
  struct zr_dtype d = f64();
  /* transpose(order=[1,0]) + bytes + crc32c on a 2x3 array */
  json_t *codecs = json_loads(
      "[{\"name\":\"transpose\",\"configuration\":{\"order\":[1,0]}},{\"name\":\"bytes\",\"configuration\":"
      "{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]",
      0, NULL);
  struct zr_pipeline p;
  QL_CHECK_OK(zr_pipeline_parse_v3(codecs, 2, &p, &err), err);
  uint8_t buf[256];
  double enc[6] = {0, 3, 1, 4, 2, 5}; /* transposed: shape 3x2 */
  memcpy(buf, enc, 48);
  uint32_t crc = zr_crc32c(buf, 48);
  memcpy(buf + 48, &crc, 4);
  int64_t shape[2] = {2, 3};
  double out[6];
  uint8_t fill[8] = {0};
  QL_CHECK_OK(zr_chunk_decode(&p, &d, 2, shape, fill, buf, 52, (uint8_t *)out, NULL, &err), err);
  for (int i = 0; i < 6; i++) QL_CHECK(out[i] == i);
  buf[5] ^= 1;
  QL_CHECK_INT(zr_chunk_decode(&p, &d, 2, shape, fill, buf, 52, (uint8_t *)out, NULL, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "crc32c") != NULL);
  zr_pipeline_free(&p);
  json_decref(codecs);
  /* codecs out of order */
  codecs = json_loads("[{\"name\":\"zstd\"},{\"name\":\"bytes\"}]", 0, NULL);
  QL_CHECK_INT(zr_pipeline_parse_v3(codecs, 2, &p, &err), QL_EDATA);
  zr_pipeline_free(&p);
  json_decref(codecs);

  /* sharding: a 4x4 shard of 2x2 inner chunks; chunk (0,1) missing */
  codecs = json_loads(
      "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2,2],\"codecs\":[{\"name\":\"bytes\"}],"
      "\"index_codecs\":[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}],\"index_location\":\"end\"}}]",
      0, NULL);
  QL_CHECK_OK(zr_pipeline_parse_v3(codecs, 2, &p, &err), err);
  uint8_t shard[512];
  int64_t off = 0;
  uint8_t index[64 + 4];
  for (int c = 0; c < 4; c++) {
    if (c == 1) {
      put_u64(index + 16 * c, UINT64_MAX);
      put_u64(index + 16 * c + 8, UINT64_MAX);
      continue;
    }
    int ci = c / 2, cj = c % 2;
    for (int k = 0; k < 4; k++) {
      double v = (ci * 2 + k / 2) * 4 + cj * 2 + k % 2;
      memcpy(shard + off + 8 * k, &v, 8);
    }
    put_u64(index + 16 * c, (uint64_t)off);
    put_u64(index + 16 * c + 8, 32);
    off += 32;
  }
  crc = zr_crc32c(index, 64);
  memcpy(index + 64, &crc, 4);
  memcpy(shard + off, index, 68);
  int64_t sshape[2] = {4, 4};
  double sout[16];
  double nan_fill = -1;
  QL_CHECK_OK(zr_chunk_decode(&p, &d, 2, sshape, (const uint8_t *)&nan_fill, shard, off + 68, (uint8_t *)sout, NULL, &err),
              err);
  for (int r = 0; r < 4; r++) {
    for (int c = 0; c < 4; c++) {
      double want = (r < 2 && c >= 2) ? -1 : r * 4 + c;
      QL_CHECK(sout[r * 4 + c] == want);
    }
  }
  /* an inner chunk pointing outside the shard */
  put_u64(shard + off + 0, 1000);
  QL_CHECK_INT(zr_chunk_decode(&p, &d, 2, sshape, (const uint8_t *)&nan_fill, shard, off + 68, (uint8_t *)sout, NULL, &err),
               QL_EDATA);
  QL_CHECK_INT(zr_chunk_decode(&p, &d, 2, sshape, (const uint8_t *)&nan_fill, shard, 20, (uint8_t *)sout, NULL, &err),
               QL_EDATA);
  zr_pipeline_free(&p);
  json_decref(codecs);
  ql_error_release(&err);
}

static void test_vlen_utf8(void) {
  struct ql_error err = {0};
  struct zr_dtype d;
  QL_CHECK_OK(zr_dtype_parse_v2("|O", &d, &err), err);
  QL_CHECK_INT(d.type, ZR_VLEN);
  json_t *filters = json_loads("[{\"id\":\"vlen-utf8\"}]", 0, NULL);
  struct zr_pipeline p;
  QL_CHECK_OK(zr_pipeline_from_v2(NULL, filters, 1, 0, 0, &p, &err), err);
  QL_CHECK_OK(zr_pipeline_check_dtype(&p, &d, &err), err);
  /* 3 items: "ab", "", "\xe2\x82\xac" */
  const uint8_t chunk[] = {3, 0, 0, 0, 2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0, 3, 0, 0, 0, 0xE2, 0x82, 0xAC};
  int64_t shape[1] = {3};
  uint64_t out[6];
  uint8_t fill[16] = {0};
  struct zr_heap heap = {0};
  QL_CHECK_OK(zr_chunk_decode(&p, &d, 1, shape, fill, chunk, sizeof(chunk), (uint8_t *)out, &heap, &err), err);
  QL_CHECK_INT(out[0], 0);
  QL_CHECK_INT(out[1], 2);
  QL_CHECK_INT(out[3], 0);
  QL_CHECK_INT(out[4], 2);
  QL_CHECK_INT(out[5], 3);
  QL_CHECK_INT(heap.len, 5);
  QL_CHECK(memcmp(heap.data, "ab\xe2\x82\xac", 5) == 0);
  QL_CHECK_INT(zr_chunk_decode(&p, &d, 1, shape, fill, chunk, sizeof(chunk) - 1, (uint8_t *)out, &heap, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "vlen-utf8") != NULL);
  int64_t four[1] = {4};
  uint64_t out4[8];
  QL_CHECK_INT(zr_chunk_decode(&p, &d, 1, four, fill, chunk, sizeof(chunk), (uint8_t *)out4, &heap, &err), QL_EDATA);
  zr_heap_free(&heap);
  zr_pipeline_free(&p);
  /* object dtype without the filter is refused */
  QL_CHECK_OK(zr_pipeline_from_v2(NULL, NULL, 1, 0, 0, &p, &err), err);
  QL_CHECK_INT(zr_pipeline_check_dtype(&p, &d, &err), QL_ENOTSUP);
  zr_pipeline_free(&p);
  json_decref(filters);
  ql_error_release(&err);
}

/* Decode `n` bytes of a 1-D uint8 chunk of `count` elements through v3
 * `codecs_json` (or, when it starts with '{', a v2 compressor). */
static int decode_u8(const char *codecs_json, const uint8_t *in, int64_t n, int64_t count, uint8_t *out,
                     struct ql_error *err) {
  struct zr_dtype d = {ZR_UINT, 1, 0, 1, 0, ""};
  json_t *j = json_loads(codecs_json, 0, NULL);
  struct zr_pipeline p;
  int rc = codecs_json[0] == '{' ? zr_pipeline_from_v2(j, NULL, 1, 0, 0, &p, err) : zr_pipeline_parse_v3(j, 1, &p, err);
  uint8_t fill[1] = {0};
  if (rc == QL_OK) rc = zr_chunk_decode(&p, &d, 1, &count, fill, in, n, out, NULL, err);
  zr_pipeline_free(&p);
  json_decref(j);
  return rc;
}

static int hex_bytes(const char *hex, uint8_t *out) {
  int n = 0;
  for (; hex[0] && hex[1]; hex += 2) {
    unsigned v;
    sscanf(hex, "%2x", &v);
    out[n++] = (uint8_t)v;
  }
  return n;
}

/* Reference values: numcodecs 0.16's codecs on the same bytes (the 4
 * checksum bytes they store, little-endian). */
static void test_numcodecs_checksums(void) {
  QL_CHECK_INT(zr_fletcher32((const uint8_t *)"123456789", 9), 0x09df09d5u);
  QL_CHECK_INT(zr_fletcher32((const uint8_t *)"a", 1), 0x61006100u); /* an odd byte: the high half */
  uint8_t seq[768];
  for (int i = 0; i < 768; i++) seq[i] = (uint8_t)i;
  QL_CHECK_INT(zr_fletcher32(seq, 13), 0x707f2a24u);
  QL_CHECK_INT(zr_fletcher32(seq, 768), 0x600040bfu); /* past one 360-word block */
  QL_CHECK_INT(zr_jenkins_lookup3(seq, 0, 0), 0xdeadbeefu);
  QL_CHECK_INT(zr_jenkins_lookup3((const uint8_t *)"a", 1, 0), 0x58d68708u);
  QL_CHECK_INT(zr_jenkins_lookup3((const uint8_t *)"123456789", 9, 0), 0x845d9a96u);
  QL_CHECK_INT(zr_jenkins_lookup3((const uint8_t *)"123456789", 9, 7), 0xd9b2c617u);
  QL_CHECK_INT(zr_jenkins_lookup3(seq, 12, 0), 0x5e4aa593u);
  QL_CHECK_INT(zr_jenkins_lookup3(seq, 13, 7), 0x6243a3f2u);
  QL_CHECK_INT(zr_jenkins_lookup3(seq, 768, 7), 0x4c6908d4u);

  struct ql_error err = {0};
  uint8_t buf[64], out[16];
  /* numcodecs.CRC32().encode(b"123456789"): the checksum first */
  int n = hex_bytes("2639f4cb", buf);
  memcpy(buf + n, "123456789", 9);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_u8("{\"id\":\"crc32\"}", buf, 13, 9, out, &err), err);
  QL_CHECK(memcmp(out, "123456789", 9) == 0);
  QL_CHECK_OK(decode_u8("[{\"name\":\"bytes\"},{\"name\":\"numcodecs.crc32\",\"configuration\":{\"location\":\"start\"}}]",
                        buf, 13, 9, out, &err),
              err);
  buf[6] ^= 1;
  QL_CHECK_INT(decode_u8("{\"id\":\"crc32\"}", buf, 13, 9, out, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "crc32: checksum mismatch (stored cbf43926, computed 6d833292)");
  /* adler32 at the end (location "end"), then crc32c, fletcher32, jenkins */
  memcpy(buf, "123456789", 9);
  hex_bytes("de011e09", buf + 9);
  QL_CHECK_OK(decode_u8("{\"id\":\"adler32\",\"location\":\"end\"}", buf, 13, 9, out, &err), err);
  QL_CHECK_INT(decode_u8("{\"id\":\"adler32\"}", buf, 13, 9, out, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "adler32: checksum mismatch") != NULL);
  uint32_t c32c = zr_crc32c(buf, 9);
  memcpy(buf + 9, &c32c, 4);
  QL_CHECK_OK(decode_u8("[{\"name\":\"bytes\"},{\"name\":\"numcodecs.crc32c\",\"configuration\":{}}]", buf, 13, 9, out,
                        &err),
              err);
  hex_bytes("d509df09", buf + 9);
  QL_CHECK_OK(decode_u8("{\"id\":\"fletcher32\"}", buf, 13, 9, out, &err), err);
  hex_bytes("17c6b2d9", buf + 9);
  QL_CHECK_OK(decode_u8("[{\"name\":\"bytes\"},{\"name\":\"numcodecs.jenkins_lookup3\",\"configuration\":"
                        "{\"initval\":7,\"prefix\":null}}]",
                        buf, 13, 9, out, &err),
              err);
  QL_CHECK_INT(decode_u8("{\"id\":\"jenkins_lookup3\"}", buf, 13, 9, out, &err), QL_EDATA);
  QL_CHECK_INT(decode_u8("{\"id\":\"fletcher32\"}", buf, 3, 0, out, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "fletcher32: chunk shorter than its checksum");
  /* parameters numcodecs would not accept, and one qlink_zarr does not */
  QL_CHECK_INT(decode_u8("{\"id\":\"crc32\",\"location\":\"middle\"}", buf, 13, 9, out, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "crc32: location must be \"start\" or \"end\"");
  QL_CHECK_INT(decode_u8("{\"id\":\"jenkins_lookup3\",\"prefix\":\"AAE=\"}", buf, 13, 9, out, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "jenkins_lookup3: a prefix is not supported");
  ql_error_release(&err);
}

/* numcodecs.BZ2() and numcodecs.LZMA() (format 1, xz; format 2,
 * lzma-alone) on b"hello hello hello" / b"hello" */
static void test_bz2_lzma(void) {
  static const char *bz2_hex =
      "425a68313141592653599e625bfe000002910040000244a000211460668291ef23470bb9229c28484f312dff00";
  static const char *xz_hex =
      "fd377a585a000004e6d6b4460200210116000000742fe5a3e00010000b5d00341949ee8de94f7e15e00000004b88e6da4480077600012711b"
      "c27f3901fb6f37d010000000004595a";
  struct ql_error err = {0};
  uint8_t buf[512], out[64];
  const char *hello3 = "hello hello hello";
  int n = hex_bytes(bz2_hex, buf);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_u8("{\"id\":\"bz2\",\"level\":1}", buf, n, 17, out, &err), err);
  QL_CHECK(memcmp(out, hello3, 17) == 0);
  /* two streams, as bz2.decompress reads them; then garbage it ignores */
  memcpy(buf + n, buf, (size_t)n);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_u8("[{\"name\":\"bytes\"},{\"name\":\"numcodecs.bz2\",\"configuration\":{\"level\":1}}]", buf, 2 * n,
                        34, out, &err),
              err);
  QL_CHECK(memcmp(out, hello3, 17) == 0 && memcmp(out + 17, hello3, 17) == 0);
  memcpy(buf + n, "BZh9 not a stream", 17);
  QL_CHECK_OK(decode_u8("{\"id\":\"bz2\"}", buf, n + 17, 17, out, &err), err);
  /* truncated, corrupt, or not bzip2 at all */
  QL_CHECK_INT(decode_u8("{\"id\":\"bz2\"}", buf, n - 5, 17, out, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "bz2: truncated chunk (the stream has no end)");
  buf[20] ^= 0x55;
  QL_CHECK_INT(decode_u8("{\"id\":\"bz2\"}", buf, n, 17, out, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "bz2: corrupt chunk") != NULL);
  QL_CHECK_INT(decode_u8("{\"id\":\"bz2\"}", (const uint8_t *)"hello", 5, 17, out, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "bz2: corrupt chunk") != NULL);
  /* a stream of the wrong size */
  n = hex_bytes(bz2_hex, buf);
  QL_CHECK_INT(decode_u8("{\"id\":\"bz2\"}", buf, n, 16, out, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "bz2: decoded 17 bytes, expected 16");

  n = hex_bytes(xz_hex, buf);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_u8("{\"id\":\"lzma\",\"format\":1,\"check\":-1,\"preset\":null,\"filters\":null}", buf, n, 17, out,
                        &err),
              err);
  QL_CHECK(memcmp(out, hello3, 17) == 0);
  QL_CHECK_OK(decode_u8("[{\"name\":\"bytes\"},{\"name\":\"numcodecs.lzma\",\"configuration\":{}}]", buf, n, 17, out, &err),
              err);
  QL_CHECK_OK(decode_u8("{\"id\":\"lzma\",\"format\":0}", buf, n, 17, out, &err), err);
  QL_CHECK_INT(decode_u8("{\"id\":\"lzma\"}", buf, n - 9, 17, out, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "lzma: truncated chunk (the stream has no end)");
  buf[40] ^= 0x10;
  QL_CHECK_INT(decode_u8("{\"id\":\"lzma\"}", buf, n, 17, out, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "lzma: corrupt chunk") != NULL);
  n = hex_bytes("5d00008000ffffffffffffffff00341949ee8e6821ffffffb9e00000", buf);
  memset(out, 0, sizeof(out));
  QL_CHECK_OK(decode_u8("{\"id\":\"lzma\",\"format\":2}", buf, n, 5, out, &err), err);
  QL_CHECK(memcmp(out, "hello", 5) == 0);
  QL_CHECK_INT(decode_u8("{\"id\":\"lzma\",\"format\":1}", buf, n, 5, out, &err), QL_EDATA);
  QL_CHECK_INT(decode_u8("{\"id\":\"lzma\",\"format\":3,\"filters\":[{\"id\":33}]}", buf, n, 5, out, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "lzma: raw format (format 3) is not supported");
  QL_CHECK_INT(decode_u8("{\"id\":\"lzma\",\"format\":\"xz\"}", buf, n, 5, out, &err), QL_EDATA);
  /* a dictionary larger than the decoder's memory limit (lzma-alone header:
   * properties, then the dictionary size, 1 GiB) */
  uint8_t big[32] = {0x5d, 0x00, 0x00, 0x00, 0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00};
  QL_CHECK_INT(decode_u8("{\"id\":\"lzma\",\"format\":2}", big, 32, 5, out, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "lzma: the stream needs more than 256 MiB to decode");
  ql_error_release(&err);
}

/* Decompressors whose output size is not known upfront: a zstd frame
 * without a content size (streamed), inside gzip, which then has no
 * expected size either (the output grows past its first 64 KiB) */
static void test_streamed_sizes(void) {
  struct ql_error err = {0};
  enum { N = 40000 };
  double *values = malloc(N * sizeof(double)), *out = malloc(N * sizeof(double));
  size_t zcap = ZSTD_compressBound(N * sizeof(double)), gcap = zcap + 1024;
  uint8_t *z = malloc(zcap), *g = malloc(gcap);
  for (int i = 0; i < N; i++) values[i] = i * 0.25;
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  ZSTD_outBuffer zo = {z, zcap, 0};
  ZSTD_inBuffer zi = {values, N * sizeof(double), 0};
  QL_CHECK_INT(ZSTD_compressStream2(cctx, &zo, &zi, ZSTD_e_end), 0);
  ZSTD_freeCCtx(cctx);
  QL_CHECK(ZSTD_getFrameContentSize(z, zo.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
  z_stream zs;
  memset(&zs, 0, sizeof(zs));
  deflateInit2(&zs, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = z;
  zs.avail_in = (uInt)zo.pos;
  zs.next_out = g;
  zs.avail_out = (uInt)gcap;
  QL_CHECK_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
  int64_t gn = (int64_t)(gcap - zs.avail_out);
  deflateEnd(&zs);
  json_t *codecs = json_loads("[{\"name\":\"bytes\"},{\"name\":\"zstd\"},{\"name\":\"gzip\"}]", 0, NULL);
  struct zr_pipeline p;
  QL_CHECK_OK(zr_pipeline_parse_v3(codecs, 1, &p, &err), err);
  struct zr_dtype d = f64();
  int64_t shape[1] = {N};
  uint8_t fill[8] = {0};
  memset(out, 0, N * sizeof(double));
  QL_CHECK_OK(zr_chunk_decode(&p, &d, 1, shape, fill, g, gn, (uint8_t *)out, NULL, &err), err);
  QL_CHECK(memcmp(out, values, N * sizeof(double)) == 0);
  /* one element fewer: the streamed zstd frame overruns it */
  shape[0] = N - 1;
  QL_CHECK_INT(zr_chunk_decode(&p, &d, 1, shape, fill, g, gn, (uint8_t *)out, NULL, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "zstd: decoded more than 319992 bytes");
  zr_pipeline_free(&p);
  json_decref(codecs);
  /* the streamed frame alone, cut short */
  codecs = json_loads("[{\"name\":\"bytes\"},{\"name\":\"zstd\"}]", 0, NULL);
  QL_CHECK_OK(zr_pipeline_parse_v3(codecs, 1, &p, &err), err);
  shape[0] = N;
  QL_CHECK_OK(zr_chunk_decode(&p, &d, 1, shape, fill, z, (int64_t)zo.pos, (uint8_t *)out, NULL, &err), err);
  QL_CHECK_INT(zr_chunk_decode(&p, &d, 1, shape, fill, z, (int64_t)zo.pos - 10, (uint8_t *)out, NULL, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "zstd: truncated chunk");
  zr_pipeline_free(&p);
  json_decref(codecs);
  free(values);
  free(out);
  free(z);
  free(g);
  ql_error_release(&err);
}

/* v3 numcodecs filters: array -> array codecs before bytes, decoded on the
 * bytes like v2 filters; what is refused */
static void test_v3_numcodecs_filters(void) {
  struct ql_error err = {0};
  struct zr_dtype i16 = {ZR_INT, 2, 0, 2, 0, ""};
  /* Delta(dtype="i2", astype="i4") of [5, 6, 4, 7]: [5, 1, -2, 3] as int32,
   * with a big-endian bytes codec (the filter's own dtype decides) */
  json_t *codecs = json_loads("[{\"name\":\"numcodecs.delta\",\"configuration\":{\"dtype\":\"i2\",\"astype\":\"i4\"}},"
                              "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},{\"name\":\"numcodecs.zlib\"}]",
                              0, NULL);
  struct zr_pipeline p;
  QL_CHECK_OK(zr_pipeline_parse_v3(codecs, 1, &p, &err), err);
  QL_CHECK_OK(zr_pipeline_check_dtype(&p, &i16, &err), err);
  char desc[64];
  QL_CHECK_STR(zr_pipeline_describe(&p, desc, sizeof(desc)), "delta+bytes+zlib");
  int32_t deltas[4] = {5, 1, -2, 3};
  uint8_t z[128];
  uLongf zn = sizeof(z);
  QL_CHECK_INT(compress2(z, &zn, (const Bytef *)deltas, sizeof(deltas), 6), Z_OK);
  int64_t shape[1] = {4};
  int16_t out[4] = {0};
  uint8_t fill[2] = {0};
  QL_CHECK_OK(zr_chunk_decode(&p, &i16, 1, shape, fill, z, (int64_t)zn, (uint8_t *)out, NULL, &err), err);
  QL_CHECK(out[0] == 5 && out[1] == 6 && out[2] == 4 && out[3] == 7);
  /* three elements' worth of int32 for a chunk of four */
  zn = sizeof(z);
  compress2(z, &zn, (const Bytef *)deltas, 12, 6);
  QL_CHECK_INT(zr_chunk_decode(&p, &i16, 1, shape, fill, z, (int64_t)zn, (uint8_t *)out, NULL, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "zlib: decoded 12 bytes, expected 16"); /* 4 int32 deltas */
  struct zr_dtype f32 = {ZR_FLOAT, 4, 0, 4, 0, ""};
  QL_CHECK_INT(zr_pipeline_check_dtype(&p, &f32, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "numcodecs.delta decodes to int16, not the array's float32 (a cast is not supported)");
  zr_pipeline_free(&p);
  json_decref(codecs);

  /* a big-endian filter dtype: its elements are byte-swapped into the
   * array; bitround (no dtype) and fixedscaleoffset chained */
  codecs = json_loads("[{\"name\":\"numcodecs.bitround\",\"configuration\":{\"keepbits\":3}},"
                      "{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{\"offset\":1000,\"scale\":10,"
                      "\"dtype\":\">f8\",\"astype\":\"u2\"}},{\"name\":\"bytes\"}]",
                      0, NULL);
  QL_CHECK_OK(zr_pipeline_parse_v3(codecs, 1, &p, &err), err);
  uint16_t packed[3] = {0, 25, 65535}; /* (x - 1000) * 10 */
  struct zr_dtype f64d = f64();
  double dout[3] = {0};
  int64_t shape3[1] = {3};
  QL_CHECK_OK(zr_chunk_decode(&p, &f64d, 1, shape3, fill, (const uint8_t *)packed, 6, (uint8_t *)dout, NULL, &err), err);
  QL_CHECK(dout[0] == 1000.0 && dout[1] == 1002.5 && dout[2] == 7553.5);
  zr_pipeline_free(&p);
  json_decref(codecs);

  /* refused layouts, each naming the codec */
  const char *refused[][2] = {
      {"[{\"name\":\"transpose\",\"configuration\":{\"order\":[0]}},{\"name\":\"numcodecs.delta\",\"configuration\":"
       "{\"dtype\":\"i2\"}},{\"name\":\"bytes\"}]",
       "numcodecs.delta together with transpose is not supported"},
      {"[{\"name\":\"numcodecs.astype\",\"configuration\":{\"encode_dtype\":\"f4\",\"decode_dtype\":\"f8\"}},"
       "{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2],\"codecs\":[{\"name\":\"bytes\"}],"
       "\"index_codecs\":[{\"name\":\"bytes\"}]}}]",
       "numcodecs.astype before sharding_indexed is not supported (only before bytes)"},
      {"[{\"name\":\"bytes\"},{\"name\":\"numcodecs.zfpy\"}]", "unsupported codec 'numcodecs.zfpy'"},
      {"[{\"name\":\"bytes\"},{\"name\":\"bz2\"}]", "unsupported codec 'bz2'"},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    codecs = json_loads(refused[i][0], 0, NULL);
    QL_CHECK_INT(zr_pipeline_parse_v3(codecs, 1, &p, &err), QL_ENOTSUP);
    QL_CHECK_STR(ql_error_message(&err), refused[i][1]);
    zr_pipeline_free(&p);
    json_decref(codecs);
  }
  /* numcodecs.shuffle is bytes -> bytes: before bytes it is out of order */
  codecs = json_loads("[{\"name\":\"numcodecs.shuffle\",\"configuration\":{\"elementsize\":2}},{\"name\":\"bytes\"}]", 0,
                      NULL);
  QL_CHECK_INT(zr_pipeline_parse_v3(codecs, 1, &p, &err), QL_EDATA);
  zr_pipeline_free(&p);
  json_decref(codecs);
  ql_error_release(&err);
}

int main(void) {
  test_vlen_utf8();
  test_crc32c();
  test_dtypes();
  test_compressors();
  test_order_and_endianness();
  test_v3_pipelines();
  test_numcodecs_checksums();
  test_bz2_lzma();
  test_v3_numcodecs_filters();
  test_streamed_sizes();
  QL_TEST_END();
}
