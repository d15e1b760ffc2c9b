/* SPDX-License-Identifier: Apache-2.0 */
/* Builders and readers for Arrow C Data Interface structs.
 *
 * Everything built here keeps its memory in the struct's own pointers
 * (format, name, metadata, buffers, children, dictionary are all malloc'd by
 * us) and frees it in release; private_data is unused except by streams.
 * Children and dictionaries may be foreign (moved in): they are released
 * through their own release callback and only their struct is freed here. */
#include "qlink/lib/arrow.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

static char *ql_strdup_or_null(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (copy) memcpy(copy, s, n);
  return copy;
}

/* ------------------------------------------------------------- schemas */

static void ql_schema_release_owned(struct ArrowSchema *schema) {
  free((void *)schema->format);
  free((void *)schema->name);
  free((void *)schema->metadata);
  if (schema->children) {
    for (int64_t i = 0; i < schema->n_children; i++) {
      struct ArrowSchema *child = schema->children[i];
      if (!child) continue;
      if (child->release) child->release(child);
      free(child);
    }
    free(schema->children);
  }
  if (schema->dictionary) {
    if (schema->dictionary->release) schema->dictionary->release(schema->dictionary);
    free(schema->dictionary);
  }
  schema->release = NULL;
}

void ql_schema_release(struct ArrowSchema *schema) {
  if (schema && schema->release) schema->release(schema);
}

void ql_schema_move(struct ArrowSchema *src, struct ArrowSchema *dst) {
  *dst = *src;
  src->release = NULL;
}

/* Allocate n zeroed child structs (release == NULL). */
static int ql_schema_alloc_children(struct ArrowSchema *out, int64_t n, struct ql_error *error) {
  out->n_children = 0;
  out->children = NULL;
  if (n == 0) return QL_OK;
  out->children = calloc((size_t)n, sizeof(struct ArrowSchema *));
  if (!out->children) return ql_error_set(error, QL_ENOMEM, "out of memory allocating %lld schema children", (long long)n);
  out->n_children = n;
  for (int64_t i = 0; i < n; i++) {
    out->children[i] = calloc(1, sizeof(struct ArrowSchema));
    if (!out->children[i]) return ql_error_set(error, QL_ENOMEM, "out of memory allocating a schema child");
  }
  return QL_OK;
}

int ql_schema_init(struct ArrowSchema *out, const char *format, const char *name, int64_t flags,
                   struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!format) return ql_error_set(error, QL_EINVAL, "ql_schema_init: format is NULL");
  out->format = ql_strdup_or_null(format);
  out->name = ql_strdup_or_null(name);
  out->flags = flags;
  out->release = ql_schema_release_owned;
  if (!out->format || (name && !out->name)) {
    ql_schema_release(out);
    return ql_error_set(error, QL_ENOMEM, "out of memory building schema '%s'", name ? name : "");
  }
  return QL_OK;
}

int ql_schema_init_struct(struct ArrowSchema *out, const char *name, int64_t n_children, struct ql_error *error) {
  if (n_children < 0) {
    memset(out, 0, sizeof(*out));
    return ql_error_set(error, QL_EINVAL, "ql_schema_init_struct: n_children is %lld", (long long)n_children);
  }
  QL_RETURN_NOT_OK(ql_schema_init(out, "+s", name, 0, error));
  int rc = ql_schema_alloc_children(out, n_children, error);
  if (rc != QL_OK) ql_schema_release(out);
  return rc;
}

/* Arrow's metadata encoding: int32 count, then per pair int32 key length,
 * key bytes, int32 value length, value bytes (native endianness). */
static int64_t ql_metadata_size(const char *metadata) {
  if (!metadata) return 0;
  int32_t n;
  memcpy(&n, metadata, 4);
  int64_t pos = 4;
  for (int32_t i = 0; i < n; i++) {
    for (int part = 0; part < 2; part++) {
      int32_t len;
      memcpy(&len, metadata + pos, 4);
      pos += 4 + len;
    }
  }
  return pos;
}

