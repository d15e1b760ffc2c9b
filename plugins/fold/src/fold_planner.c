/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the planner object and the plugin descriptor (see fold_planner.h). */
#include "fold_planner.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_exec.h"
#include "fold_spec.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"

/* QLINK_FOLD_TRACE=1 in the environment: one line on stderr per planner
 * call saying what was folded or why not (for people integrating hosts). */
static int fd_tracing(void) {
  /* Read once: getenv scans the environment, and declining must cost the
   * host next to nothing. -1: not read yet (racing readers agree). */
  static atomic_int tracing = -1;
  int t = atomic_load_explicit(&tracing, memory_order_relaxed);
  if (t < 0) {
    const char *v = getenv("QLINK_FOLD_TRACE");
    t = v && v[0] && strcmp(v, "0") != 0;
    atomic_store_explicit(&tracing, t, memory_order_relaxed);
  }
  return t;
}

static int fd_plan(const struct ql_planner *self, const struct ql_planner_context *ctx,
                        struct ql_planner_result *out, struct ql_error *error) {
  (void)self;
  out->action = QL_PLANNER_DECLINE;
  if (!ctx || !QL_HAS_MEMBER(ctx, struct ql_planner_context, plan_physical) || !ctx->plan || !ctx->plan_physical)
    return QL_OK;
  struct fd_spec spec;
  int tracing = fd_tracing();
  ql_node_id id = fd_find(ctx->plan, &spec, tracing);
  if (tracing) {
    if (id < 0) fprintf(stderr, "qlink_fold: plan rooted at node %d: declined: %s\n", ctx->plan->root, spec.why);
    else fprintf(stderr, "qlink_fold: plan rooted at node %d: folding aggregate node %d\n", ctx->plan->root, id);
  }
  if (id < 0) return QL_OK;
  struct ql_execution_plan children[2];
  memset(children, 0, sizeof(children));
  for (int k = 0; k < 2; k++) {
    int rc = ctx->plan_physical(ctx, spec.inputs[k], &children[k], error);
    if (rc != QL_OK) {
      if (k == 1 && children[0].release) children[0].release(&children[0]);
      return rc;
    }
  }
  /* The host's physical inputs must have the columns the view promised;
   * if not, leave the plan to the host rather than guess. */
  for (int k = 0; k < 2; k++) {
    struct ql_error ignored;
    memset(&ignored, 0, sizeof(ignored));
    int rc = fd_check_child(&spec, k, &children[k], &ignored);
    if (rc != QL_OK && fd_tracing()) fprintf(stderr, "qlink_fold: declined: %s\n", ql_error_message(&ignored));
    ql_error_release(&ignored);
    if (rc != QL_OK) {
      for (int j = 0; j < 2; j++)
        if (children[j].release) children[j].release(&children[j]);
      return QL_OK;
    }
  }
  QL_RETURN_NOT_OK(fd_exec_new(&spec, ctx->plan->nodes[id].schema, children, &out->physical, error));
  out->action = QL_PLANNER_PHYSICAL;
  out->node = id;
  return QL_OK;
}

static void fd_planner_release(struct ql_planner *self) { self->release = NULL; }

int fd_planner_new(const struct ql_options *options, struct ql_planner *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_options_check(options, NULL, 0, "qlink_fold/fold", error));
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->interest = QL_NODE_BIT(QL_NODE_AGGREGATE);
  /* fold_match.c expands what it reads; FoldExec takes new children */
  out->flags = QL_PLANNER_LAZY_VIEW | QL_PLANNER_INPUTS_UNOPTIMIZED;
  out->plan = fd_plan;
  out->release = fd_planner_release;
  return QL_OK;
}

static const struct ql_item_info fd_items[] = {
    {QL_ITEM_PLANNER, 0, "fold",
     "folds SUM(x * y) over an inner equi-join into one operator that never materialises joined rows (einsum)",
     NULL},
};

static int fd_planner_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                struct ql_planner *out, struct ql_error *error) {
  (void)self;
  if (!name || strcmp(name, "fold")) return ql_error_set(error, QL_ENOTFOUND, "qlink_fold has no planner '%s'", name ? name : "(null)");
  return fd_planner_new(options, out, error);
}

static void fd_plugin_release(struct ql_plugin *self) { self->release = NULL; }

int fd_plugin_fill(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  if (abi_version != QL_ABI_VERSION_0_1)
    return ql_error_set(error, QL_EVERSION, "qlink_fold serves ABI 0.1 only, asked for %u.%u",
                        QL_ABI_VERSION_MAJOR(abi_version), QL_ABI_VERSION_MINOR(abi_version));
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->magic = QL_PLUGIN_MAGIC;
  out->abi_version = abi_version;
  out->n_items = 1;
  out->name = "qlink_fold";
  out->version = "0.1.0";
  out->description = "einsum planner: SUM(x * y) over a join, folded";
  out->items = fd_items;
  out->planner_open = fd_planner_open;
  out->release = fd_plugin_release;
  return QL_OK;
}
