/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink IR: the arena builder (qlink/lib/ir.h).
 *
 * Expressions and nodes live in two growable arrays that move to the view at
 * finish. Everything they point at (strings, id arrays, schemas, literal
 * arrays) is copied into a chain of blocks that are never reallocated, so
 * those pointers stay valid when the arrays grow and after the hand-over.
 * Schemas and arrays copied into blocks are owned by the view: their release
 * callbacks only mark them released; the view's release frees the blocks.
 */
#include <limits.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

struct ql_ir_block {
  struct ql_ir_block *next;
  size_t used;
  size_t cap;
  alignas(max_align_t) unsigned char data[];
};

struct ql_ir_builder {
  struct ql_expr *exprs;
  int32_t n_exprs;
  int32_t cap_exprs;
  struct ql_plan_node *nodes;
  int32_t n_nodes;
  int32_t cap_nodes;
  struct ql_ir_block *blocks; /* newest first */
  size_t next_block_size;
  int status;                 /* first failure, sticky */
  struct ql_error error;      /* its detail */
};

/* What a finished view's private_data owns. */
struct ql_ir_view_data {
  struct ql_ir_block *blocks;
  struct ql_expr *exprs;
  struct ql_plan_node *nodes;
};

/* A TPC-H plan view is 20-60 KiB: a first block of 16 KiB and doubling
 * keeps that to two or three mallocs. */
enum { QL_IR_FIRST_BLOCK = 16384, QL_IR_MAX_BLOCK = 1 << 20 };

/* ---- formats */

enum ql_ir_storage ql_ir_format_storage(const char *f) {
  if (f == NULL) {
    return QL_IR_STORAGE_OTHER;
  }
  if (f[0] != '\0' && f[1] == '\0') {
    switch (f[0]) {
      case 'n': return QL_IR_STORAGE_NULL;
      case 'b': return QL_IR_STORAGE_BOOL;
      case 'c': case 's': case 'i': case 'l': return QL_IR_STORAGE_SIGNED;
      case 'C': case 'S': case 'I': case 'L': return QL_IR_STORAGE_UNSIGNED;
      case 'e': case 'f': case 'g': return QL_IR_STORAGE_FLOAT;
      case 'u': case 'U': case 'z': case 'Z': return QL_IR_STORAGE_BYTES;
      default: return QL_IR_STORAGE_OTHER;
    }
  }
  if (strcmp(f, "vu") == 0 || strcmp(f, "vz") == 0 || strncmp(f, "w:", 2) == 0) {
    return QL_IR_STORAGE_BYTES;
  }
  if (strncmp(f, "d:", 2) == 0) {
    /* "d:p,s" or "d:p,s,128" is decimal128; other bit widths only in `array`. */
    const char *comma = strchr(f + 2, ',');
    const char *bits = comma ? strchr(comma + 1, ',') : NULL;
    return (comma && (bits == NULL || strcmp(bits, ",128") == 0)) ? QL_IR_STORAGE_DECIMAL128
                                                                  : QL_IR_STORAGE_OTHER;
  }
  if (f[0] == 't') {
    /* dates, times, timestamps, durations; intervals ("ti?") are only in `array`. */
    if ((f[1] == 'd' && (strcmp(f, "tdD") == 0 || strcmp(f, "tdm") == 0)) ||
        (f[1] == 't' && f[2] != '\0' && strchr("smun", f[2]) && f[3] == '\0') ||
        (f[1] == 's' && f[2] != '\0' && strchr("smun", f[2]) && f[3] == ':') ||
        (f[1] == 'D' && f[2] != '\0' && strchr("smun", f[2]) && f[3] == '\0')) {
      return QL_IR_STORAGE_SIGNED;
    }
  }
  return QL_IR_STORAGE_OTHER;
}

int64_t ql_ir_format_width(const char *f) {
  if (f == NULL || f[0] == '\0') {
    return -1;
  }
  if (f[1] == '\0') {
    switch (f[0]) {
      case 'b': return 0;
      case 'c': case 'C': return 1;
      case 's': case 'S': case 'e': return 2;
      case 'i': case 'I': case 'f': return 4;
      case 'l': case 'L': case 'g': return 8;
      default: return -1;
    }
  }
  if (strncmp(f, "w:", 2) == 0) {
    char *end = NULL;
    long n = strtol(f + 2, &end, 10);
    return (end != f + 2 && *end == '\0' && n > 0 && n <= INT32_MAX) ? (int64_t)n : -1;
  }
  if (strncmp(f, "d:", 2) == 0) {
    const char *comma = strchr(f + 2, ',');
    const char *bits = comma ? strchr(comma + 1, ',') : NULL;
    if (comma == NULL) return -1;
    if (bits == NULL || strcmp(bits, ",128") == 0) return 16;
    if (strcmp(bits, ",256") == 0) return 32;
    if (strcmp(bits, ",64") == 0) return 8;
    if (strcmp(bits, ",32") == 0) return 4;
    return -1;
  }
  if (strcmp(f, "tdD") == 0 || strcmp(f, "tts") == 0 || strcmp(f, "ttm") == 0 || strcmp(f, "tiM") == 0) {
    return 4;
  }
  if (strcmp(f, "tiD") == 0) return 8;
  if (strcmp(f, "tin") == 0) return 16;
  if (ql_ir_format_storage(f) == QL_IR_STORAGE_SIGNED) {
    return 8; /* tdm, ttu, ttn, timestamps, durations */
  }
  return -1;
}

