/* qlink_fold: FoldExec's internals shared by its source files.
 *
 *   fold_input.c  reading the children: partitions, batches, rows, workers
 *   fold_hash.c   the hash path: build table, group tables, probe
 *   fold_gemm.c   the dense path: filling matrices, the product, the groups
 *   fold_exec.c   the execution plan, its streams and the emitted batches
 *
 * Not part of any public interface; see fold_exec.h for the behaviour.
 */
#ifndef QL_FOLD_INTERNAL_H
#define QL_FOLD_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "fold_keys.h"
#include "fold_mem.h"
#include "fold_spec.h"
#include "fold_xsum.h"
#include "qlink/table.h"

/* What a FoldExec and every stream it produced share (refcounted: a stream
 * may outlive its plan). */
struct ql_fold_shared {
  atomic_int refs;
  struct ql_fold_spec spec;
  struct ArrowSchema schema;
  struct ql_execution_plan children[2];
  int32_t build_side;
  int32_t dense; /* 1: the build side's single join key is dense */
  int64_t dense_min, dense_len;
  /* The dense kernel (fold_dense.h), when statistics prove it applies:
   * key range [gemm_kmin, gemm_kmin + gemm_klen), per side the group key
   * range (gemm_glen[side] = 0: the side has no group key). */
  int32_t gemm;
  int64_t gemm_kmin, gemm_klen;
  int64_t gemm_gmin[2], gemm_glen[2];
  int64_t gemm_kmin_side[2], gemm_kmax_side[2];
  char display[768];
  atomic_llong output_rows, build_rows, probe_rows, groups, elapsed_ns, dense_runs;
};

/* The columns one side reads, resolved for decoding a batch. */
struct ql_fold_side {
  int32_t n_keys;
  const struct ql_fold_operand *keys[QL_FOLD_MAX_KEYS];
  int32_t n_groups;
  const struct ql_fold_operand *groups[QL_FOLD_MAX_GROUPS];
  const struct ql_fold_operand *value;
};

/* Integer sums are kept at 128 bits, wrapping: decimal128 sums need them,
 * and an int64 sum is their low 64 bits (wrapping sums are a ring
 * homomorphism), so one path serves both. */
typedef unsigned __int128 ql_fold_u128;

/* One decoded row of a side. */
struct ql_fold_row {
  int64_t keys[QL_FOLD_MAX_KEYS];
  int64_t groups[QL_FOLD_MAX_GROUPS];
  uint32_t group_nulls;
  int32_t has_value;
  ql_fold_u128 ivalue;
  double fvalue;
};

struct ql_fold_build {
  const struct ql_fold_shared *plan;
  struct ql_fold_side side;
  int32_t merge; /* int64: pre-aggregate entries per (key, group) */
  int32_t dense; /* use the plan's dense key index (the final table only) */
  struct ql_fold_keys kmap;  /* join keys that are not in the dense range */
  struct ql_fold_keys emap;  /* (join key, group) tuples = entries, when merging */
  int64_t n_heads, heads_cap;
  int64_t *head, *tail;      /* per key index: first and last entry, -1 none */
  int64_t n_entries, cap;
  int64_t *e_next;
  int64_t *e_groups;         /* side.n_groups per entry */
  uint32_t *e_group_nulls;
  ql_fold_u128 *e_ivalue;
  double *e_fvalue;
  uint8_t *e_has;
  int64_t rows;
  /* After the build: each entry's build-side group tuple numbered (e_bgid),
   * so a probe row finds its groups by (probe group number, e_bgid) in a
   * small 2-D table instead of hashing the whole tuple per joined pair. */
  struct ql_fold_keys bgmap;
  int64_t *e_bgid;
  int64_t bgid_bytes;
};

/* Above this many distinct build-side group tuples the 2-D table could waste
 * too much memory on sparse joins; the probe then hashes every tuple. */
#define QL_FOLD_MAX_BGIDS 64

