/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: codec pipeline parsing and chunk decoding. See codecs.h. */
#include "qlink_zarr/codecs.h"

#include <blosc.h>
#include <bzlib.h>
#include <lzma.h>
#include <lz4.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "numcodecs_filters.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

/* No stage may produce more than this many bytes: a guard against
 * decompression bombs in chunks whose decoded size is not known upfront. */
#define ZR_MAX_STAGE_BYTES ((int64_t)1 << 30)

/* ------------------------------------------------------------- parsing */

static const char *strip_numcodecs(const char *name) {
  return strncmp(name, "numcodecs.", 10) == 0 ? name + 10 : name;
}

static int codec_kind(int32_t id) {
  /* 0: array -> array, 1: array -> bytes, 2: bytes -> bytes. A v2
   * pipeline lists its filters after the bytes codec, where they are bytes
   * stages all the same: the decoder goes by position, around the one
   * array -> bytes codec. */
  if (zr_filter_is_array_codec(id)) return 0;
  switch (id) {
    case ZR_CODEC_TRANSPOSE: return 0;
    case ZR_CODEC_BYTES:
    case ZR_CODEC_SHARDING:
    case ZR_CODEC_VLEN_UTF8: return 1;
    default: return 2;
  }
}

static int parse_int_list(const json_t *list, int64_t *out, int32_t n) {
  if (!json_is_array(list) || (int32_t)json_array_size(list) != n) return 0;
  for (int32_t i = 0; i < n; i++) {
    json_t *v = json_array_get(list, (size_t)i);
    if (!json_is_integer(v)) return 0;
    out[i] = json_integer_value(v);
  }
  return 1;
}

static int parse_transpose(const json_t *config, int32_t ndim, struct zr_codec *c, struct ql_error *error) {
  json_t *order = json_object_get(config, "order");
  c->n_order = ndim;
  if (json_is_string(order)) {
    /* early zarr-python 3 wrote "C" / "F" */
    int f = strcmp(json_string_value(order), "F") == 0;
    if (!f && strcmp(json_string_value(order), "C") != 0) {
      return ql_error_set(error, QL_EDATA, "transpose: order must be a permutation, \"C\" or \"F\"");
    }
    for (int32_t i = 0; i < ndim; i++) c->order[i] = f ? ndim - 1 - i : i;
    return QL_OK;
  }
  int64_t perm[ZR_MAX_DIMS];
  if (!parse_int_list(order, perm, ndim)) {
    return ql_error_set(error, QL_EDATA, "transpose: order must list %d axes", (int)ndim);
  }
  int seen[ZR_MAX_DIMS] = {0};
  for (int32_t i = 0; i < ndim; i++) {
    if (perm[i] < 0 || perm[i] >= ndim || seen[perm[i]]) {
      return ql_error_set(error, QL_EDATA, "transpose: order is not a permutation of 0..%d", (int)ndim - 1);
    }
    seen[perm[i]] = 1;
    c->order[i] = (int32_t)perm[i];
  }
  return QL_OK;
}

static int parse_sharding(const json_t *config, int32_t ndim, struct zr_codec *c, struct ql_error *error) {
  if (!parse_int_list(json_object_get(config, "chunk_shape"), c->inner_chunks, ndim)) {
    return ql_error_set(error, QL_EDATA, "sharding_indexed: chunk_shape must list %d extents", (int)ndim);
  }
  for (int32_t i = 0; i < ndim; i++) {
    if (c->inner_chunks[i] <= 0) return ql_error_set(error, QL_EDATA, "sharding_indexed: chunk_shape not positive");
  }
  const char *loc = json_string_value(json_object_get(config, "index_location"));
  c->index_at_end = !loc || strcmp(loc, "end") == 0;
  if (loc && !c->index_at_end && strcmp(loc, "start") != 0) {
    return ql_error_set(error, QL_EDATA, "sharding_indexed: index_location '%s' is not start or end", loc);
  }
  c->inner = calloc(1, sizeof(*c->inner));
  c->index = calloc(1, sizeof(*c->index));
  if (!c->inner || !c->index) return ql_error_set(error, QL_ENOMEM, "out of memory parsing sharding_indexed");
  QL_RETURN_NOT_OK(zr_pipeline_parse_v3(json_object_get(config, "codecs"), ndim, c->inner, error));
  json_t *index_codecs = json_object_get(config, "index_codecs");
  QL_RETURN_NOT_OK(zr_pipeline_parse_v3(index_codecs, ndim + 1, c->index, error));
  for (int32_t i = 0; i < c->index->n; i++) {
    int32_t id = c->index->codecs[i].id;
    if (id != ZR_CODEC_BYTES && id != ZR_CODEC_CRC32C && id != ZR_CODEC_TRANSPOSE) {
      return ql_error_set(error, QL_ENOTSUP, "sharding_indexed: index codecs must have a fixed size (bytes, crc32c)");
    }
  }
  return QL_OK;
}

/* numcodecs' bytes -> bytes codecs: v2 compressors (and filters), v3
 * "numcodecs.<id>" codecs. */
static const struct {
  const char *id;
  int32_t codec;
} NUMCODECS_BYTES[] = {{"blosc", ZR_CODEC_BLOSC},     {"zstd", ZR_CODEC_ZSTD},
                       {"gzip", ZR_CODEC_GZIP},       {"zlib", ZR_CODEC_ZLIB},
                       {"lz4", ZR_CODEC_LZ4},         {"bz2", ZR_CODEC_BZ2},
                       {"lzma", ZR_CODEC_LZMA},       {"crc32", ZR_CODEC_CRC32},
                       {"crc32c", ZR_CODEC_CRC32C},   {"adler32", ZR_CODEC_ADLER32},
                       {"fletcher32", ZR_CODEC_FLETCHER32}, {"jenkins_lookup3", ZR_CODEC_JENKINS}};

static int32_t numcodecs_bytes_id(const char *id) {
  for (size_t i = 0; id && i < sizeof(NUMCODECS_BYTES) / sizeof(NUMCODECS_BYTES[0]); i++) {
    if (strcmp(id, NUMCODECS_BYTES[i].id) == 0) return NUMCODECS_BYTES[i].codec;
  }
  return 0;
}

/* A numcodecs bytes -> bytes codec `id` with its parameters in `config`
 * (the v2 object itself, a v3 configuration, or NULL for the defaults). */
static int parse_numcodecs_bytes(const char *id, const json_t *config, struct zr_codec *c, struct ql_error *error) {
  c->id = numcodecs_bytes_id(id);
  if (!c->id) return ql_error_set(error, QL_ENOTSUP, "unsupported codec '%s'", id);
  if (c->id == ZR_CODEC_CRC32 || c->id == ZR_CODEC_CRC32C || c->id == ZR_CODEC_ADLER32) {
    /* numcodecs' Checksum32: crc32 and adler32 at the start, crc32c at the end */
    c->sum_at_start = c->id != ZR_CODEC_CRC32C;
    const json_t *loc = json_object_get(config, "location");
    if (loc && !json_is_null(loc)) {
      const char *l = json_string_value(loc);
      if (!l || (strcmp(l, "start") != 0 && strcmp(l, "end") != 0)) {
        return ql_error_set(error, QL_EDATA, "%s: location must be \"start\" or \"end\"", id);
      }
      c->sum_at_start = strcmp(l, "start") == 0;
    }
  } else if (c->id == ZR_CODEC_JENKINS) {
    const json_t *init = json_object_get(config, "initval");
    if (init && !json_is_null(init)) {
      if (!json_is_integer(init) || json_integer_value(init) < 0 || json_integer_value(init) > UINT32_MAX) {
        return ql_error_set(error, QL_EDATA, "jenkins_lookup3: initval must be an integer from 0 to 2^32-1");
      }
      c->sum_initval = (uint32_t)json_integer_value(init);
    }
    const json_t *prefix = json_object_get(config, "prefix");
    if (prefix && !json_is_null(prefix)) {
      return ql_error_set(error, QL_ENOTSUP, "jenkins_lookup3: a prefix is not supported");
    }
  } else if (c->id == ZR_CODEC_LZMA) {
    /* lzma.FORMAT_AUTO 0, FORMAT_XZ 1 (numcodecs' default), FORMAT_ALONE 2;
     * FORMAT_RAW 3 needs the encoder's filter chain */
    const json_t *fmt = json_object_get(config, "format");
    c->lzma_format = fmt && !json_is_null(fmt) ? (json_is_integer(fmt) ? (int32_t)json_integer_value(fmt) : -1) : 1;
    if (c->lzma_format == 3) return ql_error_set(error, QL_ENOTSUP, "lzma: raw format (format 3) is not supported");
    if (c->lzma_format < 0 || c->lzma_format > 2) return ql_error_set(error, QL_EDATA, "lzma: format must be 0, 1 or 2");
  }
  return QL_OK;
}

