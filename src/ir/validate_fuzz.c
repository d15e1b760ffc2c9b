/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for ql_ir_validate / ql_ir_validate_exprs (and the
 * printers on what they accept).
 *
 * The fuzz bytes are decoded into a small arena whose arrays are exactly as
 * long as their counts say (the producer's side of the contract), while
 * every count, kind, id, flag and optional pointer is chosen by the input:
 * ids stray one past either end, kinds include unknown values, schemas may
 * be missing or not structs. Properties checked:
 *   - validation never reads out of bounds (ASan) or misbehaves (UBSan);
 *   - whatever validation accepts, the printers print without failing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
  const uint8_t *p;
  size_t n;
  void *allocs[512];
  int n_allocs;
};

static uint8_t next(struct input *in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}

static void *input_alloc(struct input *in, size_t size) {
  if (in->n_allocs == (int)(sizeof(in->allocs) / sizeof(in->allocs[0]))) return NULL;
  void *p = calloc(1, size ? size : 1);
  if (p == NULL) abort();
  in->allocs[in->n_allocs++] = p;
  return p;
}

/* An id in -1 .. limit (one stray value past each end). */
static int32_t next_id(struct input *in, int32_t limit) { return (int32_t)(next(in) % (uint8_t)(limit + 2)) - 1; }

/* `*count` ids (count from the input, -1 .. 4); sometimes a NULL array. */
static const int32_t *next_ids(struct input *in, int32_t *count, int32_t limit) {
  uint8_t c = next(in);
  *count = (int32_t)(c % 6) - 1;
  if (*count <= 0 || (c & 0x80)) return NULL;
  int32_t *ids = input_alloc(in, (size_t)*count * sizeof(*ids));
  if (ids == NULL) {
    *count = 0;
    return NULL;
  }
  for (int32_t i = 0; i < *count; i++) ids[i] = next_id(in, limit);
  return ids;
}

static void static_release(struct ArrowSchema *s) { (void)s; }

static struct ArrowSchema leaf[3] = {
    {.format = "l", .name = "c0", .release = static_release},
    {.format = "g", .name = "c1", .release = static_release},
    {.format = "u", .name = "c2", .release = static_release},
};
static struct ArrowSchema *leaves[3] = {&leaf[0], &leaf[1], &leaf[2]};
/* NULL, a list (not a struct), structs of 0..3 columns, and a struct
 * claiming more columns than any validator should accept. */
static struct ArrowSchema schemas[6] = {
    {.format = "+l", .release = static_release},
    {.format = "+s", .n_children = 0, .release = static_release},
    {.format = "+s", .n_children = 1, .children = leaves, .release = static_release},
    {.format = "+s", .n_children = 2, .children = leaves, .release = static_release},
    {.format = "+s", .n_children = 3, .children = leaves, .release = static_release},
    {.format = "+s", .n_children = INT64_MAX, .children = leaves, .release = static_release},
};
static const struct ArrowSchema *next_schema(struct input *in) {
  uint8_t c = next(in) % 7;
  return c == 0 ? NULL : &schemas[c - 1];
}

static const struct ql_table_ref tables[3] = {
    {"t3", &schemas[4], NULL, NULL},
    {"tlist", &schemas[0], NULL, NULL},
    {"tnull", NULL, NULL, NULL},
};

static const char *const formats[] = {NULL, "l", "g", "u", "b", "tdD", "d:10,2", "z", "+l", "n", "tsu:UTC", "f", "L", "vu"};
static const char bytes[8] = "abc'\0ef";

static const char *next_name(struct input *in, const char *name) { return (next(in) & 3) ? name : NULL; }

static void decode_expr(struct input *in, struct ql_expr *e, int32_t n_exprs) {
  e->kind = next(in) % 21;
  e->op = next(in) % 19;
  e->flags = next(in);
  e->args = next_ids(in, &e->n_args, n_exprs);
  e->name = next_name(in, "n");
  e->qualifier = next_name(in, "q");
  e->column_index = (int32_t)(int8_t)next(in) % 5;
  e->n_func_args = (int32_t)(next(in) % 5) - 1;
  e->n_partition_by = (int32_t)(next(in) % 5) - 1;
  e->filter = next_id(in, n_exprs);
  e->function.origin = next(in) % 4;
  e->function.kind = next(in) % 5;
  e->function.name = next_name(in, "f");
  e->function.library = next_name(in, "lib");
  uint8_t f = next(in);
  e->literal.format = formats[f % (sizeof(formats) / sizeof(formats[0]))];
  e->literal.is_null = (f & 0x80) != 0;
  uint8_t v = next(in);
  e->literal.value.i64 = (int64_t)(int8_t)v * 1000003;
  const char *fmt = e->literal.format;
  if (fmt && (!strcmp(fmt, "u") || !strcmp(fmt, "z") || !strcmp(fmt, "vu"))) {
    e->literal.value.bytes.data = (v & 0x80) ? NULL : bytes;
    e->literal.value.bytes.size = (int64_t)(v % 9) - 1;
  }
  e->type_format = next_name(in, "l");
}

