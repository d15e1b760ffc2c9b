/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: FoldExec's internals shared by its source files.
 *
 *   fold_input.c  reading the children: partitions, batches, workers
 *   fold_cols.c   the children's rows decoded into typed arrays
 *   fold_hash.c   the hash path: build table, group tables, probe
 *   fold_gemm.c   the dense path: filling matrices, the product, the groups
 *   fold_exec.c   the execution plan, its streams and the emitted batches
 *
 * Not part of any public interface; see fold_exec.h for the behaviour.
 */
#ifndef QLINK_FOLD_INTERNAL_H
#define QLINK_FOLD_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "fold_keys.h"
#include "fold_mem.h"
#include "fold_spec.h"
#include "fold_xsum.h"
#include "qlink/table.h"

/* What a FoldExec and every stream it produced share (refcounted: a stream
 * may outlive its plan). Which kernel runs and which side is built are
 * decided per execution from the data read (fold_cols.c, fold_gemm.c). */
struct fd_shared {
  atomic_int refs;
  struct fd_spec spec;
  struct ArrowSchema schema;
  struct ql_execution_plan children[2];
  char display[768];
  atomic_llong output_rows, build_rows, probe_rows, groups, elapsed_ns, dense_runs, dense_index_runs, read_ns;
  atomic_llong range_misses; /* dense fills sized by sampled ranges that missed a row (then made exact) */
};

/* The columns one side reads, resolved for decoding a batch. */
struct fd_side {
  int32_t n_keys;
  const struct fd_operand *keys[FD_MAX_KEYS];
  int32_t n_groups;
  const struct fd_operand *groups[FD_MAX_GROUPS];
  const struct fd_operand *value;
};

/* Integer sums are kept at 128 bits, wrapping: decimal128 sums need them,
 * and an int64 sum is their low 64 bits (wrapping sums are a ring
 * homomorphism), so one path serves both. */
typedef unsigned __int128 fd_u128;

/* One decoded row of a side. */
struct fd_row {
  int64_t keys[FD_MAX_KEYS];
  int64_t groups[FD_MAX_GROUPS];
  uint32_t group_nulls;
  int32_t has_value;
  fd_u128 ivalue;
  double fvalue;
};

struct fd_build {
  const struct fd_shared *plan;
  struct fd_side side;
  int32_t merge; /* int64: pre-aggregate entries per (key, group) */
  int32_t dense; /* keys in [dense_min, dense_min + dense_len) index heads directly */
  int64_t dense_min, dense_len;
  struct fd_keys kmap;  /* join keys that are not in the dense range */
  struct fd_keys emap;  /* (join key, group) tuples = entries, when merging */
  int64_t n_heads, heads_cap;
  int64_t *head, *tail;      /* per key index: first and last entry, -1 none; after
                                the build, the key's entries are [head, tail) */
  int64_t n_entries, cap;
  int64_t *e_next;
  int64_t *e_groups;         /* side.n_groups per entry */
  uint32_t *e_group_nulls;
  fd_u128 *e_ivalue;
  double *e_fvalue;
  uint8_t *e_has;
  int64_t rows;
/* After the build: each entry's build-side group tuple numbered (e_bgid),
   * so a probe row finds its groups by (probe group number, e_bgid) in a
   * small 2-D table instead of hashing the whole tuple per joined pair. */
  struct fd_keys bgmap;
  int64_t *e_bgid;
  int64_t bgid_bytes;
};

/* Above this many distinct build-side group tuples the 2-D table could waste
 * too much memory on sparse joins; the probe then hashes every tuple. */
#define FD_MAX_BGIDS 64

struct fd_groups {
  struct fd_keys gmap;
  int64_t cap;
  int32_t is_float;
  int32_t reserved_;
  fd_u128 *acc_i;
  struct fd_xsum *acc_f;
  double *final_f; /* float sums already rounded (the dense kernel); NULL: acc_f */
  uint8_t *has;
  /* Probe side only: probe group tuples numbered, and per (number, build
   * group number) the group index + 1 (0: not yet). */
  struct fd_keys pmap;
  int64_t *cells;
  int64_t n_cells;
};

/* For each output group key: where its value comes from. */
struct fd_group_source {
  int32_t from_build; /* 1: the build entry's groups, 0: the probe row's */
  int32_t index;      /* position among that side's group columns */
};

/* A batch of one side as read from its child, held (not copied: in a host
 * like DataFusion it is the table's own memory) until the fold is done; the
 * fold decodes it block by block when it needs the rows. Batches without a
 * row whose join keys are all non-NULL are not kept. */