/* A v3 "numcodecs.<id>" filter: its configuration is the v2 filter object
 * less its id, so the v2 parser reads it. */
static int parse_filter_v3(const char *id, const json_t *config, struct zr_codec *c, struct ql_error *error) {
  json_t *obj = json_is_object(config) ? json_copy((json_t *)config) : json_object();
  if (!obj || json_object_set_new(obj, "id", json_string(id)) != 0) {
    json_decref(obj);
    return ql_error_set(error, QL_ENOMEM, "out of memory parsing numcodecs.%s", id);
  }
  int rc = zr_filter_parse(obj, c, error);
  json_decref(obj);
  return rc;
}

static int parse_codec_v3(const json_t *j, int32_t ndim, struct zr_codec *c, struct ql_error *error) {
  const char *name = NULL;
  const json_t *config = NULL;
  if (json_is_string(j)) {
    name = json_string_value(j);
  } else if (json_is_object(j)) {
    name = json_string_value(json_object_get(j, "name"));
    config = json_object_get(j, "configuration");
  }
  if (!name) return ql_error_set(error, QL_EDATA, "malformed codec entry (expected {name, configuration})");
  const char *n = strip_numcodecs(name);
  if (strcmp(n, "bytes") == 0 || strcmp(n, "endian") == 0) {
    const char *endian = json_string_value(json_object_get(config, "endian"));
    c->id = ZR_CODEC_BYTES;
    c->big_endian = endian && strcmp(endian, "big") == 0;
    if (endian && !c->big_endian && strcmp(endian, "little") != 0) {
      return ql_error_set(error, QL_EDATA, "bytes codec: endian '%s' is not little or big", endian);
    }
    return QL_OK;
  }
  if (strcmp(n, "vlen-utf8") == 0) {
    c->id = ZR_CODEC_VLEN_UTF8;
    return QL_OK;
  }
  if (strcmp(n, "transpose") == 0) {
    c->id = ZR_CODEC_TRANSPOSE;
    return parse_transpose(config, ndim, c, error);
  }
  if (strcmp(n, "sharding_indexed") == 0) {
    c->id = ZR_CODEC_SHARDING;
    return parse_sharding(config, ndim, c, error);
  }
  if (n != name) {
    if (zr_filter_known(n)) return parse_filter_v3(n, config, c, error);
    if (numcodecs_bytes_id(n)) return parse_numcodecs_bytes(n, config, c, error);
  } else {
    /* v3 core codecs (their configurations only matter to the encoder; the
     * crc32c codec is always at the end), and the bare zlib / lz4 names of
     * early zarr-python 3 stores */
    const char *core[] = {"blosc", "zstd", "gzip", "crc32c", "zlib", "lz4"};
    for (size_t i = 0; i < sizeof(core) / sizeof(core[0]); i++) {
      if (strcmp(n, core[i]) == 0) return parse_numcodecs_bytes(n, NULL, c, error);
    }
  }
  return ql_error_set(error, QL_ENOTSUP, "unsupported codec '%s'", name);
}

/* numcodecs filters among a v3 pipeline's array -> array codecs decode on
 * the bytes codec's output bytes (codecs.h): refuse the layouts where
 * zarr-python would hand them something else. */
static int check_array_filters(const struct zr_pipeline *p, struct ql_error *error) {
  const char *filter = NULL;
  int transposed = 0;
  int32_t k = 0;
  for (; k < p->n && codec_kind(p->codecs[k].id) == 0; k++) {
    if (p->codecs[k].id == ZR_CODEC_TRANSPOSE) transposed = 1;
    if (!filter && zr_filter_is_array_codec(p->codecs[k].id)) filter = zr_filter_name(p->codecs[k].id);
  }
  if (!filter) return QL_OK;
  if (transposed) return ql_error_set(error, QL_ENOTSUP, "numcodecs.%s together with transpose is not supported", filter);
  if (p->codecs[k].id != ZR_CODEC_BYTES) {
    return ql_error_set(error, QL_ENOTSUP, "numcodecs.%s before %s is not supported (only before bytes)", filter,
                        p->codecs[k].id == ZR_CODEC_SHARDING ? "sharding_indexed" : "vlen-utf8");
  }
  return QL_OK;
}

int zr_pipeline_parse_v3(const json_t *codecs, int32_t ndim, struct zr_pipeline *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!json_is_array(codecs) || json_array_size(codecs) == 0 || json_array_size(codecs) > 64) {
    return ql_error_set(error, QL_EDATA, "codecs must be a non-empty list");
  }
  out->codecs = calloc(json_array_size(codecs), sizeof(struct zr_codec));
  if (!out->codecs) return ql_error_set(error, QL_ENOMEM, "out of memory parsing codecs");
  int stage = 0, n_array_bytes = 0;
  for (size_t i = 0; i < json_array_size(codecs); i++) {
    struct zr_codec *c = &out->codecs[out->n++];
    QL_RETURN_NOT_OK(parse_codec_v3(json_array_get(codecs, i), ndim, c, error));
    int kind = codec_kind(c->id);
    if (kind < stage) {
      return ql_error_set(error, QL_EDATA, "codecs out of order: array->array, then one array->bytes, then bytes->bytes");
    }
    stage = kind;
    n_array_bytes += kind == 1;
  }
  if (n_array_bytes != 1) {
    return ql_error_set(error, QL_EDATA, "codecs need exactly one array->bytes codec (bytes or sharding_indexed), found %d",
                        n_array_bytes);
  }
  return check_array_filters(out, error);
}