struct ql_fold_groups {
  struct ql_fold_keys gmap;
  int64_t cap;
  int32_t is_float;
  int32_t reserved_;
  ql_fold_u128 *acc_i;
  struct ql_fold_xsum *acc_f;
  uint8_t *has;
  /* Probe side only: probe group tuples numbered, and per (number, build
   * group number) the group index + 1 (0: not yet). */
  struct ql_fold_keys pmap;
  int64_t *cells;
  int64_t n_cells;
};

/* For each output group key: where its value comes from. */
struct ql_fold_group_source {
  int32_t from_build; /* 1: the build entry's groups, 0: the probe row's */
  int32_t index;      /* position among that side's group columns */
};

struct ql_fold_run {
  struct ql_fold_shared *plan;
  struct ql_task_context ctx;
  struct ql_fold_mem mem;
  struct ql_fold_build build;
  struct ql_fold_side probe_side;
  struct ql_fold_group_source sources[QL_FOLD_MAX_GROUPS];
  struct ql_fold_groups result;
  int64_t emitted;
  int32_t done;
  int32_t status;
  char message[512];
};

/* Not a qlink status: the dense kernel cannot take this input (a duplicate
 * or non-finite float cell, or statistics the data contradict); run the
 * hash path instead. */
#define QL_FOLD_FALLBACK 1000


/* ---- fold_input.c */

void ql_fold_side_init(const struct ql_fold_spec *spec, int side, struct ql_fold_side *out);
/* Decode row r of batch b; 0 if a join key is NULL (the row never joins). */
int ql_fold_decode(const struct ql_fold_side *side, const struct ArrowArray *b, int64_t r, struct ql_fold_row *row);
/* QL_EDATA unless `batch` has well-formed columns for what `side` reads. */
int ql_fold_check_batch(const struct ql_fold_run *run, int side, const struct ArrowArray *batch, struct ql_error *error);
/* Execute partition p of child `side` and call fn on each batch. */
int ql_fold_drain(struct ql_fold_run *run, int side, int64_t p,
                  int (*fn)(struct ql_fold_run *run, void *arg, const struct ArrowArray *batch, struct ql_error *error),
                  void *arg, struct ql_error *error);
/* Every partition of child `side`, in order. */
int ql_fold_drain_all(struct ql_fold_run *run, int side,
                      int (*fn)(struct ql_fold_run *, void *, const struct ArrowArray *, struct ql_error *), void *arg,
                      struct ql_error *error);
/* A child's partition count, or -1 with error filled. */
int64_t ql_fold_partition_count(const struct ql_execution_plan *child, struct ql_error *error);
/* Run fn(arg) on this thread and on up to min(parallelism, max_workers) - 1
 * executor workers; the first failure wins. */
int ql_fold_parallel(const struct ql_task_context *ctx, int64_t max_workers, int (*fn)(void *, struct ql_error *),
                     void *arg, struct ql_error *error);

/* ---- fold_hash.c */

int ql_fold_build_init(struct ql_fold_build *b, const struct ql_fold_shared *plan, int dense, struct ql_fold_mem *mem,
                       struct ql_error *error);
void ql_fold_build_destroy(struct ql_fold_build *b, struct ql_fold_mem *mem);
/* Drain the build child into run->build. */
int ql_fold_run_build(struct ql_fold_run *run, struct ql_error *error);
/* Stream the probe child into run->result. */
int ql_fold_run_probe(struct ql_fold_run *run, struct ql_error *error);
void ql_fold_groups_init(struct ql_fold_groups *g, int32_t width, int32_t probe_width, int32_t is_float);
void ql_fold_groups_destroy(struct ql_fold_groups *g, struct ql_fold_mem *mem);
/* A group the caller knows is new (not indexed until needed). */
int ql_fold_group_append(struct ql_fold_groups *g, const int64_t *tuple, uint32_t nulls, int64_t *out,
                         struct ql_fold_mem *mem, struct ql_error *error);

/* ---- fold_gemm.c */

/* The dense kernel into run->result; QL_FOLD_FALLBACK when the input does
 * not suit it (run->result is then empty again). */
int ql_fold_run_gemm(struct ql_fold_run *run, struct ql_error *error);

#endif /* QL_FOLD_INTERNAL_H */
