/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: numcodecs filters of Zarr v2 arrays. See numcodecs_filters.h. */
#include "numcodecs_filters.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

static const struct {
  const char *id;
  int32_t codec;
} FILTERS[] = {{"quantize", ZR_CODEC_F_QUANTIZE},
               {"bitround", ZR_CODEC_F_BITROUND},
               {"delta", ZR_CODEC_F_DELTA},
               {"fixedscaleoffset", ZR_CODEC_F_FIXEDSCALEOFFSET},
               {"shuffle", ZR_CODEC_F_SHUFFLE},
               {"astype", ZR_CODEC_F_ASTYPE},
               {"packbits", ZR_CODEC_F_PACKBITS}};

const char *zr_filter_name(int32_t codec) {
  for (size_t i = 0; i < sizeof(FILTERS) / sizeof(FILTERS[0]); i++) {
    if (FILTERS[i].codec == codec) return FILTERS[i].id;
  }
  return "?";
}

int zr_filter_is_array_codec(int32_t codec) {
  return codec != ZR_CODEC_F_SHUFFLE && strcmp(zr_filter_name(codec), "?") != 0;
}

const struct zr_dtype *zr_filter_decoded_dtype(const struct zr_codec *c) {
  switch (c->id) {
    case ZR_CODEC_F_QUANTIZE:
    case ZR_CODEC_F_DELTA:
    case ZR_CODEC_F_FIXEDSCALEOFFSET:
    case ZR_CODEC_F_ASTYPE:
    case ZR_CODEC_F_PACKBITS: return &c->f_dtype;
    default: return NULL;
  }
}

int zr_filter_known(const char *id) {
  for (size_t i = 0; id && i < sizeof(FILTERS) / sizeof(FILTERS[0]); i++) {
    if (strcmp(id, FILTERS[i].id) == 0) return 1;
  }
  return 0;
}

/* ------------------------------------------------------------- parsing */

/* A filter dtype as numcodecs takes it: anything np.dtype() accepts, which
 * zarr-python 3 stores as given ("f4", "int16", "<u2"). A typestr without
 * a byte order ("f4") is NumPy's native one; qlink_zarr's hosts are
 * little-endian (x86-64, aarch64), like every store this reads. */
static int parse_dtype_string(const char *s, struct zr_dtype *out, struct ql_error *error) {
  if (strchr("<>|=", s[0])) {
    if (s[0] != '=') return zr_dtype_parse_v2(s, out, error);
    char buf[16];
    if (strlen(s) >= sizeof(buf)) return ql_error_set(error, QL_ENOTSUP, "dtype '%s' is not supported", s);
    memcpy(buf, s, strlen(s) + 1);
    buf[0] = '<';
    return zr_dtype_parse_v2(buf, out, error);
  }
  if (strlen(s) == 2 && strchr("iufb", s[0]) && strchr("1248", s[1])) {
    char buf[4] = {s[0] == 'b' || s[1] == '1' ? '|' : '<', s[0], s[1], '\0'};
    return zr_dtype_parse_v2(buf, out, error);
  }
  json_t *name = json_string(s);
  if (!name) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int rc = zr_dtype_parse_v3(name, out, error);
  json_decref(name);
  return rc;
}

/* A numeric filter dtype: integers, float32, float64. */
static int parse_dtype(const json_t *filter, const char *key, const char *fallback_key, struct zr_dtype *out,
                       struct ql_error *error) {
  const char *id = json_string_value(json_object_get(filter, "id"));
  const json_t *v = json_object_get(filter, key);
  if ((!v || json_is_null(v)) && fallback_key) v = json_object_get(filter, fallback_key);
  const char *s = json_string_value(v);
  if (!s || !s[0]) return ql_error_set(error, QL_EDATA, "filter '%s': '%s' is missing or not a dtype string", id, key);
  if (parse_dtype_string(s, out, error) != QL_OK) return ql_error_prefix(error, "filter '%s': %s", id, key);
  int ok = out->type == ZR_INT || out->type == ZR_UINT || (out->type == ZR_FLOAT && out->size != 2);
  if (!ok) return ql_error_set(error, QL_ENOTSUP, "filter '%s': %s '%s' is not an integer, float32 or float64", id, key, s);
  return QL_OK;
}