int zr_pipeline_from_v2(const json_t *compressor, const json_t *filters, int32_t ndim, int32_t order_f,
                        int32_t big_endian, struct zr_pipeline *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  int vlen = 0;
  size_t n_filters = 0;
  if (filters && !json_is_null(filters)) {
    if (!json_is_array(filters)) return ql_error_set(error, QL_EDATA, "'filters' is not a list");
    n_filters = json_array_size(filters);
    for (size_t i = 0; i < n_filters; i++) {
      const char *id = json_string_value(json_object_get(json_array_get(filters, i), "id"));
      if (id && strcmp(id, "vlen-utf8") == 0 && n_filters == 1) {
        vlen = 1;
        n_filters = 0; /* the object array's array->bytes codec, not a filter stage */
      } else if (!zr_filter_known(id) && !numcodecs_bytes_id(id)) {
        return ql_error_set(error, QL_ENOTSUP, "unsupported v2 filter '%s'", id ? id : "(malformed)");
      }
    }
  }
  out->codecs = calloc(3 + n_filters, sizeof(struct zr_codec));
  if (!out->codecs) return ql_error_set(error, QL_ENOMEM, "out of memory building the v2 pipeline");
  if (order_f && ndim > 1) {
    struct zr_codec *t = &out->codecs[out->n++];
    t->id = ZR_CODEC_TRANSPOSE;
    t->n_order = ndim;
    for (int32_t i = 0; i < ndim; i++) t->order[i] = ndim - 1 - i;
  }
  struct zr_codec *b = &out->codecs[out->n++];
  b->id = vlen ? ZR_CODEC_VLEN_UTF8 : ZR_CODEC_BYTES;
  b->big_endian = big_endian;
  /* filters encode after the elements are laid out, before compression */
  for (size_t i = 0; i < n_filters; i++) {
    /* a numcodecs compressor or checksum may be a filter too */
    const json_t *f = json_array_get(filters, i);
    const char *id = json_string_value(json_object_get(f, "id"));
    struct zr_codec *c = &out->codecs[out->n++];
    QL_RETURN_NOT_OK(zr_filter_known(id) ? zr_filter_parse(f, c, error) : parse_numcodecs_bytes(id, f, c, error));
  }
  if (compressor && !json_is_null(compressor)) {
    const char *id = json_string_value(json_object_get(compressor, "id"));
    if (!id) return ql_error_set(error, QL_EDATA, "compressor without an id");
    if (!numcodecs_bytes_id(id)) return ql_error_set(error, QL_ENOTSUP, "unsupported compressor '%s'", id);
    return parse_numcodecs_bytes(id, compressor, &out->codecs[out->n++], error);
  }
  return QL_OK;
}

int zr_pipeline_check_dtype(const struct zr_pipeline *p, const struct zr_dtype *dtype, struct ql_error *error) {
  int vlen_codec = 0;
  for (int32_t i = 0; i < p->n; i++) {
    const struct zr_codec *c = &p->codecs[i];
    if (c->id == ZR_CODEC_VLEN_UTF8) vlen_codec = 1;
    if (c->id == ZR_CODEC_SHARDING) QL_RETURN_NOT_OK(zr_pipeline_check_dtype(c->inner, dtype, error));
    if (c->id == ZR_CODEC_SHARDING) vlen_codec = dtype->type == ZR_VLEN;
  }
  if (vlen_codec && dtype->type != ZR_VLEN) {
    return ql_error_set(error, QL_EDATA, "vlen-utf8 codec on a fixed-width element type");
  }
  if (!vlen_codec && dtype->type == ZR_VLEN) {
    return ql_error_set(error, QL_ENOTSUP, "variable-length dtype '%s' without the vlen-utf8 codec (object dtype '|O' / 'string')",
                        "string");
  }
  /* v3: the outermost numcodecs filter with a dtype makes the elements */
  for (int32_t i = 0; i < p->n && codec_kind(p->codecs[i].id) == 0; i++) {
    const struct zr_dtype *made = zr_filter_decoded_dtype(&p->codecs[i]);
    if (!made) continue;
    if (made->type != dtype->type || made->size != dtype->size) {
      char a[32], b[32];
      return ql_error_set(error, QL_ENOTSUP, "numcodecs.%s decodes to %s, not the array's %s (a cast is not supported)",
                          zr_filter_name(p->codecs[i].id), zr_dtype_name(made, a, sizeof(a)),
                          zr_dtype_name(dtype, b, sizeof(b)));
    }
    break;
  }
  return QL_OK;
}

void zr_heap_free(struct zr_heap *heap) {
  if (!heap) return;
  free(heap->data);
  memset(heap, 0, sizeof(*heap));
}

static int heap_append(struct zr_heap *h, const uint8_t *p, int64_t n, int64_t *offset) {
  if (h->len + n > h->cap) {
    int64_t cap = h->cap ? h->cap : 256;
    while (cap < h->len + n) cap *= 2;
    if (cap > ((int64_t)1 << 31)) return QL_EDATA;
    uint8_t *d = realloc(h->data, (size_t)cap);
    if (!d) return QL_ENOMEM;
    h->data = d;
    h->cap = cap;
  }
  if (n) memcpy(h->data + h->len, p, (size_t)n);
  *offset = h->len;
  h->len += n;
  return QL_OK;
}

static uint32_t read_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* numcodecs VLenUTF8: uint32 LE item count, then per item a uint32 LE byte
 * length and the UTF-8 bytes. */
static int decode_vlen(const uint8_t *in, int64_t size, int64_t n_elem, uint8_t *out, struct zr_heap *heap,
                       struct ql_error *error) {
  if (!heap) return ql_error_set(error, QL_EINTERNAL, "vlen-utf8: no string heap");
  if (size < 4) return ql_error_set(error, QL_EDATA, "vlen-utf8: truncated header");
  int64_t count = read_u32le(in);
  if (count != n_elem) {
    return ql_error_set(error, QL_EDATA, "vlen-utf8: %lld items, expected %lld", (long long)count, (long long)n_elem);
  }
  int64_t pos = 4;
  for (int64_t i = 0; i < count; i++) {
    if (size - pos < 4) return ql_error_set(error, QL_EDATA, "vlen-utf8: truncated at item %lld", (long long)i);
    int64_t len = read_u32le(in + pos);
    pos += 4;
    if (len > size - pos) return ql_error_set(error, QL_EDATA, "vlen-utf8: item %lld overruns the chunk", (long long)i);
    int64_t off = 0;
    int rc = heap_append(heap, in + pos, len, &off);
    if (rc != QL_OK) return ql_error_set(error, rc, "vlen-utf8: string bytes exceed 2 GiB or memory");
    uint64_t elem[2] = {(uint64_t)off, (uint64_t)len};
    memcpy(out + 16 * i, elem, 16);
    pos += len;
  }
  if (pos != size) return ql_error_set(error, QL_EDATA, "vlen-utf8: %lld trailing bytes", (long long)(size - pos));
  return QL_OK;
}

void zr_pipeline_free(struct zr_pipeline *p) {
  if (!p || !p->codecs) return;
  for (int32_t i = 0; i < p->n; i++) {
    struct zr_codec *c = &p->codecs[i];
    if (c->inner) zr_pipeline_free(c->inner);
    if (c->index) zr_pipeline_free(c->index);
    free(c->inner);
    free(c->index);
  }
  free(p->codecs);
  p->codecs = NULL;
  p->n = 0;
}

static const char *codec_name(int32_t id) {
  switch (id) {
    case ZR_CODEC_BYTES: return "bytes";
    case ZR_CODEC_TRANSPOSE: return "transpose";
    case ZR_CODEC_SHARDING: return "sharding_indexed";
    case ZR_CODEC_BLOSC: return "blosc";
    case ZR_CODEC_ZSTD: return "zstd";
    case ZR_CODEC_ZLIB: return "zlib";
    case ZR_CODEC_GZIP: return "gzip";
    case ZR_CODEC_LZ4: return "lz4";
    case ZR_CODEC_CRC32C: return "crc32c";
    case ZR_CODEC_VLEN_UTF8: return "vlen-utf8";
    case ZR_CODEC_BZ2: return "bz2";
    case ZR_CODEC_LZMA: return "lzma";
    case ZR_CODEC_CRC32: return "crc32";
    case ZR_CODEC_ADLER32: return "adler32";
    case ZR_CODEC_FLETCHER32: return "fletcher32";
    case ZR_CODEC_JENKINS: return "jenkins_lookup3";
    default: return zr_filter_name(id);
  }
}

const char *zr_pipeline_describe(const struct zr_pipeline *p, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int32_t i = 0; i < p->n && used + 1 < cap; i++) {
    int w = snprintf(buf + used, cap - used, "%s%s", i ? "+" : "", codec_name(p->codecs[i].id));
    if (w < 0) break;
    used += (size_t)w;
  }
  return buf;
}