int ql_schema_set_metadata(struct ArrowSchema *schema, int64_t n, const char *const *keys,
                           const char *const *values, struct ql_error *error) {
  if (!schema || schema->release != ql_schema_release_owned) {
    return ql_error_set(error, QL_EINVAL, "ql_schema_set_metadata: schema was not built by libqlink");
  }
  if (n < 0 || n > INT32_MAX) return ql_error_set(error, QL_EINVAL, "ql_schema_set_metadata: %lld pairs", (long long)n);
  char *buf = NULL;
  if (n > 0) {
    size_t total = 4;
    for (int64_t i = 0; i < n; i++) {
      if (!keys[i] || !values[i]) return ql_error_set(error, QL_EINVAL, "ql_schema_set_metadata: pair %lld has a NULL string", (long long)i);
      size_t klen = strlen(keys[i]), vlen = strlen(values[i]);
      if (klen > INT32_MAX || vlen > INT32_MAX) return ql_error_set(error, QL_EOVERFLOW, "metadata entry %lld is too long", (long long)i);
      total += 8 + klen + vlen;
    }
    buf = malloc(total);
    if (!buf) return ql_error_set(error, QL_ENOMEM, "out of memory for %zu bytes of schema metadata", total);
    int32_t count = (int32_t)n;
    memcpy(buf, &count, 4);
    size_t pos = 4;
    for (int64_t i = 0; i < n; i++) {
      const char *parts[2] = {keys[i], values[i]};
      for (int p = 0; p < 2; p++) {
        int32_t len = (int32_t)strlen(parts[p]);
        memcpy(buf + pos, &len, 4);
        memcpy(buf + pos + 4, parts[p], (size_t)len);
        pos += 4 + (size_t)len;
      }
    }
  }
  free((void *)schema->metadata);
  schema->metadata = buf;
  return QL_OK;
}

int ql_schema_metadata_get(const struct ArrowSchema *schema, const char *key, char **out) {
  *out = NULL;
  if (!schema || !schema->metadata || !key) return QL_ENOTFOUND;
  const char *m = schema->metadata;
  int32_t n;
  memcpy(&n, m, 4);
  size_t pos = 4, want = strlen(key);
  for (int32_t i = 0; i < n; i++) {
    int32_t klen, vlen;
    memcpy(&klen, m + pos, 4);
    const char *k = m + pos + 4;
    pos += 4 + (size_t)klen;
    memcpy(&vlen, m + pos, 4);
    const char *v = m + pos + 4;
    pos += 4 + (size_t)vlen;
    if ((size_t)klen == want && memcmp(k, key, want) == 0) {
      char *value = malloc((size_t)vlen + 1);
      if (!value) return QL_ENOMEM;
      memcpy(value, v, (size_t)vlen);
      value[vlen] = '\0';
      *out = value;
      return QL_OK;
    }
  }
  return QL_ENOTFOUND;
}

static int ql_schema_copy_metadata(const struct ArrowSchema *src, struct ArrowSchema *out, struct ql_error *error) {
  if (!src->metadata) return QL_OK;
  int64_t size = ql_metadata_size(src->metadata);
  char *copy = malloc((size_t)size);
  if (!copy) return ql_error_set(error, QL_ENOMEM, "out of memory copying schema metadata");
  memcpy(copy, src->metadata, (size_t)size);
  out->metadata = copy;
  return QL_OK;
}

int ql_schema_copy(const struct ArrowSchema *src, struct ArrowSchema *out, struct ql_error *error) {
  if (!src || !src->release) {
    memset(out, 0, sizeof(*out));
    return ql_error_set(error, QL_EINVAL, "ql_schema_copy: source schema is released");
  }
  QL_RETURN_NOT_OK(ql_schema_init(out, src->format, src->name, src->flags, error));
  int rc = ql_schema_copy_metadata(src, out, error);
  if (rc == QL_OK) rc = ql_schema_alloc_children(out, src->n_children, error);
  for (int64_t i = 0; rc == QL_OK && i < src->n_children; i++) {
    rc = ql_schema_copy(src->children[i], out->children[i], error);
  }
  if (rc == QL_OK && src->dictionary) {
    out->dictionary = calloc(1, sizeof(struct ArrowSchema));
    rc = out->dictionary ? ql_schema_copy(src->dictionary, out->dictionary, error)
                         : ql_error_set(error, QL_ENOMEM, "out of memory copying a dictionary schema");
  }
  if (rc != QL_OK) ql_schema_release(out);
  return rc;
}

int ql_schema_project(const struct ArrowSchema *src, const int32_t *indices, int32_t n, struct ArrowSchema *out,
                      struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!src || !src->release || strcmp(src->format, "+s") != 0) {
    return ql_error_set(error, QL_EINVAL, "ql_schema_project: source is not a struct schema");
  }
  for (int32_t i = 0; i < n; i++) {
    if (indices[i] < 0 || indices[i] >= src->n_children) {
      return ql_error_set(error, QL_EINVAL, "ql_schema_project: index %d out of range (schema has %lld fields)",
                          (int)indices[i], (long long)src->n_children);
    }
  }
  QL_RETURN_NOT_OK(ql_schema_init_struct(out, src->name, n, error));
  out->flags = src->flags;
  int rc = ql_schema_copy_metadata(src, out, error);
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    rc = ql_schema_copy(src->children[indices[i]], out->children[i], error);
  }
  if (rc != QL_OK) ql_schema_release(out);
  return rc;
}