/* ---- failure */

static void builder_fail(struct ql_ir_builder *b, int status, const char *fmt, ...) QL_PRINTF_FORMAT(3, 4);

static void builder_fail(struct ql_ir_builder *b, int status, const char *fmt, ...) {
  if (b->status != QL_OK) {
    return; /* the first failure wins */
  }
  va_list args;
  va_start(args, fmt);
  b->status = ql_error_setv(&b->error, status, fmt, args);
  va_end(args);
}

static int builder_ok(const struct ql_ir_builder *b) { return b != NULL && b->status == QL_OK; }

/* ---- blocks */

static void blocks_free(struct ql_ir_block *block) {
  while (block != NULL) {
    struct ql_ir_block *next = block->next;
    free(block);
    block = next;
  }
}

/* Max-aligned memory that lives until the view is released, not zeroed;
 * NULL (and a sticky QL_ENOMEM) on failure. */
static void *arena_alloc_raw(struct ql_ir_builder *b, size_t size) {
  const size_t align = alignof(max_align_t);
  if (!builder_ok(b)) {
    return NULL;
  }
  if (size == 0) {
    size = 1;
  }
  if (size > SIZE_MAX / 2) {
    builder_fail(b, QL_EOVERFLOW, "IR builder: allocation of %zu bytes is too large", size);
    return NULL;
  }
  size = (size + align - 1) / align * align;
  struct ql_ir_block *block = b->blocks;
  if (block == NULL || block->cap - block->used < size) {
    size_t cap = b->next_block_size > size ? b->next_block_size : size;
    block = malloc(sizeof(*block) + cap);
    if (block == NULL) {
      builder_fail(b, QL_ENOMEM, "IR builder: out of memory allocating %zu bytes", cap);
      return NULL;
    }
    block->next = b->blocks;
    block->used = 0;
    block->cap = cap;
    b->blocks = block;
    if (b->next_block_size < QL_IR_MAX_BLOCK) {
      b->next_block_size *= 2;
    }
  }
  void *p = block->data + block->used;
  block->used += size;
  return p;
}

/* As arena_alloc_raw, zeroed. */
static void *arena_alloc(struct ql_ir_builder *b, size_t size) {
  void *p = arena_alloc_raw(b, size);
  if (p != NULL) {
    memset(p, 0, size);
  }
  return p;
}

/* Whether `p` points into memory this builder handed out (ql_ir_string,
 * ql_ir_struct_schema): such memory is already owned by the view and
 * immutable, so it is shared instead of copied again. A builder has a few
 * blocks, so the walk is short. */
static int in_arena(const struct ql_ir_builder *b, const void *p) {
  uintptr_t a = (uintptr_t)p;
  for (const struct ql_ir_block *block = b->blocks; block != NULL; block = block->next) {
    uintptr_t lo = (uintptr_t)block->data;
    if (a >= lo && a < lo + block->used) {
      return 1;
    }
  }
  return 0;
}

static void *arena_dup(struct ql_ir_builder *b, const void *src, size_t size) {
  void *p = arena_alloc_raw(b, size);
  if (p != NULL && size > 0) {
    memcpy(p, src, size);
  }
  return p;
}

/* NULL stays NULL; otherwise a copy (NULL after a failure). */
static const char *arena_str(struct ql_ir_builder *b, const char *s) {
  if (s == NULL || in_arena(b, s)) {
    return s;
  }
  return arena_dup(b, s, strlen(s) + 1);
}

/* Copy `n` ids, each -1 < id < limit. `what` names them for the error. */
static const int32_t *arena_ids(struct ql_ir_builder *b, const int32_t *ids, int32_t n, int32_t limit,
                                const char *what) {
  if (n < 0) {
    builder_fail(b, QL_EINVAL, "IR builder: negative count %d of %s", (int)n, what);
    return NULL;
  }
  if (n == 0) {
    return NULL;
  }
  if (ids == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: %d %s but the array is NULL", (int)n, what);
    return NULL;
  }
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= limit) {
      builder_fail(b, QL_EINVAL, "IR builder: %s[%d] = %d does not exist (have %d)", what, (int)i, (int)ids[i],
                   (int)limit);
      return NULL;
    }
  }
  return arena_dup(b, ids, (size_t)n * sizeof(*ids));
}

