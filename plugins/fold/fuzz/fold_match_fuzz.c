/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the matcher (fd_find) and the planner call.
 *
 * The first bytes choose a contraction (keys, groups, projections, aliases,
 * types) built with the test generator; the rest mutate the view in place:
 * node kinds, join types, flags, conditions, column indices, operators,
 * expression kinds, function identities, casts' target types. Whatever
 * ql_ir_validate accepts (the host's side of the contract) goes to
 * fd_find and, when it folds, to the planner with a fake host. Checked:
 *   - nothing reads out of bounds or misbehaves (ASan, UBSan);
 *   - a fold's description only names columns that exist in the join
 *     inputs' schemas, with the types it will read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_planner.h"
#include "fold_spec.h"
#include "fold_test_util.h"
#include "qlink/lib/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ft_table *fz_a, *fz_b;

struct fz_input {
  const uint8_t *p;
  size_t n;
};

static uint8_t fz_next(struct fz_input *in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}

static void fz_tables(struct fz_input *in) {
  if (!fz_a) {
    fz_a = calloc(1, sizeof(*fz_a));
    fz_b = calloc(1, sizeof(*fz_b));
  }
  static const char *formats[] = {"l", "i", "s", "g", "f", "d:10,2", "u", "tdD"};
  const char *names[5] = {"k0", "k1", "g0", "g1", "v"};
  struct ft_table *t[2] = {fz_a, fz_b};
  for (int k = 0; k < 2; k++) {
    memset(t[k], 0, sizeof(*t[k]));
    snprintf(t[k]->name, sizeof(t[k]->name), "%s", k ? "b" : "a");
    t[k]->n_cols = 5;
    for (int c = 0; c < 5; c++) {
      snprintf(t[k]->cols[c].name, 16, "%s", names[c]);
      uint8_t f = fz_next(in);
      snprintf(t[k]->cols[c].format, 8, "%s", (f & 0x80) ? formats[f % 8] : (c == 4 ? "g" : "l"));
    }
    ft_table_reset_layout(t[k]);
  }
}

static void fz_query(struct fz_input *in, struct ft_query *q) {
  memset(q, 0, sizeof(*q));
  uint8_t x = fz_next(in);
  q->n_keys = 1 + (x & 1);
  for (int i = 0; i < q->n_keys; i++) q->akey[i] = q->bkey[i] = i;
  q->n_groups = (x >> 1) % 4;
  for (int i = 0; i < q->n_groups; i++) {
    uint8_t g = fz_next(in);
    q->gside[i] = g & 1;
    q->gcol[i] = (g >> 1) % 5;
  }
  q->aval = q->bval = 4;
  uint8_t y = fz_next(in);
  q->is_float = y & 1;
  q->projection = (y >> 1) % 3;
  q->alias_inputs = (y >> 3) & 1;
  q->swap_product = (y >> 4) & 1;
  q->sort_root = (y >> 5) & 1;
  q->narrow_product = (y >> 6) & 1;
}

/* Mutate one member of one node or expression. The arena belongs to the
 * view; a fuzzer may write it (a host never would). */
static void fz_mutate(struct fz_input *in, struct ql_plan_view *v) {
  uint8_t what = fz_next(in), which = fz_next(in), value = fz_next(in);
  if (what & 1) {
    if (v->n_nodes == 0) return;
    struct ql_plan_node *n = (struct ql_plan_node *)&v->nodes[which % v->n_nodes];
    switch ((what >> 1) % 5) {
      case 0: n->kind = value % 16; break;
      case 1: n->join_type = value % 12; break;
      case 2: n->flags = value % 8; break;
      case 3: n->condition = v->n_exprs ? (int32_t)(value % (v->n_exprs + 1)) - 1 : -1; break;
      default: n->n_exprs2 = n->n_exprs2 > 0 ? value % (n->n_exprs2 + 1) : 0; break;
    }
  } else {
    if (v->n_exprs == 0) return;
    struct ql_expr *e = (struct ql_expr *)&v->exprs[which % v->n_exprs];
    static const char *types[] = {"l", "i", "g", "f", "s", "L", "d:10,2", "u"};
    switch ((what >> 1) % 6) {
      case 0: e->kind = value % 21; break;
      case 1: e->op = value % 19; break;
      case 2: e->column_index = (int32_t)value - 2; break;
      case 3: e->function.origin = value % 4; break;
      case 4: e->flags = value % 128; break;
      default: e->type_format = types[value % 8]; break;
    }
  }
}

static int fz_plan_physical(const struct ql_planner_context *self, ql_node_id node, struct ql_execution_plan *out,
                            struct ql_error *error) {
  const struct ft_view_ids *ids = self->private_data;
  for (int k = 0; k < 2; k++)
    if (node == ids->inputs[k]) return ft_plan_new(k ? fz_b : fz_a, out);
  return ql_error_set(error, QL_ENOTSUP, "node %d", node);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct fz_input in = {data, size};
  fz_tables(&in);
  struct ft_query q;
  fz_query(&in, &q);
  struct ql_plan_view view;
  struct ft_view_ids ids;
  if (ft_build_view(&q, fz_a, fz_b, &view, &ids)) return 0; /* the generator rejects some type mixes */
  while (in.n >= 3) fz_mutate(&in, &view);
  if (ql_ir_validate(&view, NULL) == QL_OK) {
    struct fd_spec spec;
    ql_node_id id = fd_find(&view, &spec, 1);
    if (id >= 0) {
      /* Every column the fold reads exists in its join input, typed as promised. */
      for (int k = 0; k < 2; k++) {
        const struct ArrowSchema *s = view.nodes[spec.inputs[k]].schema;
        const struct fd_operand *ops[] = {&spec.values[k], &spec.keys[k][0]};
        for (int i = 0; i < 2; i++)
          if (ops[i]->column < 0 || ops[i]->column >= s->n_children ||
              fd_format_storage(s->children[ops[i]->column]->format) != ops[i]->storage)
            abort();
      }
      struct ql_planner planner;
      fd_planner_new(NULL, &planner, NULL);
      struct ql_planner_context ctx = {sizeof(ctx), 0, NULL, &view, fz_plan_physical, &ids};
      struct ql_planner_result res;
      memset(&res, 0, sizeof(res));
      struct ql_error err;
      memset(&err, 0, sizeof(err));
      (void)planner.plan(&planner, &ctx, &res, &err);
      ql_error_release(&err);
      if (res.physical.release) res.physical.release(&res.physical);
      planner.release(&planner);
    }
  }
  view.release(&view);
  return 0;
}