int64_t ql_schema_find(const struct ArrowSchema *schema, const char *name) {
  if (!schema || !name) return -1;
  for (int64_t i = 0; i < schema->n_children; i++) {
    const char *child = schema->children[i]->name;
    if (child && strcmp(child, name) == 0) return i;
  }
  return -1;
}

int64_t ql_format_byte_width(const char *format) {
  if (!format || !format[0]) return -1;
  if (format[1] == '\0') {
    switch (format[0]) {
      case 'b':
        return 0;
      case 'c':
      case 'C':
        return 1;
      case 's':
      case 'S':
      case 'e':
        return 2;
      case 'i':
      case 'I':
      case 'f':
        return 4;
      case 'l':
      case 'L':
      case 'g':
        return 8;
      default:
        return -1;
    }
  }
  if (strncmp(format, "w:", 2) == 0) {
    char *end;
    long width = strtol(format + 2, &end, 10);
    return (*end == '\0' && width > 0) ? width : -1;
  }
  if (strncmp(format, "d:", 2) == 0) {
    /* "d:P,S" is decimal128; "d:P,S,BITS" names its bit width. */
    const char *comma = strchr(format + 2, ',');
    const char *bits = comma ? strchr(comma + 1, ',') : NULL;
    if (!comma) return -1;
    if (!bits) return 16;
    long b = strtol(bits + 1, NULL, 10);
    return (b == 32 || b == 64 || b == 128 || b == 256) ? b / 8 : -1;
  }
  if (format[0] == 't' && format[1] && format[2]) {
    char kind = format[1], unit = format[2];
    switch (kind) {
      case 'd': /* date32 days, date64 milliseconds */
        return unit == 'D' ? 4 : (unit == 'm' ? 8 : -1);
      case 't': /* time32 s/ms, time64 us/ns */
        return (unit == 's' || unit == 'm') ? 4 : ((unit == 'u' || unit == 'n') ? 8 : -1);
      case 's': /* timestamp */
      case 'D': /* duration */
        return (unit == 's' || unit == 'm' || unit == 'u' || unit == 'n') ? 8 : -1;
      case 'i': /* interval months / days-ms / month-day-ns */
        return unit == 'M' ? 4 : (unit == 'D' ? 8 : (unit == 'n' ? 16 : -1));
      default:
        return -1;
    }
  }
  return -1;
}

/* -------------------------------------------------------------- arrays */

static void ql_array_release_owned(struct ArrowArray *array) {
  if (array->buffers) {
    for (int64_t i = 0; i < array->n_buffers; i++) free((void *)array->buffers[i]);
    free(array->buffers);
  }
  if (array->children) {
    for (int64_t i = 0; i < array->n_children; i++) {
      struct ArrowArray *child = array->children[i];
      if (!child) continue;
      if (child->release) child->release(child);
      free(child);
    }
    free(array->children);
  }
  if (array->dictionary) {
    if (array->dictionary->release) array->dictionary->release(array->dictionary);
    free(array->dictionary);
  }
  array->release = NULL;
}

void ql_array_release(struct ArrowArray *array) {
  if (array && array->release) array->release(array);
}

void ql_array_move(struct ArrowArray *src, struct ArrowArray *dst) {
  *dst = *src;
  src->release = NULL;
}

static int64_t ql_count_nulls(const uint8_t *validity, int64_t length) {
  if (!validity) return 0;
  int64_t valid = 0;
  for (int64_t i = 0; i < length / 8; i++) valid += __builtin_popcount(validity[i]);
  for (int64_t i = (length / 8) * 8; i < length; i++) valid += (validity[i / 8] >> (i % 8)) & 1;
  return length - valid;
}

/* An array with `n_buffers` owned buffers (given) and no children. On
 * failure frees the buffers. */
static int ql_array_init_buffers(struct ArrowArray *out, int64_t length, int64_t null_count, int64_t n_buffers,
                                 void **buffers, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  const void **owned = calloc((size_t)(n_buffers > 0 ? n_buffers : 1), sizeof(void *));
  if (!owned || length < 0) {
    for (int64_t i = 0; i < n_buffers; i++) free(buffers[i]);
    free(owned);
    return length < 0 ? ql_error_set(error, QL_EINVAL, "array length %lld is negative", (long long)length)
                      : ql_error_set(error, QL_ENOMEM, "out of memory building an array");
  }
  for (int64_t i = 0; i < n_buffers; i++) owned[i] = buffers[i];
  out->length = length;
  out->null_count = null_count >= 0 ? null_count : ql_count_nulls(buffers[0], length);
  out->n_buffers = n_buffers;
  out->buffers = owned;
  out->release = ql_array_release_owned;
  return QL_OK;
}