/* ---- Arrow copies owned by the arena */

/* Memory belongs to the view's blocks; release only marks the struct (and,
 * as the Arrow C Data Interface requires of a parent, its children)
 * released. */
static void arena_schema_release(struct ArrowSchema *schema) {
  for (int64_t i = 0; i < schema->n_children; i++) {
    if (schema->children[i]->release != NULL) {
      schema->children[i]->release(schema->children[i]);
    }
  }
  if (schema->dictionary != NULL && schema->dictionary->release != NULL) {
    schema->dictionary->release(schema->dictionary);
  }
  schema->release = NULL;
}

static void arena_array_release(struct ArrowArray *array) { array->release = NULL; }

/* Length of Arrow's metadata encoding (int32 count, then int32-length-
 * prefixed keys and values), or -1 when a length is negative. */
static int64_t metadata_size(const char *metadata) {
  int32_t n, len;
  int64_t size = sizeof(int32_t);
  memcpy(&n, metadata, sizeof(n));
  if (n < 0) {
    return -1;
  }
  for (int64_t i = 0; i < 2 * (int64_t)n; i++) {
    memcpy(&len, metadata + size, sizeof(len));
    if (len < 0) {
      return -1;
    }
    size += (int64_t)sizeof(int32_t) + len;
  }
  return size;
}

static struct ArrowSchema *arena_schema(struct ql_ir_builder *b, const struct ArrowSchema *src, int depth) {
  if (!builder_ok(b)) {
    return NULL;
  }
  if (src->release == NULL || src->format == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: schema is released or has no format");
    return NULL;
  }
  if (in_arena(b, src)) {
    return (struct ArrowSchema *)src; /* made by ql_ir_struct_schema: shared */
  }
  if (depth > 64 || src->n_children < 0 || (src->n_children > 0 && src->children == NULL)) {
    builder_fail(b, QL_EINVAL, "IR builder: schema \"%s\" is nested too deeply or has a bad child list",
                 src->name ? src->name : "");
    return NULL;
  }
  struct ArrowSchema *dst = arena_alloc(b, sizeof(*dst));
  if (dst == NULL) {
    return NULL;
  }
  dst->format = arena_str(b, src->format);
  dst->name = arena_str(b, src->name);
  dst->flags = src->flags;
  if (src->metadata != NULL) {
    int64_t size = metadata_size(src->metadata);
    if (size < 0) {
      builder_fail(b, QL_EINVAL, "IR builder: schema \"%s\" has malformed metadata", src->name ? src->name : "");
      return NULL;
    }
    dst->metadata = arena_dup(b, src->metadata, (size_t)size);
  }
  dst->n_children = src->n_children;
  if (src->n_children > 0) {
    dst->children = arena_alloc(b, (size_t)src->n_children * sizeof(*dst->children));
    for (int64_t i = 0; i < src->n_children && builder_ok(b); i++) {
      dst->children[i] = arena_schema(b, src->children[i], depth + 1);
    }
  }
  if (src->dictionary != NULL) {
    dst->dictionary = arena_schema(b, src->dictionary, depth + 1);
  }
  dst->release = arena_schema_release;
  return builder_ok(b) ? dst : NULL;
}

/* ---- memory handed out to callers (shared, never copied again) */

const char *ql_ir_string(struct ql_ir_builder *b, const char *s, size_t length) {
  if (!builder_ok(b)) {
    return NULL;
  }
  if (s == NULL && length > 0) {
    builder_fail(b, QL_EINVAL, "IR builder: string of %zu bytes is NULL", length);
    return NULL;
  }
  if (length >= SIZE_MAX / 2) {
    builder_fail(b, QL_EOVERFLOW, "IR builder: string of %zu bytes is too long", length);
    return NULL;
  }
  char *dst = arena_alloc_raw(b, length + 1);
  if (dst == NULL) {
    return NULL;
  }
  dst[length] = '\0';
  /* Names are short: one pass copies and replaces NUL (a C string cannot
   * hold it) for less than memcpy + memchr calls cost. */
  for (size_t i = 0; i < length; i++) {
    dst[i] = s[i] != '\0' ? s[i] : ' ';
  }
  return dst;
}

const char **ql_ir_string_array(struct ql_ir_builder *b, int64_t n) {
  if (!builder_ok(b)) {
    return NULL;
  }
  if (n < 0 || n > INT32_MAX) {
    builder_fail(b, QL_EINVAL, "IR builder: string array of %lld entries", (long long)n);
    return NULL;
  }
  return arena_alloc(b, (size_t)(n > 0 ? n : 1) * sizeof(const char *));
}

