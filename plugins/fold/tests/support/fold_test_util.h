/* SPDX-License-Identifier: Apache-2.0 */
/* Test support for qlink_fold: in-memory tables as execution plans, a small
 * host (memory pool with a limit, pthread executor, task context), a plan
 * view generator for contractions, a brute-force reference (nested-loop join
 * plus group sum) and result comparison. */
#ifndef QLINK_FOLD_TEST_UTIL_H
#define QLINK_FOLD_TEST_UTIL_H

#include <stdint.h>

#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/memory_pool.h"
#include "qlink/planner.h"

#define FT_MAX_COLS 8
#ifndef FT_MAX_ROWS
#define FT_MAX_ROWS 4096
#endif
#define FT_MAX_PARTS 8

/* A column: int64 values (any integer format), or doubles ("g"/"f"). */
struct ft_col {
  char name[16];
  char format[8]; /* "l", "i", "s", "g", "f" */
  int64_t i[FT_MAX_ROWS];
  double f[FT_MAX_ROWS];
  uint8_t valid[FT_MAX_ROWS];
};

struct ft_table {
  char name[8];
  int n_cols;
  struct ft_col cols[FT_MAX_COLS];
  int64_t n_rows;
  int n_parts;                     /* partitions */
  int64_t bounds[FT_MAX_PARTS + 1]; /* partition p: emission positions [bounds[p], bounds[p+1]) */
  int64_t batch_rows;              /* rows per batch */
  int64_t order[FT_MAX_ROWS];      /* emission position -> row */
  int with_stats;                  /* exact statistics (row count, min/max/distinct of integer columns) */
  int broken_batches;              /* batches carry only the first column (a lying input) */
};

/* A deterministic random generator (splitmix64). */
uint64_t ft_rand(uint64_t *state);
int64_t ft_rand_range(uint64_t *state, int64_t lo, int64_t hi); /* inclusive */

/* Identity order, one partition, batches of 1024. */
void ft_table_reset_layout(struct ft_table *t);
/* Shuffle the emission order and split into n_parts partitions of random sizes. */
void ft_table_shuffle_layout(struct ft_table *t, uint64_t *rng, int n_parts, int64_t batch_rows);

/* An execution plan over `t` (borrowed; must outlive the plan and its streams). */
int ft_plan_new(const struct ft_table *t, struct ql_execution_plan *out);
/* Schema of `t` as a struct schema (owned by the caller). */
void ft_table_schema(const struct ft_table *t, struct ArrowSchema *out);

/* libqlink's reference host (memory pool with `limit` bytes, -1 none;
 * executor with `threads` workers, 0: none offered) and its task context
 * for partition 0 in `ctx`. */
struct ft_host {
  struct ql_ref_host *host;
  struct ql_ref_memory_pool *pool;
  struct ql_task_context ctx;
};
void ft_host_init(struct ft_host *h, int64_t limit, int threads, int64_t batch_size);
/* QL_OK if every reservation was released. */
int ft_host_free(struct ft_host *h);

/* A contraction over tables a and b, as DataFusion's optimizer shapes it. */
struct ft_query {
  int n_keys;
  int akey[2], bkey[2];  /* key columns of a and b */
  int n_groups;
  int gside[3], gcol[3]; /* group keys: side (0 a, 1 b) and column */
  int aval, bval;        /* value columns */
  int is_float;          /* SUM over float64 (else int64) */
  int projection;        /* 0 none, 1 a Projection of the needed columns (aliased),
                            2 a Projection that computes the product */
  int alias_inputs;      /* SubqueryAlias nodes over the scans */
  int swap_product;      /* y * x instead of x * y */
  int narrow_product;    /* factors keep their (common) type; the product is cast to the sum's */
  int decimal;           /* decimal128 factors (value columns "d:p,s"); a decimal128 sum */
  /* Variations for declines. */
  struct ql_function_id function; /* zero: built-in sum */
  int agg_flags;         /* QL_EXPR_DISTINCT */
  int join_type;         /* zero: inner */
  int with_condition;    /* a non-equi condition on the join */
  int null_equals_null;
  int other_between;     /* a QL_NODE_OTHER node between aggregate and join */
  int filter_between;    /* a Filter between aggregate and join */
  int other_root;        /* a QL_NODE_OTHER node above the aggregate */
  int sort_root;         /* a Sort above the aggregate */
  int value_same_side;   /* sum(a.x * a.y) */
  int op;                /* zero: multiply; else the binary operator */
};

/* Ids of interesting nodes of a built view. */
struct ft_view_ids {
  ql_node_id aggregate, join, inputs[2], scans[2];
};

/* Build the view of `q` over a and b; 0 on success. */
int ft_build_view(const struct ft_query *q, const struct ft_table *a, const struct ft_table *b,
                  struct ql_plan_view *out, struct ft_view_ids *ids);

/* A fake planner context whose plan_physical returns ft plans for the join
 * inputs of the view (scans or aliases over them). */
struct ft_planner_env {
  struct ql_planner_context ctx;
  const struct ft_table *tables[2];
  ql_node_id nodes[2];
  int calls;
};
void ft_planner_env_init(struct ft_planner_env *env, const struct ql_plan_view *view, const struct ft_view_ids *ids,
                         const struct ft_table *a, const struct ft_table *b);

/* One result row. */
struct ft_row {
  int64_t keys[3];
  uint32_t nulls;
  int has; /* sum not NULL */
  int64_t i;
  int64_t hi; /* decimal128 sums: the high 64 bits (i holds the low ones) */
  double f;
  double abs_sum; /* reference only: sum of |products| (the float tolerance scale) */
};

/* Reference: nested-loop join plus group sum, in SQL semantics. */
int64_t ft_reference(const struct ft_query *q, const struct ft_table *a, const struct ft_table *b, struct ft_row *rows,
                     int64_t cap);
/* Execute `plan` partition 0 under `h`; rows into `rows` (is_float: 0 int64
 * sums, 1 float64, 2 decimal128). Returns the row count, or -(status) on
 * failure with the message in msg. */
int64_t ft_collect(const struct ql_execution_plan *plan, struct ft_host *h, int n_groups, int is_float,
                   struct ft_row *rows, int64_t cap, char *msg, size_t msg_cap);
/* Sort rows by keys. */
void ft_sort_rows(struct ft_row *rows, int64_t n);

#endif /* QLINK_FOLD_TEST_UTIL_H */
