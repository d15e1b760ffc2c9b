/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: element types. See dtype.h. */
#include "qlink_zarr/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

static int host_is_big_endian(void) {
  const uint16_t probe = 1;
  return *(const uint8_t *)&probe == 0;
}

/* Nanoseconds per tick of a numpy datetime unit; 0 for units qlink cannot
 * represent exactly as a fixed duration (years, months, below ns). */
static int64_t unit_to_ns(const char *unit) {
  static const struct {
    const char *name;
    int64_t ns;
  } units[] = {{"W", 604800000000000LL}, {"D", 86400000000000LL}, {"h", 3600000000000LL},
               {"m", 60000000000LL},     {"s", 1000000000LL},     {"ms", 1000000LL},
               {"us", 1000LL},           {"ns", 1LL}};
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    if (strcmp(units[i].name, unit) == 0) return units[i].ns;
  }
  return 0;
}

static int set_time_unit(struct zr_dtype *out, const char *unit, const char *what, struct ql_error *error) {
  int64_t ns = unit_to_ns(unit);
  if (ns == 0 || strlen(unit) >= sizeof(out->unit)) {
    return ql_error_set(error, QL_ENOTSUP, "unsupported %s unit '%s' (supported: W, D, h, m, s, ms, us, ns)", what,
                        unit);
  }
  out->unit_ns = ns;
  snprintf(out->unit, sizeof(out->unit), "%s", unit);
  return QL_OK;
}

static int parse_size(const char *digits, int32_t *out) {
  if (!*digits) return 0;
  long v = 0;
  for (const char *p = digits; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
    if (v > (1L << 20)) return 0;
  }
  *out = (int32_t)v;
  return v > 0;
}

int zr_dtype_parse_v2(const char *typestr, struct zr_dtype *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (typestr && strcmp(typestr, "|O") == 0) {
    /* object: only as vlen-utf8 strings (the pipeline checks the filter) */
    out->type = ZR_VLEN;
    out->size = 16;
    out->swap_unit = 1;
    return QL_OK;
  }
  size_t len = typestr ? strlen(typestr) : 0;
  if (len < 3 || (typestr[0] != '<' && typestr[0] != '>' && typestr[0] != '|' && typestr[0] != '=')) {
    return ql_error_set(error, QL_EDATA, "malformed dtype '%s'", typestr ? typestr : "(null)");
  }
  out->big_endian = typestr[0] == '>' || (typestr[0] == '=' && host_is_big_endian());
  char kind = typestr[1];
  const char *rest = typestr + 2;
  if (kind == 'M' || kind == 'm') {
    /* "<M8[ns]" */
    size_t rl = strlen(rest);
    if (rl < 4 || rest[0] != '8' || rest[1] != '[' || rest[rl - 1] != ']' || rl - 3 >= 4) {
      return ql_error_set(error, QL_ENOTSUP, "unsupported dtype '%s'", typestr);
    }
    char unit[4] = {0};
    memcpy(unit, rest + 2, rl - 3);
    out->type = kind == 'M' ? ZR_DATETIME : ZR_TIMEDELTA;
    out->size = 8;
    out->swap_unit = 8;
    return set_time_unit(out, unit, kind == 'M' ? "datetime64" : "timedelta64", error);
  }
  int32_t size = 0;
  if (!parse_size(rest, &size)) return ql_error_set(error, QL_EDATA, "malformed dtype '%s'", typestr);
  switch (kind) {
    case 'b':
      if (size != 1) break;
      out->type = ZR_BOOL;
      out->size = 1;
      out->swap_unit = 1;
      return QL_OK;
    case 'i':
    case 'u':
      if (size != 1 && size != 2 && size != 4 && size != 8) break;
      out->type = kind == 'i' ? ZR_INT : ZR_UINT;
      out->size = size;
      out->swap_unit = size;
      return QL_OK;
    case 'f':
      if (size != 2 && size != 4 && size != 8) break;
      out->type = ZR_FLOAT;
      out->size = size;
      out->swap_unit = size;
      return QL_OK;
    case 'S':
      out->type = ZR_BYTES;
      out->size = size;
      out->swap_unit = 1;
      return QL_OK;
    case 'U':
      if (size > (1 << 18)) break;
      out->type = ZR_UNICODE;
      out->size = size * 4;
      out->swap_unit = 4;
      return QL_OK;
    default:
      break;
  }
  return ql_error_set(error, QL_ENOTSUP, "unsupported dtype '%s'", typestr);
}

static int parse_v3_length(const json_t *config, int32_t *out) {
  json_t *lb = json_object_get(config, "length_bytes");
  if (!json_is_integer(lb)) return 0;
  json_int_t v = json_integer_value(lb);
  if (v <= 0 || v > (1 << 20)) return 0;
  *out = (int32_t)v;
  return 1;
}