struct fd_chunk {
  struct ArrowArray batch; /* moved from the child's stream; released with the chunk */
  int64_t kept;            /* rows whose join keys are all non-NULL (a NULL key never joins) */
  int64_t reserved;        /* bytes reserved from the pool for holding it */
  int32_t sampled;         /* FD_KEYS / FD_GROUPS: those ranges below are taken from a
                              sample of the rows (a subset of the exact ones; fd_inputs_exact);
                              0: all exact */
  int32_t reserved_;
  /* Ranges over the kept rows (so the kernel choice need not rescan):
   * keys always; group i when bit i of group_any is set (a non-NULL value
   * exists); bit i of group_null: a NULL exists. */
  int64_t key_lo[FD_MAX_KEYS], key_hi[FD_MAX_KEYS];
  int64_t group_lo[FD_MAX_GROUPS], group_hi[FD_MAX_GROUPS];
  uint32_t group_any, group_null;
};

/* Rows decoded per block: small enough that a block stays in L1/L2 cache
 * while it is consumed. */
#define FD_BLOCK 256

/* Up to FD_BLOCK consecutive rows of a chunk decoded to typed arrays,
 * rows with a NULL join key dropped. A NULL group key is stored as 0 with
 * its bit set in group_nulls (bit i: group i of the side). */
struct fd_block {
  int64_t n;
  int64_t keys[FD_BLOCK * FD_MAX_KEYS];     /* side n_keys per row */
  int64_t groups[FD_BLOCK * FD_MAX_GROUPS]; /* side n_groups per row */
  uint32_t group_nulls[FD_BLOCK];
  uint8_t has[FD_BLOCK];                         /* 1: the value is not NULL */
  double fvalue[FD_BLOCK];                       /* values of float sums (as float64) */
  fd_u128 ivalue[FD_BLOCK];                 /* values of integer and decimal sums */
};

/* One partition of a side: its chunks in the order read. */
struct fd_part {
  int64_t n_chunks, chunks_cap;
  struct fd_chunk **chunks;
  int64_t rows;      /* rows kept */
  int64_t rows_read; /* rows read, NULL keys included */
};

/* One side of the join as read: partitions in the child's order. */
struct fd_input {
  struct fd_side side;
  int32_t is_float;
  int64_t row_bytes; /* what one row of the columns read takes (for the reservation) */
  int64_t n_parts;
  struct fd_part *parts;
  int64_t rows, rows_read;
};

/* Batches the dense path builds at once (in parallel) when every cell of
 * its result is a group. */
#define FD_EMIT_WINDOW 16

/* The dense kernel's result, emitted straight from C without a group
 * table: every cell with exist set is one group, in row-major order; its
 * group keys follow from (row, column). */
struct fd_dense_out {
  int32_t active;
  int32_t reserved_;
  int64_t rows, cols;       /* C's shape */
  void *c;                  /* per cell: the sum (double or int64, by the sum's type) */
  uint8_t *exist, *has;     /* per cell: a joined row exists / a non-NULL product exists */
  int64_t count;            /* cells with exist set */
  int64_t with_value;       /* cells with has set */
  int64_t cursor;           /* the next cell to look at when emitting */
  int64_t gmin[2], glen[2]; /* per side: its group key range; index glen is the NULL group */
  /* When every cell is a group, batches are built ahead in parallel, a
   * window at a time: ready[next_ready..n_ready) are built, not yet
   * handed out (released with the run). */
  struct ArrowArray ready[FD_EMIT_WINDOW];
  int64_t n_ready, next_ready;
};

/* The probe's direct numbering of probe groups (fold_hash.c). */
struct fd_pdirect {
  int32_t on;
  int32_t reserved_;
  int64_t min, len; /* group value v is number v - min; len - 1 is the NULL group */
};

struct fd_run {
  struct fd_shared *plan;
  struct ql_task_context ctx;
  struct fd_mem mem;
  struct fd_input in[2];
  int32_t build_side; /* the side with fewer rows (the right one on ties) */
  struct fd_build build;
  struct fd_pdirect pdirect;
  struct fd_group_source sources[FD_MAX_GROUPS];
  struct fd_groups result;
  struct fd_dense_out dense; /* when active: the result, instead of `result` */
  int64_t emitted;
  int32_t done;
  int32_t status;
  char message[512];
};

/* Not a qlink status: the dense kernel cannot take this input (keys not
 * dense, a duplicate or non-finite float cell); run the hash path instead. */
#define FD_FALLBACK 1000
/* Not a qlink status: a row lies outside the sampled ranges the dense
 * fill was sized by; make the ranges exact and try again. */
#define FD_GUESS_MISS 1001
/* Not a qlink status: the matrices sized by sampled ranges would not be
 * dense enough; decide again from exact ranges. */
#define FD_SHAPE_UNSURE 1002


/* A column of a batch may hold NULLs (a validity bitmap and nulls, or an
 * unknown null count). */
static inline int fd_has_nulls(const struct ArrowArray *c) {
  return c->null_count != 0 && c->n_buffers >= 1 && c->buffers[0] != NULL;
}

/* Validity bit i (the array's offset included by the caller). */
static inline int fd_bit(const struct ArrowArray *c, int64_t i) {
  const uint8_t *bits = c->buffers[0];
  return (bits[i >> 3] >> (i & 7)) & 1;
}