/* ---------------------------------------------------------------- crc32c */

static uint32_t crc32c_table[256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc32c_table[i] = c;
  }
}

uint32_t zr_crc32c(const uint8_t *data, int64_t n) {
  pthread_once(&crc32c_once, crc32c_init);
  const uint32_t *table = crc32c_table;
  uint32_t crc = 0xFFFFFFFFu;
  for (int64_t i = 0; i < n; i++) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

/* ------------------------------------------------------ bytes -> bytes */

struct zr_buf {
  const uint8_t *data;
  int64_t size;
  uint8_t *owned; /* freed when replaced */
};

static void buf_replace(struct zr_buf *b, uint8_t *data, int64_t size) {
  free(b->owned);
  b->owned = data;
  b->data = data;
  b->size = size;
}

/* Point at memory the buffer does not own (the caller's output). */
static void buf_borrow(struct zr_buf *b, const uint8_t *data, int64_t size) {
  free(b->owned);
  b->owned = NULL;
  b->data = data;
  b->size = size;
}

static int check_expected(const char *codec, int64_t got, int64_t expected, struct ql_error *error) {
  if (expected >= 0 && got != expected) {
    return ql_error_set(error, QL_EDATA, "%s: decoded %lld bytes, expected %lld", codec, (long long)got,
                        (long long)expected);
  }
  return QL_OK;
}

/* Output of a decompressor that may not know its size upfront (zlib, gzip,
 * streamed zstd, bz2, lzma): grows by doubling up to `limit` bytes. */
struct zr_out {
  uint8_t *data;
  size_t len, cap;
  int64_t limit;
};

/* Start an output: `expected` bytes (and one to see an overrun) when
 * known, limited to them; else empty, limited to ZR_MAX_STAGE_BYTES. */
static int out_init(struct zr_out *o, int64_t expected, const char *name, struct ql_error *error) {
  memset(o, 0, sizeof(*o));
  o->limit = expected >= 0 ? expected : ZR_MAX_STAGE_BYTES;
  if (expected < 0) return QL_OK;
  o->data = malloc((size_t)expected + 1);
  if (!o->data) return ql_error_set(error, QL_ENOMEM, "%s: out of memory", name);
  o->cap = (size_t)expected + 1;
  return QL_OK;
}

/* Room for at least one more byte; QL_EDATA past the limit. */
static int out_room(struct zr_out *o, const char *name, struct ql_error *error) {
  if (o->len < o->cap) return QL_OK;
  if ((int64_t)o->cap > o->limit) return ql_error_set(error, QL_EDATA, "%s: decoded more than %lld bytes", name, (long long)o->limit);
  size_t next = o->cap ? o->cap * 2 : 1 << 16;
  if ((int64_t)next > o->limit + 1) next = (size_t)o->limit + 1;
  uint8_t *grown = realloc(o->data, next);
  if (!grown) return ql_error_set(error, QL_ENOMEM, "%s: out of memory", name);
  o->data = grown;
  o->cap = next;
  return QL_OK;
}

/* End a stage: on success (`rc` QL_OK and the size expected) the output
 * replaces the buffer's bytes; otherwise it is freed. Returns the status. */
static int out_finish(struct zr_out *o, struct zr_buf *b, const char *name, int64_t expected, int rc,
                      struct ql_error *error) {
  if (rc == QL_OK) rc = check_expected(name, (int64_t)o->len, expected, error);
  if (rc == QL_OK && !o->data) o->data = malloc(1);
  if (rc == QL_OK && !o->data) rc = ql_error_set(error, QL_ENOMEM, "%s: out of memory", name);
  if (rc != QL_OK) {
    free(o->data);
    return rc;
  }
  buf_replace(b, o->data, (int64_t)o->len);
  return QL_OK;
}

static int decode_blosc(struct zr_buf *b, int64_t expected, uint8_t *dst, struct ql_error *error) {
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (b->size < BLOSC_MIN_HEADER_LENGTH) return ql_error_set(error, QL_EDATA, "blosc: truncated header");
  /* the header's sizes first: a cut-off chunk says so (validate would call
   * it an invalid header) */
  blosc_cbuffer_sizes(b->data, &nbytes, &cbytes, &blocksize);
  if ((int64_t)cbytes > b->size) {
    return ql_error_set(error, QL_EDATA, "blosc: chunk truncated (%lld of %zu bytes)", (long long)b->size, cbytes);
  }
  if (blosc_cbuffer_validate(b->data, (size_t)b->size, &nbytes) != 0) {
    return ql_error_set(error, QL_EDATA, "blosc: invalid header");
  }
  QL_RETURN_NOT_OK(check_expected("blosc", (int64_t)nbytes, expected, error));
  if ((int64_t)nbytes > ZR_MAX_STAGE_BYTES) return ql_error_set(error, QL_EDATA, "blosc: decoded size too large");
  int direct = dst && expected >= 0 && (int64_t)nbytes == expected; /* see decode_zstd */
  uint8_t *out = direct ? dst : malloc(nbytes ? nbytes : 1);
  if (!out) return ql_error_set(error, QL_ENOMEM, "blosc: out of memory for %zu bytes", nbytes);
  int got = blosc_decompress_ctx(b->data, out, nbytes, 1);
  if (got < 0 || (size_t)got != nbytes) {
    if (!direct) free(out);
    return ql_error_set(error, QL_EDATA, "blosc: corrupt chunk (decompressor returned %d)", got);
  }
  if (direct) {
    buf_borrow(b, out, (int64_t)nbytes);
  } else {
    buf_replace(b, out, (int64_t)nbytes);
  }
  return QL_OK;
}

/* Decompression contexts kept between chunks: ZSTD_decompress would
 * allocate (and, being larger than malloc's mmap threshold, map and unmap)
 * a fresh one per chunk. Freed when the plugin is unloaded. */
#define ZR_DCTX_POOL 8
static pthread_mutex_t dctx_lock = PTHREAD_MUTEX_INITIALIZER;
static ZSTD_DCtx *dctx_pool[ZR_DCTX_POOL];
static int32_t n_dctx;

static ZSTD_DCtx *dctx_acquire(void) {
  ZSTD_DCtx *d = NULL;
  pthread_mutex_lock(&dctx_lock);
  if (n_dctx > 0) d = dctx_pool[--n_dctx];
  pthread_mutex_unlock(&dctx_lock);
  return d ? d : ZSTD_createDCtx();
}

static void dctx_release(ZSTD_DCtx *d) {
  pthread_mutex_lock(&dctx_lock);
  int kept = n_dctx < ZR_DCTX_POOL;
  if (kept) dctx_pool[n_dctx++] = d;
  pthread_mutex_unlock(&dctx_lock);
  if (!kept) ZSTD_freeDCtx(d);
}

static void dctx_pool_free(void) __attribute__((destructor));
static void dctx_pool_free(void) {
  pthread_mutex_lock(&dctx_lock);
  while (n_dctx > 0) ZSTD_freeDCtx(dctx_pool[--n_dctx]);
  pthread_mutex_unlock(&dctx_lock);
}

static int decode_zstd(struct zr_buf *b, int64_t expected, uint8_t *dst, struct ql_error *error) {
  unsigned long long content = ZSTD_getFrameContentSize(b->data, (size_t)b->size);
  if (content == ZSTD_CONTENTSIZE_ERROR) return ql_error_set(error, QL_EDATA, "zstd: not a zstd frame");
  int64_t cap = expected >= 0 ? expected : ZR_MAX_STAGE_BYTES;
  if (content != ZSTD_CONTENTSIZE_UNKNOWN) {
    if (content > (unsigned long long)cap) {
      return check_expected("zstd", (int64_t)(content > (unsigned long long)INT64_MAX ? INT64_MAX : content),
                            expected >= 0 ? expected : cap, error);
    }
    /* Straight into the caller's element buffer when it is the last stage
     * and the frame says it fills it exactly: no copy, no allocation. */
    int direct = dst && expected >= 0 && content == (unsigned long long)expected;
    uint8_t *out = direct ? dst : malloc(content ? (size_t)content : 1);
    ZSTD_DCtx *dctx = out ? dctx_acquire() : NULL;
    if (!dctx) {
      if (!direct) free(out);
      return ql_error_set(error, QL_ENOMEM, "zstd: out of memory");
    }
    size_t got = ZSTD_decompressDCtx(dctx, out, (size_t)content, b->data, (size_t)b->size);
    dctx_release(dctx);
    if (ZSTD_isError(got) || got != content) {
      if (!direct) free(out);
      return ql_error_set(error, QL_EDATA, "zstd: corrupt chunk (%s)",
                          ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output");
    }
    int rc = check_expected("zstd", (int64_t)got, expected, error);
    if (rc != QL_OK) {
      if (!direct) free(out);
      return rc;
    }
    if (direct) {
      buf_borrow(b, out, (int64_t)got);
    } else {
      buf_replace(b, out, (int64_t)got);
    }
    return QL_OK;
  }
  /* Streamed frames carry no size: grow the output up to the cap. */
  ZSTD_DStream *ds = ZSTD_createDStream();
  if (!ds) return ql_error_set(error, QL_ENOMEM, "zstd: out of memory");
  struct zr_out o;
  ZSTD_inBuffer in = {b->data, (size_t)b->size, 0};
  int rc = out_init(&o, expected, "zstd", error);
  while (rc == QL_OK && (rc = out_room(&o, "zstd", error)) == QL_OK) {
    ZSTD_outBuffer ob = {o.data + o.len, o.cap - o.len, 0};
    size_t r = ZSTD_decompressStream(ds, &ob, &in);
    o.len += ob.pos;
    if (ZSTD_isError(r)) {
      rc = ql_error_set(error, QL_EDATA, "zstd: corrupt chunk (%s)", ZSTD_getErrorName(r));
    } else if (r == 0) {
      break;
    } else if (in.pos == in.size && ob.pos < ob.size) {
      rc = ql_error_set(error, QL_EDATA, "zstd: truncated chunk");
    }
  }
  ZSTD_freeDStream(ds);
  return out_finish(&o, b, "zstd", expected, rc, error);
}

static int decode_zlib(struct zr_buf *b, int64_t expected, int gzip, struct ql_error *error) {
  const char *name = gzip ? "gzip" : "zlib";
  z_stream zs;
  memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, gzip ? 15 + 16 : 15) != Z_OK) return ql_error_set(error, QL_ENOMEM, "%s: init failed", name);
  struct zr_out o;
  zs.next_in = (Bytef *)(uintptr_t)b->data;
  size_t in_left = (size_t)b->size;
  int rc = out_init(&o, expected, name, error);
  while (rc == QL_OK && (rc = out_room(&o, name, error)) == QL_OK) {
    uInt step_in = in_left > 0x40000000u ? 0x40000000u : (uInt)in_left;
    uInt room = o.cap - o.len > 0x40000000u ? 0x40000000u : (uInt)(o.cap - o.len);
    zs.avail_in = step_in;
    zs.next_out = o.data + o.len;
    zs.avail_out = room;
    int z = inflate(&zs, Z_NO_FLUSH);
    in_left -= step_in - zs.avail_in;
    o.len += room - zs.avail_out;
    if (z == Z_STREAM_END) break;
    if (z != Z_OK && z != Z_BUF_ERROR) {
      rc = ql_error_set(error, QL_EDATA, "%s: corrupt chunk (%s)", name, zs.msg ? zs.msg : "inflate error");
    } else if (zs.avail_out > 0 && in_left == 0 && zs.avail_in == 0) {
      rc = ql_error_set(error, QL_EDATA, "%s: truncated chunk", name);
    }
  }
  inflateEnd(&zs);
  return out_finish(&o, b, name, expected, rc, error);
}