static int parse_number(const json_t *filter, const char *key, double *out, struct ql_error *error) {
  const json_t *v = json_object_get(filter, key);
  if (!json_is_number(v)) {
    return ql_error_set(error, QL_EDATA, "filter '%s': '%s' is missing or not a number",
                        json_string_value(json_object_get(filter, "id")), key);
  }
  *out = json_number_value(v);
  return QL_OK;
}

int zr_filter_parse(const json_t *filter, struct zr_codec *c, struct ql_error *error) {
  const char *id = json_string_value(json_object_get(filter, "id"));
  if (!json_is_object(filter) || !id) return ql_error_set(error, QL_EDATA, "v2 filter without an id");
  c->id = 0;
  for (size_t i = 0; i < sizeof(FILTERS) / sizeof(FILTERS[0]); i++) {
    if (strcmp(id, FILTERS[i].id) == 0) c->id = FILTERS[i].codec;
  }
  switch (c->id) {
    case ZR_CODEC_F_BITROUND: return QL_OK;
    case ZR_CODEC_F_PACKBITS: return zr_dtype_parse_v2("|b1", &c->f_dtype, error);
    case ZR_CODEC_F_QUANTIZE:
    case ZR_CODEC_F_DELTA:
      /* astype defaults to dtype (numcodecs: astype=None) */
      QL_RETURN_NOT_OK(parse_dtype(filter, "dtype", NULL, &c->f_dtype, error));
      return parse_dtype(filter, "astype", "dtype", &c->f_astype, error);
    case ZR_CODEC_F_FIXEDSCALEOFFSET:
      QL_RETURN_NOT_OK(parse_dtype(filter, "dtype", NULL, &c->f_dtype, error));
      QL_RETURN_NOT_OK(parse_dtype(filter, "astype", "dtype", &c->f_astype, error));
      QL_RETURN_NOT_OK(parse_number(filter, "scale", &c->f_scale, error));
      return parse_number(filter, "offset", &c->f_offset, error);
    case ZR_CODEC_F_ASTYPE:
      QL_RETURN_NOT_OK(parse_dtype(filter, "decode_dtype", NULL, &c->f_dtype, error));
      return parse_dtype(filter, "encode_dtype", NULL, &c->f_astype, error);
    case ZR_CODEC_F_SHUFFLE: {
      const json_t *e = json_object_get(filter, "elementsize");
      if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > (1 << 20)) {
        return ql_error_set(error, QL_EDATA, "filter 'shuffle': 'elementsize' is missing or not from 1 to 2^20");
      }
      c->f_elementsize = json_integer_value(e);
      return QL_OK;
    }
    default: return ql_error_set(error, QL_ENOTSUP, "unsupported v2 filter '%s'", id);
  }
}

/* ------------------------------------------------------------- elements */

/* The element at p as stored (either byte order), widened to 64 bits. */
static uint64_t load_bits(const struct zr_dtype *t, const uint8_t *p) {
  uint64_t v = 0;
  for (int32_t i = 0; i < t->size; i++) {
    int32_t b = t->big_endian ? i : t->size - 1 - i;
    v = v << 8 | p[b];
  }
  return v;
}

static void store_bits(const struct zr_dtype *t, uint8_t *p, uint64_t v) {
  for (int32_t i = 0; i < t->size; i++) {
    int32_t b = t->big_endian ? t->size - 1 - i : i;
    p[b] = (uint8_t)(v >> (8 * i));
  }
}

/* A value in the widest form of its kind. */
struct num {
  int is_float;
  double f;
  int64_t i; /* integers: two's complement bits (unsigned ones too) */
};

static struct num load(const struct zr_dtype *t, const uint8_t *p) {
  struct num n = {0, 0.0, 0};
  uint64_t bits = load_bits(t, p);
  if (t->type == ZR_FLOAT) {
    n.is_float = 1;
    if (t->size == 4) {
      uint32_t b32 = (uint32_t)bits;
      float f;
      memcpy(&f, &b32, 4);
      n.f = f;
    } else {
      memcpy(&n.f, &bits, 8);
    }
    return n;
  }
  if (t->type == ZR_INT && t->size < 8 && (bits >> (8 * t->size - 1)) & 1) bits |= ~(uint64_t)0 << (8 * t->size);
  n.i = (int64_t)bits;
  return n;
}

static double as_double(const struct zr_dtype *t, struct num n) {
  if (n.is_float) return n.f;
  return t->type == ZR_UINT ? (double)(uint64_t)n.i : (double)n.i;
}