const struct ArrowSchema *ql_ir_struct_schema(struct ql_ir_builder *b, int64_t n_fields, const char *const *formats,
                                              const char *const *names, const size_t *name_lengths,
                                              const int64_t *flags) {
  if (!builder_ok(b)) {
    return NULL;
  }
  if (n_fields < 0 || n_fields > INT32_MAX || (n_fields > 0 && (formats == NULL || names == NULL ||
                                                              name_lengths == NULL || flags == NULL))) {
    builder_fail(b, QL_EINVAL, "IR builder: struct schema of %lld fields without its arrays", (long long)n_fields);
    return NULL;
  }
  size_t n = (size_t)n_fields;
  struct ArrowSchema *top = arena_alloc(b, sizeof(*top) * (n + 1) + sizeof(top->children[0]) * (n > 0 ? n : 1));
  if (top == NULL) {
    return NULL;
  }
  struct ArrowSchema *fields = top + 1;
  struct ArrowSchema **children = (struct ArrowSchema **)(fields + n);
  for (size_t i = 0; i < n && builder_ok(b); i++) {
    if (formats[i] == NULL) {
      builder_fail(b, QL_EINVAL, "IR builder: struct schema field %zu has no format", i);
      return NULL;
    }
    fields[i].format = arena_str(b, formats[i]);
    fields[i].name = ql_ir_string(b, names[i], name_lengths[i]);
    fields[i].flags = flags[i];
    fields[i].release = arena_schema_release;
    children[i] = &fields[i];
  }
  top->format = "+s"; /* static: outlives every view */
  top->name = "";
  top->n_children = n_fields;
  top->children = n > 0 ? children : NULL;
  top->release = arena_schema_release;
  return builder_ok(b) ? top : NULL;
}

static int bit_get(const void *bits, int64_t i) {
  return (((const uint8_t *)bits)[i / 8] >> (i % 8)) & 1;
}

/* A literal's length-1 array, re-based to offset 0. */
static const struct ArrowArray *arena_literal_array(struct ql_ir_builder *b, const char *format,
                                                    const struct ArrowArray *src) {
  if (src->release == NULL || src->length != 1 || src->offset < 0) {
    builder_fail(b, QL_EINVAL, "IR builder: a literal's array must be a live length-1 array (length %lld)",
                 (long long)src->length);
    return NULL;
  }
  if (format == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: a literal with an array needs a format");
    return NULL;
  }
  enum ql_ir_storage storage = ql_ir_format_storage(format);
  int64_t width = ql_ir_format_width(format);
  int binary = storage == QL_IR_STORAGE_BYTES && (strcmp(format, "u") == 0 || strcmp(format, "z") == 0);
  int large = storage == QL_IR_STORAGE_BYTES && (strcmp(format, "U") == 0 || strcmp(format, "Z") == 0);
  int64_t n_buffers = storage == QL_IR_STORAGE_NULL ? 0 : (binary || large) ? 3 : width >= 0 ? 2 : -1;
  if (n_buffers < 0 || src->dictionary != NULL || src->n_children != 0) {
    builder_fail(b, QL_ENOTSUP, "IR builder: literal arrays of format \"%s\" are not supported", format);
    return NULL;
  }
  if (src->n_buffers != n_buffers || (n_buffers > 0 && src->buffers == NULL)) {
    builder_fail(b, QL_EINVAL, "IR builder: a \"%s\" literal array has %lld buffers, expected %lld", format,
                 (long long)src->n_buffers, (long long)n_buffers);
    return NULL;
  }
  struct ArrowArray *dst = arena_alloc(b, sizeof(*dst));
  if (dst == NULL) {
    return NULL;
  }
  dst->length = 1;
  dst->n_buffers = n_buffers;
  dst->release = arena_array_release;
  if (n_buffers == 0) {
    dst->null_count = 1;
    return dst;
  }
  const void **buffers = arena_alloc(b, (size_t)n_buffers * sizeof(*buffers));
  uint8_t *validity = arena_alloc(b, 1);
  if (validity == NULL) {
    return NULL;
  }
  int64_t off = src->offset;
  int valid = src->buffers[0] == NULL || bit_get(src->buffers[0], off);
  validity[0] = (uint8_t)valid;
  buffers[0] = validity;
  dst->null_count = !valid;
  if (binary || large) {
    int64_t start, end;
    if (large) {
      const int64_t *offsets = src->buffers[1];
      start = offsets[off];
      end = offsets[off + 1];
    } else {
      const int32_t *offsets = src->buffers[1];
      start = offsets[off];
      end = offsets[off + 1];
    }
    if (start < 0 || end < start || end - start > INT32_MAX) {
      builder_fail(b, QL_EINVAL, "IR builder: a literal array has bad offsets %lld..%lld", (long long)start,
                   (long long)end);
      return NULL;
    }
    int32_t len = (int32_t)(end - start);
    if (large) {
      int64_t *offsets = arena_alloc(b, 2 * sizeof(int64_t));
      if (offsets != NULL) offsets[1] = len;
      buffers[1] = offsets;
    } else {
      int32_t *offsets = arena_alloc(b, 2 * sizeof(int32_t));
      if (offsets != NULL) offsets[1] = len;
      buffers[1] = offsets;
    }
    buffers[2] = len > 0 ? arena_dup(b, (const char *)src->buffers[2] + start, (size_t)len) : arena_alloc(b, 1);
  } else if (width == 0) {
    uint8_t *bits = arena_alloc(b, 1);
    if (bits != NULL) bits[0] = (uint8_t)bit_get(src->buffers[1], off);
    buffers[1] = bits;
  } else {
    buffers[1] = arena_dup(b, (const char *)src->buffers[1] + off * width, (size_t)width);
  }
  dst->buffers = buffers;
  return builder_ok(b) ? dst : NULL;
}