static int decode_lz4(struct zr_buf *b, int64_t expected, struct ql_error *error) {
  if (b->size < 4) return ql_error_set(error, QL_EDATA, "lz4: truncated header");
  int64_t n = (int64_t)b->data[0] | (int64_t)b->data[1] << 8 | (int64_t)b->data[2] << 16 | (int64_t)b->data[3] << 24;
  QL_RETURN_NOT_OK(check_expected("lz4", n, expected, error));
  if (n > LZ4_MAX_INPUT_SIZE || n > ZR_MAX_STAGE_BYTES) return ql_error_set(error, QL_EDATA, "lz4: size too large");
  if (b->size - 4 > INT32_MAX) return ql_error_set(error, QL_EDATA, "lz4: chunk too large");
  uint8_t *out = malloc(n ? (size_t)n : 1);
  if (!out) return ql_error_set(error, QL_ENOMEM, "lz4: out of memory");
  int got = LZ4_decompress_safe((const char *)b->data + 4, (char *)out, (int)(b->size - 4), (int)n);
  if (got != (int)n) {
    free(out);
    return ql_error_set(error, QL_EDATA, "lz4: corrupt chunk (decoded %d of %lld bytes)", got, (long long)n);
  }
  buf_replace(b, out, n);
  return QL_OK;
}

/* HDF5's H5_checksum_fletcher32 (which numcodecs' Fletcher32 ports):
 * big-endian 16-bit words summed in blocks of 360, an odd last byte as the
 * high half of a word. */