/* Store `n` (of source type `from`) as an element of `t`, cast as NumPy's
 * astype does. QL_EDATA when a float does not fit the integer type. */
static int store(const struct zr_dtype *t, uint8_t *p, const struct zr_dtype *from, struct num n) {
  if (t->type == ZR_FLOAT) {
    double d = as_double(from, n);
    if (t->size == 4) {
      /* integers straight to float, as NumPy casts them (through double,
       * an int64 past 2^53 could round twice) */
      float f = n.is_float ? (float)d : from->type == ZR_UINT ? (float)(uint64_t)n.i : (float)n.i;
      uint32_t b32;
      memcpy(&b32, &f, 4);
      store_bits(t, p, b32);
    } else {
      uint64_t b64;
      memcpy(&b64, &d, 8);
      store_bits(t, p, b64);
    }
    return QL_OK;
  }
  if (n.is_float) {
    double d = trunc(n.f);
    /* the type's range, as doubles (exact powers of two) */
    double lo = t->type == ZR_UINT ? 0.0 : -ldexp(1.0, 8 * t->size - 1);
    double hi = t->type == ZR_UINT ? ldexp(1.0, 8 * t->size) : ldexp(1.0, 8 * t->size - 1);
    if (!(d >= lo && d < hi)) return QL_EDATA;
    n.i = t->type == ZR_UINT ? (int64_t)(uint64_t)d : (int64_t)d;
  }
  store_bits(t, p, (uint64_t)n.i); /* integer to integer: the low bits, i.e. wrapping */
  return QL_OK;
}

static int same_type(const struct zr_dtype *a, const struct zr_dtype *b) {
  return a->type == b->type && a->size == b->size && (a->big_endian == b->big_endian || a->size == 1);
}

/* ------------------------------------------------------------- decoding */

/* NumPy's result type of two numeric dtypes (np.result_type), which
 * numpy.cumsum accumulates in: float32 when both fit it (floats of 4 bytes,
 * integers of at most 2), float64 for any other mix with a float and for
 * int64 with uint64; integers otherwise (their sum wraps, and its low bits
 * are the same in any width). */
static struct zr_dtype cumsum_type(const struct zr_dtype *a, const struct zr_dtype *b) {
  struct zr_dtype t = {ZR_INT, 8, 0, 8, 0, ""};
  int fa = a->type == ZR_FLOAT, fb = b->type == ZR_FLOAT;
  int mixed64 = a->size == 8 && b->size == 8 && a->type != b->type;
  if (fa || fb || mixed64) {
    int single = (!fa || a->size == 4) && (!fb || b->size == 4) && (fa || a->size <= 2) && (fb || b->size <= 2);
    t.type = ZR_FLOAT;
    t.size = single ? 4 : 8;
    t.swap_unit = t.size;
  }
  return t;
}

static int whole_elements(const struct zr_codec *c, int64_t n, int32_t size, struct ql_error *error) {
  if (n % size != 0) {
    return ql_error_set(error, QL_EDATA, "filter '%s': %lld bytes is not a whole number of %d-byte elements",
                        zr_filter_name(c->id), (long long)n, (int)size);
  }
  return QL_OK;
}

static int cast_error(const struct zr_codec *c, int64_t i, struct ql_error *error) {
  char buf[32];
  return ql_error_set(error, QL_EDATA, "filter '%s': element %lld does not fit %s (NaN or out of range)",
                      zr_filter_name(c->id), (long long)i, zr_dtype_name(&c->f_dtype, buf, sizeof(buf)));
}

static void unshuffle(const uint8_t *in, int64_t n, int64_t elementsize, uint8_t *out) {
  int64_t count = n / elementsize;
  for (int64_t b = 0; b < elementsize; b++) {
    const uint8_t *src = in + b * count;
    for (int64_t i = 0; i < count; i++) out[i * elementsize + b] = src[i];
  }
  /* numcodecs leaves the bytes after the last whole element as they are */
  memcpy(out + count * elementsize, in + count * elementsize, (size_t)(n - count * elementsize));
}

/* numcodecs PackBits: a byte counting the padding bits of the last byte,
 * then the bools packed 8 to a byte, most significant bit first
 * (np.unpackbits); decoded, one byte 0 or 1 per bool. */