static void arena_scalar(struct ql_ir_builder *b, const struct ql_scalar *src, struct ql_scalar *dst) {
  *dst = *src;
  dst->format = arena_str(b, src->format);
  if (ql_ir_format_storage(src->format) == QL_IR_STORAGE_BYTES && src->value.bytes.data != NULL) {
    if (src->value.bytes.size < 0) {
      builder_fail(b, QL_EINVAL, "IR builder: a literal has a negative byte size %lld",
                   (long long)src->value.bytes.size);
      return;
    }
    /* NUL-terminated as a courtesy to printers; size excludes it. */
    char *data = arena_alloc(b, (size_t)src->value.bytes.size + 1);
    if (data != NULL) {
      memcpy(data, src->value.bytes.data, (size_t)src->value.bytes.size);
    }
    dst->value.bytes.data = data;
  }
  dst->schema = src->schema ? arena_schema(b, src->schema, 0) : NULL;
  dst->array = src->array ? arena_literal_array(b, src->format, src->array) : NULL;
}

/* ---- the builder */

int ql_ir_builder_new(struct ql_ir_builder **out, struct ql_error *error) {
  if (out == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_ir_builder_new: out is NULL");
  }
  *out = calloc(1, sizeof(**out));
  if (*out == NULL) {
    return ql_error_set(error, QL_ENOMEM, "ql_ir_builder_new: out of memory");
  }
  (*out)->next_block_size = QL_IR_FIRST_BLOCK;
  return QL_OK;
}

/* Back to empty, keeping the builder itself. */
static void builder_clear(struct ql_ir_builder *b) {
  free(b->exprs);
  free(b->nodes);
  blocks_free(b->blocks);
  ql_error_release(&b->error);
  b->exprs = NULL;
  b->nodes = NULL;
  b->blocks = NULL;
  b->n_exprs = b->cap_exprs = b->n_nodes = b->cap_nodes = 0;
  b->next_block_size = QL_IR_FIRST_BLOCK;
  b->status = QL_OK;
}

void ql_ir_builder_free(struct ql_ir_builder *builder) {
  if (builder != NULL) {
    builder_clear(builder);
    free(builder);
  }
}

int ql_ir_builder_status(const struct ql_ir_builder *builder, struct ql_error *error) {
  if (builder == NULL) {
    return ql_error_set(error, QL_EINVAL, "IR builder is NULL");
  }
  if (builder->status != QL_OK) {
    return ql_error_set(error, builder->status, "%s", ql_error_message(&builder->error));
  }
  return QL_OK;
}

/* Grow an array of `elem`-sized items so index *n fits; 0 after a failure. */
static int grow(struct ql_ir_builder *b, void **items, int32_t n, int32_t *cap, size_t elem, const char *what) {
  if (n < *cap) {
    return 1;
  }
  if (n == INT32_MAX) {
    builder_fail(b, QL_EOVERFLOW, "IR builder: more than %d %s", INT32_MAX, what);
    return 0;
  }
  int32_t new_cap = *cap < 16 ? 16 : (*cap > INT32_MAX / 2 ? INT32_MAX : *cap * 2);
  void *grown = realloc(*items, (size_t)new_cap * elem);
  if (grown == NULL) {
    builder_fail(b, QL_ENOMEM, "IR builder: out of memory growing the %s", what);
    return 0;
  }
  *items = grown;
  *cap = new_cap;
  return 1;
}

static ql_expr_id push_expr(struct ql_ir_builder *b, const struct ql_expr *e) {
  void *items = b->exprs;
  if (!builder_ok(b) || !grow(b, &items, b->n_exprs, &b->cap_exprs, sizeof(*e), "expressions")) {
    return -1;
  }
  b->exprs = items;
  b->exprs[b->n_exprs] = *e;
  return b->n_exprs++;
}

static int expr_exists(struct ql_ir_builder *b, ql_expr_id id, const char *what) {
  if (id < 0 || id >= b->n_exprs) {
    builder_fail(b, QL_EINVAL, "IR builder: %s %d does not exist (have %d expressions)", what, (int)id,
                 (int)b->n_exprs);
    return 0;
  }
  return 1;
}