uint32_t zr_fletcher32(const uint8_t *data, int64_t n) {
  uint32_t sum1 = 0, sum2 = 0;
  int64_t words = n / 2;
  while (words > 0) {
    int64_t block = words > 360 ? 360 : words;
    words -= block;
    for (int64_t i = 0; i < block; i++, data += 2) {
      sum1 += (uint32_t)data[0] << 8 | data[1];
      sum2 += sum1;
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (n % 2) {
    sum1 += (uint32_t)data[0] << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return sum2 << 16 | sum1;
}

#define ZR_ROT32(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

/* Bob Jenkins' lookup3 hashlittle, byte by byte, as HDF5's
 * H5_checksum_lookup3 (numcodecs' JenkinsLookup3). */
uint32_t zr_jenkins_lookup3(const uint8_t *k, int64_t n, uint32_t initval) {
  uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + (uint32_t)n + initval;
  for (; n > 12; n -= 12, k += 12) {
    a += (uint32_t)k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 24;
    b += (uint32_t)k[4] | (uint32_t)k[5] << 8 | (uint32_t)k[6] << 16 | (uint32_t)k[7] << 24;
    c += (uint32_t)k[8] | (uint32_t)k[9] << 8 | (uint32_t)k[10] << 16 | (uint32_t)k[11] << 24;
    a -= c; a ^= ZR_ROT32(c, 4);  c += b;
    b -= a; b ^= ZR_ROT32(a, 6);  a += c;
    c -= b; c ^= ZR_ROT32(b, 8);  b += a;
    a -= c; a ^= ZR_ROT32(c, 16); c += b;
    b -= a; b ^= ZR_ROT32(a, 19); a += c;
    c -= b; c ^= ZR_ROT32(b, 4);  b += a;
  }
  if (n == 0) return c;
  /* the last 1..12 bytes, zero-padded, into a, b, c */
  uint32_t w[3] = {0, 0, 0};
  for (int64_t i = 0; i < n; i++) w[i / 4] += (uint32_t)k[i] << (8 * (i % 4));
  a += w[0];
  b += w[1];
  c += w[2];
  c ^= b; c -= ZR_ROT32(b, 14);
  a ^= c; a -= ZR_ROT32(c, 11);
  b ^= a; b -= ZR_ROT32(a, 25);
  c ^= b; c -= ZR_ROT32(b, 16);
  a ^= c; a -= ZR_ROT32(c, 4);
  b ^= a; b -= ZR_ROT32(a, 14);
  c ^= b; c -= ZR_ROT32(b, 24);
  return c;
}

static uint32_t checksum_of(const struct zr_codec *c, const uint8_t *data, int64_t n) {
  switch (c->id) {
    case ZR_CODEC_CRC32: return (uint32_t)crc32_z(0, data, (z_size_t)n);
    case ZR_CODEC_ADLER32: return (uint32_t)adler32_z(1, data, (z_size_t)n);
    case ZR_CODEC_FLETCHER32: return zr_fletcher32(data, n);
    case ZR_CODEC_JENKINS: return zr_jenkins_lookup3(data, n, c->sum_initval);
    default: return zr_crc32c(data, n);
  }
}

/* numcodecs' 32-bit checksums: 4 little-endian bytes before or after the
 * payload, which stays where it is (no copy). */
static int decode_checksum(const struct zr_codec *c, struct zr_buf *b, struct ql_error *error) {
  const char *name = codec_name(c->id);
  if (b->size < 4) return ql_error_set(error, QL_EDATA, "%s: chunk shorter than its checksum", name);
  int64_t n = b->size - 4;
  const uint8_t *payload = c->sum_at_start ? b->data + 4 : b->data;
  uint32_t stored = read_u32le(c->sum_at_start ? b->data : b->data + n);
  uint32_t actual = checksum_of(c, payload, n);
  if (stored != actual) {
    return ql_error_set(error, QL_EDATA, "%s: checksum mismatch (stored %08x, computed %08x)", name, stored, actual);
  }
  b->data = payload;
  b->size = n;
  return QL_OK;
}

/* How one compressed stream ended. */
enum zr_stream_end { ZR_STREAM_DONE, ZR_STREAM_CORRUPT, ZR_STREAM_FAILED };

/* One bzip2 stream from `in` appended to `o`; *used = its bytes. Corrupt
 * data leaves a message in `error` and returns ZR_STREAM_CORRUPT. */
static int bz2_stream(const uint8_t *in, size_t n, size_t *used, struct zr_out *o, struct ql_error *error) {
  bz_stream s;
  memset(&s, 0, sizeof(s));
  if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) {
    ql_error_set(error, QL_ENOMEM, "bz2: out of memory");
    return ZR_STREAM_FAILED;
  }
  size_t in_left = n;
  s.next_in = (char *)(uintptr_t)in;
  int end = ZR_STREAM_FAILED;
  for (;;) {
    if (out_room(o, "bz2", error) != QL_OK) break;
    unsigned step_in = in_left > 0x40000000u ? 0x40000000u : (unsigned)in_left;
    size_t room = o->cap - o->len > 0x40000000u ? 0x40000000u : o->cap - o->len;
    s.avail_in = step_in;
    s.next_out = (char *)o->data + o->len;
    s.avail_out = (unsigned)room;
    int r = BZ2_bzDecompress(&s);
    in_left -= step_in - s.avail_in;
    o->len += room - s.avail_out;
    if (r == BZ_STREAM_END) {
      end = ZR_STREAM_DONE;
      break;
    }
    if (r != BZ_OK) {
      end = r == BZ_MEM_ERROR ? ZR_STREAM_FAILED : ZR_STREAM_CORRUPT;
      ql_error_set(error, r == BZ_MEM_ERROR ? QL_ENOMEM : QL_EDATA, "bz2: %s (bzlib error %d)",
                   r == BZ_MEM_ERROR ? "out of memory" : "corrupt chunk", r);
      break;
    }
    if (in_left == 0 && s.avail_out > 0) {
      ql_error_set(error, QL_EDATA, "bz2: truncated chunk (the stream has no end)");
      break;
    }
  }
  *used = n - in_left;
  BZ2_bzDecompressEnd(&s);
  return end;
}

#define ZR_LZMA_MEMLIMIT ((uint64_t)256 << 20)

/* One xz / lzma-alone stream, as bz2_stream. */
static int lzma_stream_1(int32_t format, const uint8_t *in, size_t n, size_t *used, struct zr_out *o,
                         struct ql_error *error) {
  lzma_stream s = LZMA_STREAM_INIT;
  lzma_ret r = format == 2   ? lzma_alone_decoder(&s, ZR_LZMA_MEMLIMIT)
               : format == 1 ? lzma_stream_decoder(&s, ZR_LZMA_MEMLIMIT, 0)
                             : lzma_auto_decoder(&s, ZR_LZMA_MEMLIMIT, 0);
  if (r != LZMA_OK) {
    ql_error_set(error, QL_ENOMEM, "lzma: decoder init failed (liblzma error %d)", (int)r);
    return ZR_STREAM_FAILED;
  }
  s.next_in = in;
  s.avail_in = n;
  int end = ZR_STREAM_FAILED;
  for (;;) {
    if (out_room(o, "lzma", error) != QL_OK) break;
    size_t room = o->cap - o->len;
    s.next_out = o->data + o->len;
    s.avail_out = room;
    r = lzma_code(&s, LZMA_FINISH);
    o->len += room - s.avail_out;
    if (r == LZMA_STREAM_END) {
      end = ZR_STREAM_DONE;
      break;
    }
    if (r == LZMA_OK) continue;
    if (r == LZMA_MEM_ERROR) {
      ql_error_set(error, QL_ENOMEM, "lzma: out of memory");
    } else if (r == LZMA_MEMLIMIT_ERROR) {
      ql_error_set(error, QL_EDATA, "lzma: the stream needs more than %llu MiB to decode",
                   (unsigned long long)(ZR_LZMA_MEMLIMIT >> 20));
    } else if (r == LZMA_BUF_ERROR) {
      ql_error_set(error, QL_EDATA, "lzma: truncated chunk (the stream has no end)");
    } else {
      end = ZR_STREAM_CORRUPT;
      ql_error_set(error, QL_EDATA, "lzma: corrupt chunk (liblzma error %d)", (int)r);
    }
    break;
  }
  *used = n - s.avail_in;
  lzma_end(&s);
  return end;
}

/* Python's bz2.decompress / lzma.decompress, which numcodecs calls: the
 * streams one after the other; data after at least one stream that is not
 * a valid stream is ignored (its partial output dropped). */
static int decode_streams(const struct zr_codec *c, struct zr_buf *b, int64_t expected, struct ql_error *error) {
  const char *name = codec_name(c->id);
  struct zr_out o;
  size_t pos = 0;
  int streams = 0, rc = out_init(&o, expected, name, error);
  while (rc == QL_OK && pos < (size_t)b->size) {
    size_t before = o.len, used = 0;
    int end = c->id == ZR_CODEC_BZ2
                  ? bz2_stream(b->data + pos, (size_t)b->size - pos, &used, &o, error)
                  : lzma_stream_1(c->lzma_format, b->data + pos, (size_t)b->size - pos, &used, &o, error);
    if (end == ZR_STREAM_CORRUPT && streams > 0) {
      ql_error_release(error);
      o.len = before;
      break;
    }
    if (end != ZR_STREAM_DONE) {
      rc = error->status;
      break;
    }
    streams++;
    pos += used;
  }
  return out_finish(&o, b, name, expected, rc, error);
}

/* `dst` (NULL, or `expected` bytes) may receive the output directly. */
static int decode_bytes_stage(const struct zr_codec *c, struct zr_buf *b, int64_t expected, uint8_t *dst,
                              struct ql_error *error) {
  switch (c->id) {
    case ZR_CODEC_BLOSC: return decode_blosc(b, expected, dst, error);
    case ZR_CODEC_ZSTD: return decode_zstd(b, expected, dst, error);
    case ZR_CODEC_ZLIB: return decode_zlib(b, expected, 0, error);
    case ZR_CODEC_GZIP: return decode_zlib(b, expected, 1, error);
    case ZR_CODEC_LZ4: return decode_lz4(b, expected, error);
    case ZR_CODEC_BZ2:
    case ZR_CODEC_LZMA: return decode_streams(c, b, expected, error);
    case ZR_CODEC_CRC32:
    case ZR_CODEC_CRC32C:
    case ZR_CODEC_ADLER32:
    case ZR_CODEC_FLETCHER32:
    case ZR_CODEC_JENKINS: {
      QL_RETURN_NOT_OK(decode_checksum(c, b, error));
      return check_expected(codec_name(c->id), b->size, expected, error);
    }
    default: {
      if (!zr_filter_known(zr_filter_name(c->id))) {
        return ql_error_set(error, QL_EINTERNAL, "codec %s is not bytes->bytes", codec_name(c->id));
      }
      uint8_t *out = NULL;
      int64_t n = 0;
      QL_RETURN_NOT_OK(zr_filter_decode(c, b->data, b->size, &out, &n, error));
      if (out) buf_replace(b, out, n);
      return check_expected(codec_name(c->id), b->size, expected, error);
    }
  }
}

/* ------------------------------------------------------ array codecs */

/* Undo a transpose: `enc` has shape enc_shape[i] = dec_shape[order[i]]. */
static void untranspose(const struct zr_codec *c, int32_t ndim, const int64_t *dec_shape, const uint8_t *enc,
                        uint8_t *dec, int64_t elsize) {
  int64_t enc_shape[ZR_MAX_DIMS], enc_stride[ZR_MAX_DIMS], stride_of_dec_axis[ZR_MAX_DIMS];
  for (int32_t i = 0; i < ndim; i++) enc_shape[i] = dec_shape[c->order[i]];
  int64_t s = 1;
  for (int32_t i = ndim - 1; i >= 0; i--) {
    enc_stride[i] = s;
    s *= enc_shape[i];
  }
  for (int32_t i = 0; i < ndim; i++) stride_of_dec_axis[c->order[i]] = enc_stride[i];
  int64_t total = zr_product(dec_shape, ndim);
  int64_t idx[ZR_MAX_DIMS] = {0};
  int64_t src = 0;
  for (int64_t k = 0; k < total; k++) {
    memcpy(dec + k * elsize, enc + src * elsize, (size_t)elsize);
    for (int32_t ax = ndim - 1; ax >= 0; ax--) {
      src += stride_of_dec_axis[ax];
      if (++idx[ax] < dec_shape[ax]) break;
      src -= stride_of_dec_axis[ax] * idx[ax];
      idx[ax] = 0;
    }
  }
}

int zr_shard_grid(const struct zr_codec *c, int32_t ndim, const int64_t *shape, int64_t *grid, int64_t *n_inner,
                  int64_t *index_bytes, struct ql_error *error) {
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] % c->inner_chunks[i] != 0) {
      return ql_error_set(error, QL_EDATA, "sharding_indexed: shard extent %lld is not a multiple of inner chunk %lld",
                          (long long)shape[i], (long long)c->inner_chunks[i]);
    }
    grid[i] = shape[i] / c->inner_chunks[i];
  }
  grid[ndim] = 2;
  *n_inner = zr_product(grid, ndim);
  if (*n_inner < 0 || *n_inner > INT64_MAX / 32) {
    return ql_error_set(error, QL_EDATA, "sharding_indexed: too many inner chunks per shard");
  }
  *index_bytes = *n_inner * 16;
  for (int32_t i = 0; i < c->index->n; i++) *index_bytes += c->index->codecs[i].id == ZR_CODEC_CRC32C ? 4 : 0;
  return QL_OK;
}