int ql_array_init_fixed(struct ArrowArray *out, int64_t length, int64_t null_count, void *validity, void *data,
                        struct ql_error *error) {
  void *buffers[2] = {validity, data};
  return ql_array_init_buffers(out, length, null_count, 2, buffers, error);
}

int ql_array_init_binary(struct ArrowArray *out, int64_t length, int64_t null_count, void *validity,
                         int32_t *offsets, void *data, struct ql_error *error) {
  void *buffers[3] = {validity, offsets, data};
  return ql_array_init_buffers(out, length, null_count, 3, buffers, error);
}

int ql_array_init_struct(struct ArrowArray *out, int64_t length, int64_t n_children, struct ql_error *error) {
  void *validity = NULL;
  if (n_children < 0) {
    memset(out, 0, sizeof(*out));
    return ql_error_set(error, QL_EINVAL, "ql_array_init_struct: n_children is %lld", (long long)n_children);
  }
  QL_RETURN_NOT_OK(ql_array_init_buffers(out, length, 0, 1, &validity, error));
  if (n_children == 0) return QL_OK;
  out->children = calloc((size_t)n_children, sizeof(struct ArrowArray *));
  if (!out->children) {
    ql_array_release(out);
    return ql_error_set(error, QL_ENOMEM, "out of memory allocating %lld array children", (long long)n_children);
  }
  out->n_children = n_children;
  for (int64_t i = 0; i < n_children; i++) {
    out->children[i] = calloc(1, sizeof(struct ArrowArray));
    if (!out->children[i]) {
      ql_array_release(out);
      return ql_error_set(error, QL_ENOMEM, "out of memory allocating an array child");
    }
  }
  return QL_OK;
}

int ql_array_init_nulls(struct ArrowArray *out, const char *format, int64_t length, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!format || length < 0) return ql_error_set(error, QL_EINVAL, "ql_array_init_nulls: bad format or length");
  if (strcmp(format, "n") == 0) return ql_array_init_buffers(out, length, length, 0, NULL, error);
  size_t bitmap = (size_t)(length + 7) / 8;
  void *validity = calloc(bitmap ? bitmap : 1, 1);
  int64_t width = ql_format_byte_width(format);
  if (width >= 0) {
    size_t data_size = width == 0 ? bitmap : (size_t)width * (size_t)length;
    void *data = calloc(data_size ? data_size : 1, 1);
    if (!validity || !data) {
      free(validity);
      free(data);
      return ql_error_set(error, QL_ENOMEM, "out of memory for %lld nulls of '%s'", (long long)length, format);
    }
    return ql_array_init_fixed(out, length, length, validity, data, error);
  }
  int large = strcmp(format, "U") == 0 || strcmp(format, "Z") == 0;
  if (large || strcmp(format, "u") == 0 || strcmp(format, "z") == 0) {
    void *offsets = calloc((size_t)length + 1, large ? 8 : 4);
    void *data = malloc(1);
    if (!validity || !offsets || !data) {
      free(validity);
      free(offsets);
      free(data);
      return ql_error_set(error, QL_ENOMEM, "out of memory for %lld nulls of '%s'", (long long)length, format);
    }
    void *buffers[3] = {validity, offsets, data};
    return ql_array_init_buffers(out, length, length, 3, buffers, error);
  }
  free(validity);
  return ql_error_set(error, QL_ENOTSUP, "ql_array_init_nulls: format '%s' is not fixed-width or binary", format);
}

int ql_array_is_valid(const struct ArrowArray *array, int64_t i) {
  /* The null type has no buffers and every row is null. */
  if (array->n_buffers == 0) return array->null_count == 0;
  const uint8_t *validity = array->buffers[0];
  if (!validity) return 1;
  int64_t bit = array->offset + i;
  return (validity[bit / 8] >> (bit % 8)) & 1;
}