ql_expr_id ql_ir_expr(struct ql_ir_builder *b, const struct ql_expr *e) {
  if (!builder_ok(b)) {
    return -1;
  }
  if (e == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: expression is NULL");
    return -1;
  }
  struct ql_expr copy = *e;
  copy.args = arena_ids(b, e->args, e->n_args, b->n_exprs, "expression args");
  if (e->kind == QL_EXPR_AGGREGATE_FUNCTION && e->filter != -1 && !expr_exists(b, e->filter, "filter")) {
    return -1;
  }
  copy.name = arena_str(b, e->name);
  copy.qualifier = arena_str(b, e->qualifier);
  copy.function.name = arena_str(b, e->function.name);
  copy.function.library = arena_str(b, e->function.library);
  if (e->literal.format != NULL || e->literal.schema != NULL || e->literal.array != NULL) {
    arena_scalar(b, &e->literal, &copy.literal);
  }
  copy.type_format = arena_str(b, e->type_format);
  return push_expr(b, &copy);
}

/* An expression with every unused member at its "none" value. */
static struct ql_expr expr_blank(int32_t kind) {
  struct ql_expr e;
  memset(&e, 0, sizeof(e));
  e.kind = kind;
  e.column_index = -1;
  e.filter = -1;
  return e;
}

ql_expr_id ql_ir_column(struct ql_ir_builder *b, const char *name, const char *qualifier, int32_t column_index) {
  if (builder_ok(b) && name == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: a column needs a name");
  }
  struct ql_expr e = expr_blank(QL_EXPR_COLUMN);
  e.name = name;
  e.qualifier = qualifier;
  e.column_index = column_index;
  return ql_ir_expr(b, &e);
}

ql_expr_id ql_ir_literal(struct ql_ir_builder *b, const struct ql_scalar *value) {
  if (builder_ok(b) && (value == NULL || value->format == NULL)) {
    builder_fail(b, QL_EINVAL, "IR builder: a literal needs a scalar with a format");
  }
  if (!builder_ok(b)) {
    return -1;
  }
  struct ql_expr e = expr_blank(QL_EXPR_LITERAL);
  e.literal = *value;
  e.type_format = value->format;
  return ql_ir_expr(b, &e);
}

ql_expr_id ql_ir_literal_i64(struct ql_ir_builder *b, int64_t v) {
  struct ql_scalar s = {.format = "l"};
  s.value.i64 = v;
  return ql_ir_literal(b, &s);
}

ql_expr_id ql_ir_literal_f64(struct ql_ir_builder *b, double v) {
  struct ql_scalar s = {.format = "g"};
  s.value.f64 = v;
  return ql_ir_literal(b, &s);
}

ql_expr_id ql_ir_literal_utf8(struct ql_ir_builder *b, const char *v) {
  if (builder_ok(b) && v == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: a utf8 literal needs a string (use ql_ir_literal_null)");
    return -1;
  }
  struct ql_scalar s = {.format = "u"};
  if (v != NULL) {
    s.value.bytes.data = v;
    s.value.bytes.size = (int64_t)strlen(v);
  }
  return ql_ir_literal(b, &s);
}

ql_expr_id ql_ir_literal_null(struct ql_ir_builder *b, const char *format) {
  struct ql_scalar s = {.format = format ? format : "n", .is_null = 1};
  return ql_ir_literal(b, &s);
}

/* An expression of `kind` over `n` existing args. */
static ql_expr_id expr_with_args(struct ql_ir_builder *b, int32_t kind, const ql_expr_id *args, int32_t n) {
  struct ql_expr e = expr_blank(kind);
  e.n_args = n;
  e.args = args;
  return ql_ir_expr(b, &e);
}

ql_expr_id ql_ir_binary(struct ql_ir_builder *b, int32_t op, ql_expr_id left, ql_expr_id right) {
  ql_expr_id args[2] = {left, right};
  struct ql_expr e = expr_blank(QL_EXPR_BINARY);
  e.op = op;
  e.n_args = 2;
  e.args = args;
  return ql_ir_expr(b, &e);
}

ql_expr_id ql_ir_unary(struct ql_ir_builder *b, int32_t kind, ql_expr_id arg) {
  if (builder_ok(b) && kind != QL_EXPR_NOT && kind != QL_EXPR_NEGATIVE && kind != QL_EXPR_IS_NULL &&
      kind != QL_EXPR_IS_NOT_NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: ql_ir_unary does not build kind %d", (int)kind);
  }
  return expr_with_args(b, kind, &arg, 1);
}

ql_expr_id ql_ir_cast(struct ql_ir_builder *b, ql_expr_id arg, const char *type_format, int try_cast) {
  if (builder_ok(b) && type_format == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: a cast needs a target type format");
  }
  struct ql_expr e = expr_blank(try_cast ? QL_EXPR_TRY_CAST : QL_EXPR_CAST);
  e.n_args = 1;
  e.args = &arg;
  e.type_format = type_format;
  return ql_ir_expr(b, &e);
}