int zr_shard_index_decode(const struct zr_codec *c, int32_t ndim, const int64_t *grid, const uint8_t *in,
                          int64_t index_bytes, uint64_t *index, struct ql_error *error) {
  struct zr_dtype u64 = {ZR_UINT, 8, 0, 8, 0, ""};
  int rc = zr_chunk_decode(c->index, &u64, ndim + 1, grid, (const uint8_t *)"\0\0\0\0\0\0\0\0", in, index_bytes,
                           (uint8_t *)index, NULL, error);
  return rc == QL_OK ? QL_OK : ql_error_prefix(error, "sharding_indexed index");
}

static int decode_shard(const struct zr_codec *c, const struct zr_dtype *dtype, int32_t ndim, const int64_t *shape,
                        const uint8_t *fill, const uint8_t *in, int64_t in_size, uint8_t *out, struct zr_heap *heap,
                        struct ql_error *error) {
  int64_t grid[ZR_MAX_DIMS + 1], n_inner = 0, index_bytes = 0;
  QL_RETURN_NOT_OK(zr_shard_grid(c, ndim, shape, grid, &n_inner, &index_bytes, error));
  if (index_bytes > in_size) {
    return ql_error_set(error, QL_EDATA, "sharding_indexed: shard of %lld bytes is shorter than its index (%lld)",
                        (long long)in_size, (long long)index_bytes);
  }
  uint64_t *index = malloc((size_t)(n_inner * 16));
  int64_t inner_n = zr_product(c->inner_chunks, ndim);
  uint8_t *inner = malloc((size_t)(inner_n * dtype->size) + 1);
  if (!index || !inner) {
    free(index);
    free(inner);
    return ql_error_set(error, QL_ENOMEM, "sharding_indexed: out of memory");
  }
  const uint8_t *index_src = c->index_at_end ? in + in_size - index_bytes : in;
  int rc = zr_shard_index_decode(c, ndim, grid, index_src, index_bytes, index, error);
  int64_t pos[ZR_MAX_DIMS] = {0}, origin[ZR_MAX_DIMS], zero[ZR_MAX_DIMS] = {0};
  for (int64_t k = 0; rc == QL_OK && k < n_inner; k++) {
    uint64_t off = index[2 * k], nb = index[2 * k + 1];
    for (int32_t i = 0; i < ndim; i++) origin[i] = pos[i] * c->inner_chunks[i];
    if (off == UINT64_MAX && nb == UINT64_MAX) {
      zr_fill_elements(inner, inner_n, fill, dtype->size);
    } else if (off > (uint64_t)in_size || nb > (uint64_t)in_size - off) {
      rc = ql_error_set(error, QL_EDATA, "sharding_indexed: inner chunk %lld at %llu+%llu lies outside the shard (%lld bytes)",
                        (long long)k, (unsigned long long)off, (unsigned long long)nb, (long long)in_size);
      break;
    } else {
      rc = zr_chunk_decode(c->inner, dtype, ndim, c->inner_chunks, fill, in + off, (int64_t)nb, inner, heap, error);
      if (rc != QL_OK) {
        ql_error_prefix(error, "inner chunk %lld", (long long)k);
        break;
      }
    }
    zr_copy_box(out, shape, origin, inner, c->inner_chunks, zero, c->inner_chunks, ndim, dtype->size);
    for (int32_t ax = ndim - 1; ax >= 0; ax--) {
      if (++pos[ax] < grid[ax]) break;
      pos[ax] = 0;
    }
  }
  free(index);
  free(inner);
  return rc;
}

/* The bytes codec `c`'s encoding makes of `n` bytes, or -1 when that is not
 * known upfront (compressors; `n` unknown or not whole elements). */