int ql_array_view_at(const struct ArrowArray *array, int64_t i, const uint8_t **data, int64_t *length,
                     struct ql_error *error) {
  int64_t row = array->offset + i;
  if (array->n_buffers < 3 || !array->buffers || !array->buffers[1]) {
    return ql_error_set(error, QL_EDATA,
                        "view array: %" PRId64
                        " buffers, it needs at least 3 (validity, views, "
                        "data sizes)",
                        array->n_buffers);
  }
  const uint8_t *view = (const uint8_t *)array->buffers[1] + 16 * row;
  int32_t len, index, offset;
  memcpy(&len, view, 4);
  if (len < 0) return ql_error_set(error, QL_EDATA, "view array: row %" PRId64 " has length %d", i, (int)len);
  *length = len;
  if (len <= 12) { /* short strings are inline, after the length */
    *data = view + 4;
    return QL_OK;
  }
  memcpy(&index, view + 8, 4);
  memcpy(&offset, view + 12, 4);
  int64_t n_data = array->n_buffers - 3;
  const int64_t *sizes = array->buffers[array->n_buffers - 1];
  if (index < 0 || index >= n_data || offset < 0 || !array->buffers[2 + index] ||
      (sizes && (int64_t)offset + len > sizes[index])) {
    return ql_error_set(error, QL_EDATA,
                        "view array: row %" PRId64
                        " names bytes [%d, %d + %d) of data buffer %d, "
                        "which the array does not have (data buffers: %" PRId64 ")",
                        i, (int)offset, (int)offset, (int)len, (int)index, n_data);
  }
  *data = (const uint8_t *)array->buffers[2 + index] + offset;
  return QL_OK;
}

/* ------------------------------------------------------------- streams */

struct ql_array_stream {
  struct ArrowSchema schema;
  struct ArrowArray *arrays;
  int64_t n;
  int64_t next;
  char *last_error;
};

static void ql_stream_set_error(struct ql_array_stream *s, const char *message) {
  free(s->last_error);
  s->last_error = NULL;
  size_t n = strlen(message) + 1;
  s->last_error = malloc(n);
  if (s->last_error) memcpy(s->last_error, message, n);
}

static int ql_stream_get_schema(struct ArrowArrayStream *stream, struct ArrowSchema *out) {
  struct ql_array_stream *s = stream->private_data;
  struct ql_error error = {0};
  int rc = ql_schema_copy(&s->schema, out, &error);
  if (rc != QL_OK) {
    ql_stream_set_error(s, ql_error_message(&error));
    ql_error_release(&error);
    return ql_status_to_errno(rc);
  }
  return 0;
}

static int ql_stream_get_next(struct ArrowArrayStream *stream, struct ArrowArray *out) {
  struct ql_array_stream *s = stream->private_data;
  if (s->next >= s->n) {
    /* End of stream: a released array, status 0. */
    memset(out, 0, sizeof(*out));
    return 0;
  }
  ql_array_move(&s->arrays[s->next++], out);
  return 0;
}

static const char *ql_stream_get_last_error(struct ArrowArrayStream *stream) {
  struct ql_array_stream *s = stream->private_data;
  return s->last_error;
}

static void ql_stream_release(struct ArrowArrayStream *stream) {
  struct ql_array_stream *s = stream->private_data;
  for (int64_t i = s->next; i < s->n; i++) ql_array_release(&s->arrays[i]);
  free(s->arrays);
  ql_schema_release(&s->schema);
  free(s->last_error);
  free(s);
  stream->release = NULL;
  stream->private_data = NULL;
}

int ql_stream_from_arrays(struct ArrowSchema *schema, struct ArrowArray *arrays, int64_t n,
                          struct ArrowArrayStream *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  struct ql_array_stream *s = calloc(1, sizeof(*s));
  struct ArrowArray *owned = n > 0 ? calloc((size_t)n, sizeof(struct ArrowArray)) : NULL;
  int bad = n < 0 || !schema || !schema->release;
  if (bad || !s || (n > 0 && !owned)) {
    free(s);
    free(owned);
    /* The inputs were meant to be moved in: release them so nothing leaks. */
    for (int64_t i = 0; i < n; i++) ql_array_release(&arrays[i]);
    if (schema) ql_schema_release(schema);
    return bad ? ql_error_set(error, QL_EINVAL, "ql_stream_from_arrays: bad schema or count")
                              : ql_error_set(error, QL_ENOMEM, "out of memory building a stream");
  }
  ql_schema_move(schema, &s->schema);
  for (int64_t i = 0; i < n; i++) ql_array_move(&arrays[i], &owned[i]);
  s->arrays = owned;
  s->n = n;
  out->get_schema = ql_stream_get_schema;
  out->get_next = ql_stream_get_next;
  out->get_last_error = ql_stream_get_last_error;
  out->release = ql_stream_release;
  out->private_data = s;
  return QL_OK;
}