static int unpackbits(const uint8_t *in, int64_t n, uint8_t **out, int64_t *out_n, struct ql_error *error) {
  if (n < 1) return ql_error_set(error, QL_EDATA, "filter 'packbits': empty chunk (no padding byte)");
  if (in[0] > 7 || (n == 1 && in[0] != 0)) {
    return ql_error_set(error, QL_EDATA, "filter 'packbits': %u padding bits (at most 7, and 0 for no data)", in[0]);
  }
  *out_n = (n - 1) * 8 - in[0];
  *out = malloc((size_t)(*out_n ? *out_n : 1));
  if (!*out) return ql_error_set(error, QL_ENOMEM, "filter 'packbits': out of memory");
  for (int64_t i = 0; i < *out_n; i++) (*out)[i] = (uint8_t)(in[1 + i / 8] >> (7 - i % 8) & 1);
  return QL_OK;
}

int zr_filter_decode(const struct zr_codec *c, const uint8_t *in, int64_t n, uint8_t **out, int64_t *out_n,
                     struct ql_error *error) {
  *out = NULL;
  *out_n = n;
  if (c->id == ZR_CODEC_F_BITROUND) return QL_OK;
  if (c->id == ZR_CODEC_F_PACKBITS) return unpackbits(in, n, out, out_n, error);
  if (c->id == ZR_CODEC_F_SHUFFLE) {
    if (c->f_elementsize <= 1 || n < c->f_elementsize) return QL_OK;
    *out = malloc((size_t)n);
    if (!*out) return ql_error_set(error, QL_ENOMEM, "filter 'shuffle': out of memory");
    unshuffle(in, n, c->f_elementsize, *out);
    return QL_OK;
  }
  const struct zr_dtype *enc = &c->f_astype, *dec = &c->f_dtype;
  QL_RETURN_NOT_OK(whole_elements(c, n, enc->size, error));
  int64_t count = n / enc->size;
  if ((c->id == ZR_CODEC_F_QUANTIZE || c->id == ZR_CODEC_F_ASTYPE) && same_type(enc, dec)) return QL_OK;
  *out_n = count * dec->size;
  *out = malloc((size_t)(*out_n ? *out_n : 1));
  if (!*out) return ql_error_set(error, QL_ENOMEM, "filter '%s': out of memory", zr_filter_name(c->id));
  int rc = QL_OK;
  if (c->id == ZR_CODEC_F_DELTA) {
    /* numpy.cumsum(enc, out=dec): a running sum in NumPy's common type of
     * enc and dec, each step cast to dec */
    const struct zr_dtype acc_t = cumsum_type(enc, dec);
    struct num acc = {acc_t.type == ZR_FLOAT, 0.0, 0};
    for (int64_t i = 0; i < count && rc == QL_OK; i++) {
      struct num v = load(enc, in + i * enc->size);
      if (acc.is_float) {
        double d = as_double(enc, v);
        acc.f = acc_t.size == 4 ? (double)((float)acc.f + (float)d) : acc.f + d;
      } else {
        acc.i = (int64_t)((uint64_t)acc.i + (uint64_t)v.i); /* wraps: the low bits are what dec keeps */
      }
      if (store(dec, *out + i * dec->size, &acc_t, acc) != QL_OK) rc = cast_error(c, i, error);
    }
  } else if (c->id == ZR_CODEC_F_FIXEDSCALEOFFSET) {
    /* enc / scale + offset: float32 elements stay float32 (NumPy 2 keeps a
     * Python float operand weak), others go to float64 */
    const struct zr_dtype f64 = {ZR_FLOAT, 8, 0, 8, 0, ""};
    int single = enc->type == ZR_FLOAT && enc->size == 4;
    for (int64_t i = 0; i < count && rc == QL_OK; i++) {
      double x = as_double(enc, load(enc, in + i * enc->size));
      struct num v = {1, single ? (double)((float)x / (float)c->f_scale + (float)c->f_offset)
                                : x / c->f_scale + c->f_offset, 0};
      if (store(dec, *out + i * dec->size, &f64, v) != QL_OK) rc = cast_error(c, i, error);
    }
  } else { /* quantize, astype: a cast */
    for (int64_t i = 0; i < count && rc == QL_OK; i++) {
      if (store(dec, *out + i * dec->size, enc, load(enc, in + i * enc->size)) != QL_OK) rc = cast_error(c, i, error);
    }
  }
  if (rc != QL_OK) {
    free(*out);
    *out = NULL;
  }
  return rc;
}