static int64_t encoded_size(const struct zr_codec *c, int64_t n) {
  if (n < 0) return -1;
  switch (c->id) {
    case ZR_CODEC_CRC32:
    case ZR_CODEC_CRC32C:
    case ZR_CODEC_ADLER32:
    case ZR_CODEC_FLETCHER32:
    case ZR_CODEC_JENKINS: return n + 4;
    case ZR_CODEC_F_BITROUND:
    case ZR_CODEC_F_SHUFFLE: return n;
    case ZR_CODEC_F_PACKBITS: return 1 + (n + 7) / 8;
    case ZR_CODEC_F_QUANTIZE:
    case ZR_CODEC_F_DELTA:
    case ZR_CODEC_F_FIXEDSCALEOFFSET:
    case ZR_CODEC_F_ASTYPE: return n % c->f_dtype.size ? -1 : n / c->f_dtype.size * c->f_astype.size;
    default: return -1;
  }
}

/* What decoding bytes -> bytes codec i (> k) must give back: the bytes
 * entering it on encoding, from `encoded` (the array -> bytes codec k's
 * output) through codecs k+1..i-1. -1 when not known. A decompression
 * bomb then stops at the chunk's size, and a wrong size is named at the
 * codec that produced it. */
static int64_t size_entering(const struct zr_pipeline *p, int32_t k, int32_t i, int64_t encoded) {
  for (int32_t j = k + 1; j < i && encoded >= 0; j++) encoded = encoded_size(&p->codecs[j], encoded);
  return encoded;
}

/* Undo a v3 pipeline's numcodecs filters (codecs 0..k-1) on the bytes
 * the bytes -> bytes stages left, as v2 filters are undone. */
static int decode_array_filters(const struct zr_pipeline *p, int32_t k, struct zr_buf *b, struct ql_error *error) {
  for (int32_t i = k - 1; i >= 0; i--) {
    uint8_t *o = NULL;
    int64_t on = 0;
    QL_RETURN_NOT_OK(zr_filter_decode(&p->codecs[i], b->data, b->size, &o, &on, error));
    if (o) buf_replace(b, o, on);
  }
  return QL_OK;
}

int zr_chunk_decode(const struct zr_pipeline *p, const struct zr_dtype *dtype, int32_t ndim, const int64_t *shape,
                    const uint8_t *fill, const uint8_t *in, int64_t in_size, uint8_t *out, struct zr_heap *heap,
                    struct ql_error *error) {
  int32_t k = 0, n_filters = 0;
  while (k < p->n && codec_kind(p->codecs[k].id) == 0) n_filters += zr_filter_is_array_codec(p->codecs[k++].id);
  if (k >= p->n) return ql_error_set(error, QL_EINTERNAL, "pipeline without an array->bytes codec");
  if (n_filters && (n_filters != k || p->codecs[k].id != ZR_CODEC_BYTES)) {
    return ql_error_set(error, QL_EINTERNAL, "numcodecs filters mixed with transpose or before %s",
                        codec_name(p->codecs[k].id));
  }
  /* The element bytes leave the filters in the byte order of the outermost
   * one that names a dtype (zarr-python casts its values into the array),
   * else in the bytes codec's. */
  int32_t big_endian = p->codecs[k].big_endian;
  for (int32_t i = 0; i < n_filters; i++) {
    const struct zr_dtype *made = zr_filter_decoded_dtype(&p->codecs[i]);
    if (made) {
      big_endian = made->big_endian;
      break;
    }
  }
  int32_t n_transpose = n_filters ? 0 : k;
  /* Shapes as each array->array codec sees them, encoding forwards. */
  int64_t shapes[8][ZR_MAX_DIMS];
  if (n_transpose >= 8) return ql_error_set(error, QL_ENOTSUP, "more than 7 array->array codecs");
  memcpy(shapes[0], shape, sizeof(int64_t) * (size_t)ndim);
  for (int32_t i = 0; i < n_transpose; i++) {
    if (p->codecs[i].n_order != ndim) return ql_error_set(error, QL_EDATA, "transpose order has the wrong rank");
    for (int32_t d = 0; d < ndim; d++) shapes[i + 1][d] = shapes[i][p->codecs[i].order[d]];
  }
  int64_t n_elem = zr_product(shape, ndim);
  if (n_elem < 0 || (dtype->size > 0 && n_elem > INT64_MAX / dtype->size)) {
    return ql_error_set(error, QL_EDATA, "chunk shape too large");
  }
  int64_t n_bytes = n_elem * dtype->size;
  struct zr_buf b = {in, in_size, NULL};
  int rc = QL_OK;
  /* The bytes the array -> bytes codec makes: a v3 pipeline's filters
   * change the element type, transposes do not. */
  int64_t encoded = p->codecs[k].id == ZR_CODEC_BYTES ? n_bytes : -1;
  for (int32_t i = 0; i < n_filters; i++) encoded = encoded_size(&p->codecs[i], encoded);
  for (int32_t i = p->n - 1; i > k && rc == QL_OK; i--) {
    int64_t expected = size_entering(p, k, i, encoded);
    /* The last decompression may write the elements in place (no array->array codec follows). */
    uint8_t *dst = i == k + 1 && expected == n_bytes && k == 0 ? out : NULL;
    rc = decode_bytes_stage(&p->codecs[i], &b, expected, dst, error);
  }
  if (rc == QL_OK && n_filters) rc = decode_array_filters(p, k, &b, error);
  uint8_t *target = out;
  uint8_t *tmp[2] = {NULL, NULL};
  if (rc == QL_OK && n_transpose > 0) {
    tmp[0] = malloc((size_t)n_bytes + 1);
    tmp[1] = n_transpose > 1 ? malloc((size_t)n_bytes + 1) : NULL;
    if (!tmp[0] || (n_transpose > 1 && !tmp[1])) rc = ql_error_set(error, QL_ENOMEM, "out of memory decoding a chunk");
    target = tmp[0];
  }
  if (rc == QL_OK) {
    const struct zr_codec *ab = &p->codecs[k];
    if (ab->id == ZR_CODEC_BYTES && dtype->type == ZR_VLEN) {
      rc = ql_error_set(error, QL_EDATA, "variable-length strings need the vlen-utf8 codec");
    } else if (ab->id == ZR_CODEC_BYTES) {
      if (b.size != n_bytes) {
        rc = ql_error_set(error, QL_EDATA, "chunk has %lld bytes, expected %lld (%lld elements of %d bytes)",
                          (long long)b.size, (long long)n_bytes, (long long)n_elem, (int)dtype->size);
      } else {
        if (b.data != target) memcpy(target, b.data, (size_t)n_bytes);
        struct zr_dtype stored = *dtype;
        stored.big_endian = big_endian;
        zr_dtype_to_native(&stored, target, n_elem);
      }
    } else if (ab->id == ZR_CODEC_VLEN_UTF8) {
      rc = dtype->type == ZR_VLEN ? decode_vlen(b.data, b.size, n_elem, target, heap, error)
                                  : ql_error_set(error, QL_EDATA, "vlen-utf8 codec on a fixed-width element type");
    } else {
      rc = decode_shard(ab, dtype, ndim, shapes[k], fill, b.data, b.size, target, heap, error);
    }
  }
  /* Undo array->array codecs in reverse, ping-ponging between buffers. */
  for (int32_t i = n_transpose - 1; i >= 0 && rc == QL_OK; i--) {
    uint8_t *dst = i == 0 ? out : (target == tmp[0] ? tmp[1] : tmp[0]);
    untranspose(&p->codecs[i], ndim, shapes[i], target, dst, dtype->size);
    target = dst;
  }
  free(tmp[0]);
  free(tmp[1]);
  free(b.owned);
  return rc;
}