ql_expr_id ql_ir_alias(struct ql_ir_builder *b, ql_expr_id arg, const char *alias) {
  if (builder_ok(b) && alias == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: an alias needs a name");
  }
  struct ql_expr e = expr_blank(QL_EXPR_ALIAS);
  e.n_args = 1;
  e.args = &arg;
  e.name = alias;
  return ql_ir_expr(b, &e);
}

ql_expr_id ql_ir_function(struct ql_ir_builder *b, int32_t kind, const struct ql_function_id *id,
                          const ql_expr_id *args, int32_t n_args, int32_t flags, ql_expr_id filter) {
  if (!builder_ok(b)) {
    return -1;
  }
  if (kind != QL_EXPR_SCALAR_FUNCTION && kind != QL_EXPR_AGGREGATE_FUNCTION) {
    builder_fail(b, QL_EINVAL, "IR builder: ql_ir_function does not build kind %d", (int)kind);
    return -1;
  }
  if (id == NULL || id->name == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: a function call needs an identity with a name");
    return -1;
  }
  if (kind == QL_EXPR_SCALAR_FUNCTION && filter != -1) {
    builder_fail(b, QL_EINVAL, "IR builder: FILTER applies to aggregate functions only (%s)", id->name);
    return -1;
  }
  struct ql_expr e = expr_blank(kind);
  e.flags = flags;
  e.n_args = n_args;
  e.args = args;
  e.name = id->name;
  e.function = *id;
  e.filter = filter;
  return ql_ir_expr(b, &e);
}

ql_expr_id ql_ir_sort(struct ql_ir_builder *b, ql_expr_id arg, int32_t flags) {
  struct ql_expr e = expr_blank(QL_EXPR_SORT);
  e.flags = flags;
  e.n_args = 1;
  e.args = &arg;
  return ql_ir_expr(b, &e);
}

/* ---- nodes */

static const struct ql_table_ref *arena_table(struct ql_ir_builder *b, const struct ql_table_ref *src) {
  struct ql_table_ref *dst = arena_alloc(b, sizeof(*dst));
  if (dst == NULL) {
    return NULL;
  }
  *dst = *src;
  dst->name = arena_str(b, src->name);
  dst->schema = src->schema ? arena_schema(b, src->schema, 0) : NULL;
  return dst;
}

static const char *const *arena_qualifiers(struct ql_ir_builder *b, const struct ql_plan_node *n) {
  if (n->field_qualifiers == NULL) {
    return NULL;
  }
  if (n->schema == NULL || n->schema->n_children < 0) {
    builder_fail(b, QL_EINVAL, "IR builder: field_qualifiers given without a schema to size them");
    return NULL;
  }
  int64_t width = n->schema->n_children;
  if (in_arena(b, n->field_qualifiers)) {
    /* From ql_ir_string_array: shared when every string is the view's too. */
    int64_t i = 0;
    while (i < width && (n->field_qualifiers[i] == NULL || in_arena(b, n->field_qualifiers[i]))) {
      i++;
    }
    if (i == width) {
      return n->field_qualifiers;
    }
  }
  const char **dst = arena_alloc(b, (size_t)(width > 0 ? width : 1) * sizeof(*dst));
  for (int64_t i = 0; i < width && dst != NULL; i++) {
    dst[i] = arena_str(b, n->field_qualifiers[i]);
  }
  return dst;
}

/* Copy into `copy` the members of `n` a lazy view fills at expansion
 * (qlink/plan.h): expressions, projection, schema, qualifiers, table.
 * 0 after a failure (the builder's status says which). */
static int node_payload(struct ql_ir_builder *b, const struct ql_plan_node *n, struct ql_plan_node *copy) {
  copy->n_exprs = n->n_exprs;
  copy->n_exprs2 = n->n_exprs2;
  copy->condition = n->condition;
  copy->n_projection = n->n_projection;
  copy->exprs = arena_ids(b, n->exprs, n->n_exprs, b->n_exprs, "node exprs");
  copy->exprs2 = arena_ids(b, n->exprs2, n->n_exprs2, b->n_exprs, "node exprs2");
  if (n->kind == QL_NODE_JOIN && n->condition != -1 && !expr_exists(b, n->condition, "join condition")) {
    return 0;
  }
  if (n->n_projection < -1) {
    builder_fail(b, QL_EINVAL, "IR builder: n_projection %d (use -1 for all columns)", (int)n->n_projection);
    return 0;
  }
  copy->projection = NULL;
  if (n->n_projection > 0) {
    if (n->projection == NULL) {
      builder_fail(b, QL_EINVAL, "IR builder: %d projected columns but projection is NULL", (int)n->n_projection);
      return 0;
    }
    copy->projection = arena_dup(b, n->projection, (size_t)n->n_projection * sizeof(*n->projection));
  }
  copy->schema = n->schema ? arena_schema(b, n->schema, 0) : NULL;
  copy->field_qualifiers = arena_qualifiers(b, n);
  copy->table = n->table ? arena_table(b, n->table) : NULL;
  return builder_ok(b);
}