static void decode_node(struct input *in, struct ql_plan_node *n, int32_t n_nodes, int32_t n_exprs) {
  n->kind = next(in) % 16;
  n->flags = next(in) % 8;
  n->inputs = next_ids(in, &n->n_inputs, n_nodes);
  n->join_type = next(in) % 12;
  n->schema = next_schema(in);
  n->exprs = next_ids(in, &n->n_exprs, n_exprs);
  n->exprs2 = next_ids(in, &n->n_exprs2, n_exprs);
  n->condition = next_id(in, n_exprs);
  uint8_t p = next(in);
  n->n_projection = (int32_t)(p % 6) - 2;
  if (n->n_projection > 0 && !(p & 0x80)) {
    int32_t *proj = input_alloc(in, (size_t)n->n_projection * sizeof(*proj));
    if (proj == NULL) {
      n->n_projection = 0;
    } else {
      for (int32_t i = 0; i < n->n_projection; i++) proj[i] = (int32_t)(next(in) % 6) - 1;
    }
    n->projection = proj;
  }
  n->skip = (int8_t)next(in);
  n->fetch = (int8_t)next(in);
  n->n_rows = (int32_t)(next(in) % 5) - 1;
  n->name = next_name(in, "name");
  uint8_t t = next(in) % 4;
  n->table = t == 0 ? NULL : &tables[t - 1];
}

/* Whatever the validator accepts must print. */
static void must_print_plan(const struct ql_plan_view *v) {
  char *text = NULL;
  if (v->root < 0) return;
  if (ql_ir_plan_to_string(v, v->root, &text, NULL) != QL_OK) abort();
  free(text);
}

static void check_exprs(struct input *in, const struct ql_plan_view *v) {
  int32_t n_roots = 0;
  const int32_t *roots = next_ids(in, &n_roots, v->n_exprs);
  struct ql_error err = {0};
  if (ql_ir_validate_exprs(v, roots, n_roots, &err) == QL_OK) {
    for (int32_t i = 0; i < n_roots; i++) {
      char *text = NULL;
      if (ql_ir_expr_to_string(v, roots[i], &text, NULL) != QL_OK) abort();
      free(text);
    }
  } else if (err.release == NULL || ql_error_message(&err)[0] == '\0') {
    abort(); /* a rejection always explains itself */
  }
  ql_error_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct input in = {.p = data, .n = size};
  int32_t n_nodes = next(&in) % 9, n_exprs = next(&in) % 17;
  struct ql_plan_node *nodes = input_alloc(&in, (size_t)n_nodes * sizeof(*nodes));
  struct ql_expr *exprs = input_alloc(&in, (size_t)n_exprs * sizeof(*exprs));
  for (int32_t i = 0; i < n_exprs; i++) decode_expr(&in, &exprs[i], n_exprs);
  for (int32_t i = 0; i < n_nodes; i++) decode_node(&in, &nodes[i], n_nodes, n_exprs);
  struct ql_plan_view v = {.struct_size = sizeof(v), .n_nodes = n_nodes, .n_exprs = n_exprs,
                           .nodes = n_nodes ? nodes : NULL, .exprs = n_exprs ? exprs : NULL};
  v.root = next_id(&in, n_nodes);
  struct ql_error err = {0};
  int status = ql_ir_validate(&v, &err);
#ifdef QL_IR_FUZZ_VERBOSE /* to see what a seed decodes to: build with -DQL_IR_FUZZ_VERBOSE */
  fprintf(stderr, "validate: %d %s\n", status, ql_error_message(&err));
#endif
  if (status == QL_OK) {
    must_print_plan(&v);
  } else if (err.release == NULL || ql_error_message(&err)[0] == '\0') {
    abort();
  }
  ql_error_release(&err);
  check_exprs(&in, &v);
  for (int i = 0; i < in.n_allocs; i++) free(in.allocs[i]);
  return 0;
}