/* ---- fold_input.c */

void fd_side_init(const struct fd_spec *spec, int side, struct fd_side *out);
/* QL_EDATA unless `batch` has well-formed columns for what `side` reads. */
int fd_check_batch(const struct fd_run *run, int side, const struct ArrowArray *batch, struct ql_error *error);
/* Execute partition p of child `side` and call fn on each batch (fn may
 * move the batch out; what it leaves is released). */
int fd_drain(struct fd_run *run, int side, int64_t p,
                  int (*fn)(struct fd_run *run, void *arg, struct ArrowArray *batch, struct ql_error *error),
                  void *arg, struct ql_error *error);
/* A child's partition count, or -1 with error filled. */
int64_t fd_partition_count(const struct ql_execution_plan *child, struct ql_error *error);
/* Run fn(arg) on this thread and on up to min(parallelism, max_workers) - 1
 * executor workers; the first failure wins. */
int fd_parallel(const struct ql_task_context *ctx, int64_t max_workers, int (*fn)(void *, struct ql_error *),
                     void *arg, struct ql_error *error);

/* ---- fold_cols.c */

/* Read every partition of both children into run->in (in parallel on the
 * host's executor when it offers one) and choose run->build_side. Large
 * chunks whose join keys hold no NULL get key ranges from a sample of their
 * rows (the first and last FD_SAMPLE_EDGE, and every
 * FD_SAMPLE_STRIDE-th between), and group ranges too when their group
 * columns hold no NULL: the float dense fill checks every row against the
 * ranges it was sized by anyway and reads those columns once instead of
 * twice; whoever needs exact ranges calls fd_inputs_exact. */
#define FD_SAMPLE_MIN_ROWS 1024
#define FD_SAMPLE_EDGE 64
#define FD_SAMPLE_STRIDE 61
int fd_read_inputs(struct fd_run *run, struct ql_error *error);
#define FD_KEYS 1
#define FD_GROUPS 2
/* Make the `what` ranges (FD_KEYS | FD_GROUPS) of the chunks of
 * the sides in `sides` (bit k: side k) exact: a pass over those columns of
 * the sampled chunks, on the executor's workers. */
int fd_inputs_exact(struct fd_run *run, int what, int sides, struct ql_error *error);
/* 1 when some chunk of `in` has sampled `what` ranges. */
int fd_input_sampled(const struct fd_input *in, int what);
/* Free what fd_read_inputs kept (safe on a zeroed or partial input). */
void fd_inputs_destroy(struct fd_run *run);
/* A block buffer (about 56 KiB, too large for some workers' stacks),
 * accounted in mem; free with fd_mem_free(mem, b, sizeof(*b)). */
int fd_block_new(struct fd_mem *mem, struct fd_block **out, struct ql_error *error);
/* Decode rows [from, from + FD_BLOCK) of c (fewer at its end) into b. */
void fd_block_decode(const struct fd_input *in, const struct fd_chunk *c, int64_t from,
                          struct fd_block *b);
/* Row r of a block as a fd_row. */
void fd_block_row(const struct fd_input *in, const struct fd_block *b, int64_t r,
                       struct fd_row *row);
/* The smallest and largest value of a side's key (is_group 0) or group key
 * (is_group 1) number i over its kept rows, NULL groups skipped; *nulls: a
 * NULL group was seen. 0 when no non-NULL value exists. */
int fd_input_range(const struct fd_input *in, int is_group, int32_t i, int64_t *lo, int64_t *hi, int *nulls);

/* ---- fold_hash.c */

/* The hash path over run->in: build on run->build_side, probe the other. */
int fd_run_hash(struct fd_run *run, struct ql_error *error);
void fd_build_destroy(struct fd_build *b, struct fd_mem *mem);
void fd_groups_init(struct fd_groups *g, int32_t width, int32_t probe_width, int32_t is_float);
void fd_groups_destroy(struct fd_groups *g, struct fd_mem *mem);
/* Arrays for `count` groups in an empty g (count 0 after; the caller fills
 * and sets gmap.count), float sums as rounded values when `final`, else as
 * exact sums. Nothing changes on failure. */
int fd_groups_alloc(struct fd_groups *g, int64_t count, int final, struct fd_mem *mem,
                         struct ql_error *error);

/* ---- fold_gemm.c */

/* The dense kernel over run->in into run->dense when the data read suit it
 * (see fold_dense.h); FD_FALLBACK otherwise. */
int fd_run_gemm(struct fd_run *run, struct ql_error *error);
/* The next n groups of run->dense as a batch (a struct array of the group
 * keys and the sum) into out, written straight from C. */
int fd_dense_emit(struct fd_run *run, int64_t n, struct ArrowArray *out, struct ql_error *error);
/* Free run->dense. */
void fd_dense_destroy(struct fd_run *run);

#endif /* QLINK_FOLD_INTERNAL_H */