int zr_dtype_parse_v3(const json_t *data_type, struct zr_dtype *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  const char *name = NULL;
  const json_t *config = NULL;
  if (json_is_string(data_type)) {
    name = json_string_value(data_type);
  } else if (json_is_object(data_type)) {
    name = json_string_value(json_object_get(data_type, "name"));
    config = json_object_get(data_type, "configuration");
  }
  if (!name) return ql_error_set(error, QL_EDATA, "malformed data_type (expected a name or {name, configuration})");
  static const struct {
    const char *name;
    int32_t type, size;
  } simple[] = {{"bool", ZR_BOOL, 1},     {"int8", ZR_INT, 1},      {"int16", ZR_INT, 2},
                {"int32", ZR_INT, 4},     {"int64", ZR_INT, 8},     {"uint8", ZR_UINT, 1},
                {"uint16", ZR_UINT, 2},   {"uint32", ZR_UINT, 4},   {"uint64", ZR_UINT, 8},
                {"float16", ZR_FLOAT, 2}, {"float32", ZR_FLOAT, 4}, {"float64", ZR_FLOAT, 8}};
  for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
    if (strcmp(simple[i].name, name) == 0) {
      out->type = simple[i].type;
      out->size = simple[i].size;
      out->swap_unit = simple[i].size;
      return QL_OK;
    }
  }
  if (strcmp(name, "numpy.datetime64") == 0 || strcmp(name, "numpy.timedelta64") == 0) {
    int is_dt = name[6] == 'd';
    const char *unit = json_string_value(json_object_get(config, "unit"));
    json_t *scale = json_object_get(config, "scale_factor");
    if (!unit) return ql_error_set(error, QL_EDATA, "data_type %s without configuration.unit", name);
    if (scale && !(json_is_integer(scale) && json_integer_value(scale) == 1)) {
      return ql_error_set(error, QL_ENOTSUP, "data_type %s with scale_factor other than 1", name);
    }
    out->type = is_dt ? ZR_DATETIME : ZR_TIMEDELTA;
    out->size = 8;
    out->swap_unit = 8;
    return set_time_unit(out, unit, name, error);
  }
  if (strcmp(name, "string") == 0) {
    out->type = ZR_VLEN;
    out->size = 16;
    out->swap_unit = 1;
    return QL_OK;
  }
  if (strcmp(name, "fixed_length_utf32") == 0) {
    if (!parse_v3_length(config, &out->size) || out->size % 4 != 0) {
      return ql_error_set(error, QL_EDATA, "data_type %s needs configuration.length_bytes, a positive multiple of 4",
                          name);
    }
    out->type = ZR_UNICODE;
    out->swap_unit = 4;
    return QL_OK;
  }
  if (strcmp(name, "null_terminated_bytes") == 0 || strcmp(name, "fixed_length_bytes") == 0) {
    if (!parse_v3_length(config, &out->size)) {
      return ql_error_set(error, QL_EDATA, "data_type %s needs a positive configuration.length_bytes", name);
    }
    out->type = ZR_BYTES;
    out->swap_unit = 1;
    return QL_OK;
  }
  return ql_error_set(error, QL_ENOTSUP, "unsupported data_type '%s'", name);
}

const char *zr_dtype_name(const struct zr_dtype *d, char *buf, size_t cap) {
  switch (d->type) {
    case ZR_BOOL: return "bool";
    case ZR_INT: snprintf(buf, cap, "int%d", d->size * 8); return buf;
    case ZR_UINT: snprintf(buf, cap, "uint%d", d->size * 8); return buf;
    case ZR_FLOAT: snprintf(buf, cap, "float%d", d->size * 8); return buf;
    case ZR_DATETIME: snprintf(buf, cap, "datetime64[%s]", d->unit); return buf;
    case ZR_TIMEDELTA: snprintf(buf, cap, "timedelta64[%s]", d->unit); return buf;
    case ZR_BYTES: snprintf(buf, cap, "S%d", d->size); return buf;
    case ZR_UNICODE: snprintf(buf, cap, "U%d", d->size / 4); return buf;
    case ZR_VLEN: return "string";
    default: return "unknown";
  }
}

int zr_dtype_is_native(const struct zr_dtype *d) { return d->swap_unit <= 1 || d->big_endian == host_is_big_endian(); }

void zr_dtype_to_native(const struct zr_dtype *d, uint8_t *data, int64_t n) {
  int unit = d->swap_unit;
  if (zr_dtype_is_native(d)) return;
  int64_t units = n * (d->size / unit);
  for (int64_t i = 0; i < units; i++) {
    uint8_t *p = data + i * unit;
    for (int a = 0, b = unit - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
  }
}

float zr_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      /* subnormal half: renormalise */
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      mant &= 0x3FF;
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}