ql_node_id ql_ir_node(struct ql_ir_builder *b, const struct ql_plan_node *n) {
  if (!builder_ok(b)) {
    return -1;
  }
  if (n == NULL) {
    builder_fail(b, QL_EINVAL, "IR builder: node is NULL");
    return -1;
  }
  struct ql_plan_node copy = *n;
  copy.inputs = arena_ids(b, n->inputs, n->n_inputs, b->n_nodes, "node inputs");
  if (!node_payload(b, n, &copy)) {
    return -1;
  }
  copy.name = arena_str(b, n->name);
  void *items = b->nodes;
  if (!builder_ok(b) || !grow(b, &items, b->n_nodes, &b->cap_nodes, sizeof(copy), "plan nodes")) {
    return -1;
  }
  b->nodes = items;
  b->nodes[b->n_nodes] = copy;
  return b->n_nodes++;
}

int ql_ir_node_expand(struct ql_ir_builder *b, ql_node_id id, const struct ql_plan_node *n) {
  if (!builder_ok(b)) {
    return b == NULL ? QL_EINVAL : b->status;
  }
  if (n == NULL || id < 0 || id >= b->n_nodes) {
    builder_fail(b, QL_EINVAL, "IR builder: cannot expand node %d (have %d nodes)", (int)id, (int)b->n_nodes);
    return b->status;
  }
  struct ql_plan_node copy = b->nodes[id];
  if (!(copy.flags & QL_NODE_UNEXPANDED)) {
    return QL_OK;
  }
  if (!node_payload(b, n, &copy)) {
    return b->status;
  }
  copy.flags &= ~QL_NODE_UNEXPANDED;
  b->nodes[id] = copy;
  return QL_OK;
}

int ql_ir_builder_peek(const struct ql_ir_builder *b, ql_node_id root, struct ql_plan_view *out,
                       struct ql_error *error) {
  if (b == NULL || out == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_ir_builder_peek: builder or out is NULL");
  }
  if (b->status != QL_OK) {
    return ql_error_set(error, b->status, "%s", ql_error_message(&b->error));
  }
  if (root != -1 && (root < 0 || root >= b->n_nodes)) {
    return ql_error_set(error, QL_EINVAL, "ql_ir_builder_peek: root node %d does not exist (have %d nodes)",
                        (int)root, (int)b->n_nodes);
  }
  out->n_nodes = b->n_nodes;
  out->n_exprs = b->n_exprs;
  out->root = root;
  out->nodes = b->nodes;
  out->exprs = b->exprs;
  return QL_OK;
}

/* ---- hand-over */

static void view_release(struct ql_plan_view *view) {
  if (view == NULL || view->release == NULL) {
    return;
  }
  struct ql_ir_view_data *data = view->private_data;
  if (data != NULL) {
    free(data->exprs);
    free(data->nodes);
    blocks_free(data->blocks);
    free(data);
  }
  view->private_data = NULL;
  view->nodes = NULL;
  view->exprs = NULL;
  view->release = NULL;
}

int ql_ir_builder_finish(struct ql_ir_builder *b, ql_node_id root, struct ql_plan_view *out,
                         struct ql_error *error) {
  if (b == NULL || out == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_ir_builder_finish: builder or out is NULL");
  }
  memset(out, 0, sizeof(*out));
  if (b->status == QL_OK && root != -1 && (root < 0 || root >= b->n_nodes)) {
    builder_fail(b, QL_EINVAL, "IR builder: root node %d does not exist (have %d nodes)", (int)root,
                 (int)b->n_nodes);
  }
  struct ql_ir_view_data *data = NULL;
  if (b->status == QL_OK && (data = malloc(sizeof(*data))) == NULL) {
    builder_fail(b, QL_ENOMEM, "IR builder: out of memory finishing the view");
  }
  if (b->status != QL_OK) {
    int status = ql_error_set(error, b->status, "%s", ql_error_message(&b->error));
    builder_clear(b);
    return status;
  }
  data->blocks = b->blocks;
  data->exprs = b->exprs;
  data->nodes = b->nodes;
  out->struct_size = sizeof(*out);
  out->n_nodes = b->n_nodes;
  out->n_exprs = b->n_exprs;
  out->root = root;
  out->nodes = b->nodes;
  out->exprs = b->exprs;
  out->release = view_release;
  out->private_data = data;
  b->blocks = NULL;
  b->exprs = NULL;
  b->nodes = NULL;
  builder_clear(b);
  return QL_OK;
}
