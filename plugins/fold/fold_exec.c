/* qlink_fold: FoldExec (see fold_exec.h). */
#include "fold_exec.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold_dense.h"
#include "fold_keys.h"
#include "fold_mem.h"
#include "fold_xsum.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

/* ------------------------------------------------------------ shared plan */

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

static void ql_fold_shared_unref(struct ql_fold_shared *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (int k = 0; k < 2; k++)
    if (s->children[k].release) s->children[k].release(&s->children[k]);
  ql_schema_release(&s->schema);
  free(s);
}

/* --------------------------------------------------------- column reading */

/* The columns one side reads, resolved for decoding a batch. */
struct ql_fold_side {
  int32_t n_keys;
  const struct ql_fold_operand *keys[QL_FOLD_MAX_KEYS];
  int32_t n_groups;
  const struct ql_fold_operand *groups[QL_FOLD_MAX_GROUPS];
  const struct ql_fold_operand *value;
};

static void ql_fold_side_init(const struct ql_fold_spec *spec, int side, struct ql_fold_side *out) {
  memset(out, 0, sizeof(*out));
  out->n_keys = spec->n_keys;
  for (int32_t i = 0; i < spec->n_keys; i++) out->keys[i] = &spec->keys[side][i];
  for (int32_t i = 0; i < spec->n_groups; i++)
    if (spec->groups[i].side == side) out->groups[out->n_groups++] = &spec->groups[i];
  out->value = &spec->values[side];
}

static int ql_fold_valid(const struct ArrowArray *a, int64_t i) {
  if (a->null_count == 0 || a->n_buffers < 1 || !a->buffers[0]) return 1;
  const uint8_t *bits = a->buffers[0];
  return (bits[i >> 3] >> (i & 7)) & 1;
}

static int64_t ql_fold_read_i64(const struct ArrowArray *a, int32_t storage, int64_t i) {
  const void *d = a->buffers[1];
  switch (storage) {
    case QL_FOLD_S8: return ((const int8_t *)d)[i];
    case QL_FOLD_S16: return ((const int16_t *)d)[i];
    case QL_FOLD_S32: return ((const int32_t *)d)[i];
    case QL_FOLD_U8: return ((const uint8_t *)d)[i];
    case QL_FOLD_U16: return ((const uint16_t *)d)[i];
    case QL_FOLD_U32: return ((const uint32_t *)d)[i];
    case QL_FOLD_U64: return (int64_t)((const uint64_t *)d)[i];
    default: return ((const int64_t *)d)[i];
  }
}

static double ql_fold_read_f64(const struct ArrowArray *a, int32_t storage, int64_t i) {
  switch (storage) {
    case QL_FOLD_F32: return ((const float *)a->buffers[1])[i];
    case QL_FOLD_F64: return ((const double *)a->buffers[1])[i];
    case QL_FOLD_U64: return (double)((const uint64_t *)a->buffers[1])[i];
    default: return (double)ql_fold_read_i64(a, storage, i);
  }
}

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

/* Decode row r of batch b; 0 if a join key is NULL (the row never joins). */
static int ql_fold_decode(const struct ql_fold_side *side, const struct ArrowArray *b, int64_t r,
                          struct ql_fold_row *row) {
  for (int32_t i = 0; i < side->n_keys; i++) {
    const struct ArrowArray *c = b->children[side->keys[i]->column];
    int64_t at = c->offset + b->offset + r;
    if (!ql_fold_valid(c, at)) return 0;
    row->keys[i] = ql_fold_read_i64(c, side->keys[i]->storage, at);
  }
  row->group_nulls = 0;
  for (int32_t i = 0; i < side->n_groups; i++) {
    const struct ArrowArray *c = b->children[side->groups[i]->column];
    int64_t at = c->offset + b->offset + r;
    if (ql_fold_valid(c, at)) {
      row->groups[i] = ql_fold_read_i64(c, side->groups[i]->storage, at);
    } else {
      row->groups[i] = 0;
      row->group_nulls |= 1u << i;
    }
  }
  const struct ArrowArray *c = b->children[side->value->column];
  int64_t at = c->offset + b->offset + r;
  row->has_value = ql_fold_valid(c, at);
  row->ivalue = 0;
  row->fvalue = 0;
  if (row->has_value) {
    if (side->value->as_f64) row->fvalue = ql_fold_read_f64(c, side->value->storage, at);
    else if (side->value->storage == QL_FOLD_D128) memcpy(&row->ivalue, (const uint8_t *)c->buffers[1] + at * 16, 16);
    else row->ivalue = (ql_fold_u128)(uint64_t)ql_fold_read_i64(c, side->value->storage, at);
  }
  return 1;
}

/* ------------------------------------------------------------ build table */

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

static int ql_fold_grow(struct ql_fold_mem *mem, void **p, int64_t old_n, int64_t new_n, int64_t size,
                        struct ql_error *error) {
  return ql_fold_mem_resize(mem, p, old_n * size, new_n * size, error);
}

static void ql_fold_build_destroy(struct ql_fold_build *b, struct ql_fold_mem *mem) {
  ql_fold_keys_destroy(&b->bgmap, mem);
  ql_fold_mem_free(mem, b->e_bgid, b->bgid_bytes);
  ql_fold_keys_destroy(&b->kmap, mem);
  ql_fold_keys_destroy(&b->emap, mem);
  ql_fold_mem_free(mem, b->head, b->heads_cap * 8);
  ql_fold_mem_free(mem, b->tail, b->heads_cap * 8);
  ql_fold_mem_free(mem, b->e_next, b->cap * 8);
  ql_fold_mem_free(mem, b->e_groups, b->cap * b->side.n_groups * 8);
  ql_fold_mem_free(mem, b->e_group_nulls, b->cap * 4);
  ql_fold_mem_free(mem, b->e_ivalue, b->cap * 16);
  ql_fold_mem_free(mem, b->e_fvalue, b->cap * 8);
  ql_fold_mem_free(mem, b->e_has, b->cap);
}

static int ql_fold_build_heads(struct ql_fold_build *b, int64_t need, struct ql_fold_mem *mem, struct ql_error *error) {
  if (need > b->heads_cap) {
    int64_t cap = b->heads_cap ? b->heads_cap : 16;
    while (cap < need) cap *= 2;
    void *h = b->head, *t = b->tail;
    QL_RETURN_NOT_OK(ql_fold_grow(mem, &h, b->heads_cap, cap, 8, error));
    b->head = h;
    int rc = ql_fold_grow(mem, &t, b->heads_cap, cap, 8, error);
    if (rc != QL_OK) {
      if (ql_fold_grow(mem, &h, cap, b->heads_cap, 8, NULL) == QL_OK) b->head = h;
      return rc;
    }
    b->tail = t;
    b->heads_cap = cap;
  }
  for (int64_t i = b->n_heads; i < need; i++) b->head[i] = b->tail[i] = -1;
  if (need > b->n_heads) b->n_heads = need;
  return QL_OK;
}

static int ql_fold_build_init(struct ql_fold_build *b, const struct ql_fold_shared *plan, int dense,
                              struct ql_fold_mem *mem, struct ql_error *error) {
  memset(b, 0, sizeof(*b));
  b->plan = plan;
  b->dense = dense && plan->dense;
  ql_fold_side_init(&plan->spec, plan->build_side, &b->side);
  /* Pre-aggregating is exact only when the product is the sum's own int64
   * ring: x * (y1 + y2) = x * y1 + x * y2 (mod 2^64). */
  b->merge = plan->spec.product == QL_FOLD_S64;
  ql_fold_keys_init(&b->kmap, plan->spec.n_keys);
  ql_fold_keys_init(&b->emap, plan->spec.n_keys + b->side.n_groups);
  ql_fold_keys_init(&b->bgmap, b->side.n_groups);
  if (b->dense) return ql_fold_build_heads(b, plan->dense_len, mem, error);
  return QL_OK;
}

/* Index of a join key among the heads: key - min inside the dense range,
 * else dense_len + its number in kmap. -1 when absent and not inserting. */
static int ql_fold_key_index(struct ql_fold_build *b, const int64_t *keys, int insert, int64_t *out,
                             struct ql_fold_mem *mem, struct ql_error *error) {
  const struct ql_fold_shared *p = b->plan;
  if (b->dense && keys[0] >= p->dense_min && (uint64_t)keys[0] - (uint64_t)p->dense_min < (uint64_t)p->dense_len) {
    *out = keys[0] - p->dense_min;
    return QL_OK;
  }
  int64_t base = b->dense ? p->dense_len : 0;
  uint64_t h = ql_fold_keys_hash(keys, 0, b->kmap.width);
  if (!insert) {
    int64_t n = ql_fold_keys_find(&b->kmap, keys, 0, h);
    *out = n < 0 ? -1 : base + n;
    return QL_OK;
  }
  int64_t n;
  int added;
  QL_RETURN_NOT_OK(ql_fold_keys_insert(&b->kmap, keys, 0, h, &n, &added, mem, error));
  if (added) QL_RETURN_NOT_OK(ql_fold_build_heads(b, base + n + 1, mem, error));
  *out = base + n;
  return QL_OK;
}

static int ql_fold_build_entries(struct ql_fold_build *b, struct ql_fold_mem *mem, struct ql_error *error) {
  if (b->n_entries < b->cap) return QL_OK;
  int64_t cap = b->cap ? b->cap * 2 : 64;
  int64_t g = b->side.n_groups;
  void *p;
  /* Each array grows in turn; `cap` is committed only when all did, and the
   * destroy path frees by the old capacity, so shrink back on failure. */
  void **arrays[] = {(void **)&b->e_next, (void **)&b->e_groups, (void **)&b->e_group_nulls,
                     (void **)&b->e_ivalue, (void **)&b->e_fvalue, (void **)&b->e_has};
  int64_t sizes[] = {8, 8 * g, 4, 16, 8, 1};
  for (int k = 0; k < 6; k++) {
    p = *arrays[k];
    int rc = ql_fold_grow(mem, &p, b->cap, cap, sizes[k], error);
    if (rc != QL_OK) {
      for (int j = 0; j < k; j++) {
        void *q = *arrays[j];
        if (ql_fold_grow(mem, &q, cap, b->cap, sizes[j], NULL) == QL_OK) *arrays[j] = q;
      }
      return rc;
    }
    *arrays[k] = p;
  }
  b->cap = cap;
  return QL_OK;
}

static int ql_fold_build_add(struct ql_fold_build *b, const struct ql_fold_row *row, struct ql_fold_mem *mem,
                             struct ql_error *error) {
  int64_t k;
  QL_RETURN_NOT_OK(ql_fold_key_index(b, row->keys, 1, &k, mem, error));
  int32_t nk = b->plan->spec.n_keys, ng = b->side.n_groups;
  int64_t e;
  if (b->merge) {
    int64_t tuple[QL_FOLD_MAX_KEYS + QL_FOLD_MAX_GROUPS];
    memcpy(tuple, row->keys, (size_t)nk * 8);
    memcpy(tuple + nk, row->groups, (size_t)ng * 8);
    uint32_t nulls = row->group_nulls << nk;
    int added;
    uint64_t h = ql_fold_keys_hash(tuple, nulls, nk + ng);
    QL_RETURN_NOT_OK(ql_fold_build_entries(b, mem, error)); /* room for a possible new entry */
    QL_RETURN_NOT_OK(ql_fold_keys_insert(&b->emap, tuple, nulls, h, &e, &added, mem, error));
    if (!added) {
      if (row->has_value) {
        b->e_ivalue[e] += row->ivalue;
        b->e_has[e] = 1;
      }
      return QL_OK;
    }
  } else {
    QL_RETURN_NOT_OK(ql_fold_build_entries(b, mem, error));
    e = b->n_entries;
  }
  b->n_entries = e + 1;
  memcpy(b->e_groups + e * ng, row->groups, (size_t)ng * 8);
  b->e_group_nulls[e] = row->group_nulls;
  b->e_ivalue[e] = row->ivalue;
  b->e_fvalue[e] = row->fvalue;
  b->e_has[e] = (uint8_t)row->has_value;
  b->e_next[e] = -1;
  if (b->tail[k] >= 0) b->e_next[b->tail[k]] = e;
  else b->head[k] = e;
  b->tail[k] = e;
  return QL_OK;
}

/* Number the build-side group tuples (see e_bgid). */
static int ql_fold_build_finish(struct ql_fold_build *b, struct ql_fold_mem *mem, struct ql_error *error) {
  void *p = NULL;
  QL_RETURN_NOT_OK(ql_fold_mem_resize(mem, &p, 0, b->n_entries * 8, error));
  b->e_bgid = p;
  b->bgid_bytes = b->n_entries * 8;
  int32_t ng = b->side.n_groups;
  for (int64_t e = 0; e < b->n_entries; e++) {
    const int64_t *g = b->e_groups + e * ng;
    int added;
    uint64_t h = ql_fold_keys_hash(g, b->e_group_nulls[e], ng);
    QL_RETURN_NOT_OK(ql_fold_keys_insert(&b->bgmap, g, b->e_group_nulls[e], h, &b->e_bgid[e], &added, mem, error));
    if (b->bgmap.count > QL_FOLD_MAX_BGIDS) return QL_OK; /* too many: the probe hashes tuples */
  }
  return QL_OK;
}

/* ------------------------------------------------------------ group table */

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

static void ql_fold_groups_init(struct ql_fold_groups *g, int32_t width, int32_t probe_width, int32_t is_float) {
  memset(g, 0, sizeof(*g));
  ql_fold_keys_init(&g->gmap, width);
  ql_fold_keys_init(&g->pmap, probe_width);
  g->is_float = is_float;
}

static void ql_fold_groups_destroy(struct ql_fold_groups *g, struct ql_fold_mem *mem) {
  if (g->acc_f)
    for (int64_t i = 0; i < g->gmap.count; i++) ql_fold_xsum_clear(&g->acc_f[i], mem);
  ql_fold_keys_destroy(&g->gmap, mem);
  ql_fold_keys_destroy(&g->pmap, mem);
  ql_fold_mem_free(mem, g->cells, g->n_cells * 8);
  ql_fold_mem_free(mem, g->acc_i, g->cap * 16);
  ql_fold_mem_free(mem, g->acc_f, g->cap * (int64_t)sizeof(struct ql_fold_xsum));
  ql_fold_mem_free(mem, g->has, g->cap);
  ql_fold_groups_init(g, g->gmap.width, g->pmap.width, g->is_float);
}

/* Room in the accumulators for one more group. */
static int ql_fold_groups_reserve(struct ql_fold_groups *g, struct ql_fold_mem *mem, struct ql_error *error) {
  if (g->gmap.count < g->cap) return QL_OK;
  int64_t cap = g->cap ? g->cap * 2 : 64;
  void *p = g->is_float ? (void *)g->acc_f : (void *)g->acc_i;
  int64_t size = g->is_float ? (int64_t)sizeof(struct ql_fold_xsum) : 16;
  QL_RETURN_NOT_OK(ql_fold_grow(mem, &p, g->cap, cap, size, error));
  if (g->is_float) g->acc_f = p;
  else g->acc_i = p;
  void *hp = g->has;
  int rc = ql_fold_grow(mem, &hp, g->cap, cap, 1, error);
  if (rc != QL_OK) {
    if (ql_fold_grow(mem, &p, cap, g->cap, size, NULL) == QL_OK) {
      if (g->is_float) g->acc_f = p;
      else g->acc_i = p;
    }
    return rc;
  }
  g->has = hp;
  g->cap = cap;
  return QL_OK;
}

/* The group of `tuple`, created if new. */
static int ql_fold_group(struct ql_fold_groups *g, const int64_t *tuple, uint32_t nulls, int64_t *out,
                         struct ql_fold_mem *mem, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_fold_keys_index(&g->gmap, mem, error));
  uint64_t h = ql_fold_keys_hash(tuple, nulls, g->gmap.width);
  int64_t n = ql_fold_keys_find(&g->gmap, tuple, nulls, h);
  if (n >= 0) {
    *out = n;
    return QL_OK;
  }
  QL_RETURN_NOT_OK(ql_fold_groups_reserve(g, mem, error));
  int added;
  return ql_fold_keys_insert(&g->gmap, tuple, nulls, h, out, &added, mem, error);
}

/* A group the caller knows is new (not indexed until needed). */
static int ql_fold_group_append(struct ql_fold_groups *g, const int64_t *tuple, uint32_t nulls, int64_t *out,
                                struct ql_fold_mem *mem, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_fold_groups_reserve(g, mem, error));
  return ql_fold_keys_append(&g->gmap, tuple, nulls, out, mem, error);
}

/* dst += src, group by group, in src's order. */
static int ql_fold_groups_merge(struct ql_fold_groups *dst, const struct ql_fold_groups *src, struct ql_fold_mem *mem,
                                struct ql_error *error) {
  int32_t w = src->gmap.width;
  for (int64_t i = 0; i < src->gmap.count; i++) {
    int64_t d;
    QL_RETURN_NOT_OK(ql_fold_group(dst, src->gmap.values + i * w, src->gmap.nulls[i], &d, mem, error));
    if (!src->has[i]) continue;
    dst->has[d] = 1;
    if (dst->is_float) QL_RETURN_NOT_OK(ql_fold_xsum_merge(&dst->acc_f[d], &src->acc_f[i], mem, error));
    else dst->acc_i[d] += src->acc_i[i];
  }
  return QL_OK;
}

/* ------------------------------------------------------------------ probe */

/* For each output group key: where its value comes from. */
struct ql_fold_group_source {
  int32_t from_build; /* 1: the build entry's groups, 0: the probe row's */
  int32_t index;      /* position among that side's group columns */
};

struct ql_fold_run; /* one execution */

struct ql_fold_probe_task {
  struct ql_fold_run *run;
  struct ql_fold_groups *tables; /* one per probe partition */
  int64_t n_partitions;
  atomic_llong next;
  atomic_int failed;
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

static int ql_fold_cancelled(const struct ql_task_context *ctx) {
  return ctx->is_cancelled && ctx->is_cancelled(ctx);
}

/* Drain partition p of child `side`, calling fn on each batch. */
static int ql_fold_drain(struct ql_fold_run *run, int side, int64_t p,
                         int (*fn)(struct ql_fold_run *run, void *arg, const struct ArrowArray *batch,
                                   struct ql_error *error),
                         void *arg, struct ql_error *error) {
  const struct ql_execution_plan *child = &run->plan->children[side];
  struct ql_task_context ctx = run->ctx;
  ctx.partition = p;
  struct ArrowArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  int rc = child->execute(child, p, &ctx, &stream, error);
  if (rc != QL_OK) return ql_error_prefix(error, "qlink_fold: input %d partition %lld", side, (long long)p);
  for (;;) {
    if (ql_fold_cancelled(&run->ctx)) {
      rc = ql_error_set(error, QL_ECANCELLED, "qlink_fold: query cancelled");
      break;
    }
    struct ArrowArray batch;
    memset(&batch, 0, sizeof(batch));
    int e = stream.get_next(&stream, &batch);
    if (e != 0) {
      const char *msg = stream.get_last_error ? stream.get_last_error(&stream) : NULL;
      rc = ql_error_set(error, ql_status_from_errno(e), "qlink_fold: input %d partition %lld: %s", side,
                        (long long)p, msg ? msg : strerror(e));
      break;
    }
    if (!batch.release) break;
    rc = fn(run, arg, &batch, error);
    batch.release(&batch);
    if (rc != QL_OK) break;
  }
  stream.release(&stream);
  return rc;
}

/* A batch from a child must have the columns the fold reads, each a
 * fixed-width array with a data buffer: a malformed batch is an error, never
 * a crash. */
static int ql_fold_check_batch(const struct ql_fold_run *run, int side, const struct ArrowArray *batch,
                               struct ql_error *error) {
  const struct ql_fold_spec *s = &run->plan->spec;
  const struct ql_fold_operand *ops[QL_FOLD_MAX_KEYS + QL_FOLD_MAX_GROUPS + 1];
  int n = 0;
  for (int32_t i = 0; i < s->n_keys; i++) ops[n++] = &s->keys[side][i];
  for (int32_t i = 0; i < s->n_groups; i++)
    if (s->groups[i].side == side) ops[n++] = &s->groups[i];
  ops[n++] = &s->values[side];
  if (batch->length < 0 || batch->offset < 0)
    return ql_error_set(error, QL_EDATA, "qlink_fold: input %d batch has a negative length or offset", side);
  for (int i = 0; i < n; i++) {
    int32_t col = ops[i]->column;
    const struct ArrowArray *c = col < batch->n_children && batch->children ? batch->children[col] : NULL;
    if (!c || c->n_buffers < 2 || c->offset < 0 || c->length < batch->offset + batch->length ||
        (c->length > 0 && !c->buffers[1]))
      return ql_error_set(error, QL_EDATA, "qlink_fold: input %d batch column %d (%s) is missing or malformed", side,
                          col, ops[i]->name);
  }
  return QL_OK;
}

static int ql_fold_build_batch(struct ql_fold_run *run, void *arg, const struct ArrowArray *batch,
                               struct ql_error *error) {
  struct ql_fold_build *b = arg ? arg : &run->build;
  QL_RETURN_NOT_OK(ql_fold_check_batch(run, run->plan->build_side, batch, error));
  struct ql_fold_row row;
  for (int64_t r = 0; r < batch->length; r++) {
    if (!ql_fold_decode(&b->side, batch, r, &row)) continue;
    QL_RETURN_NOT_OK(ql_fold_build_add(b, &row, &run->mem, error));
  }
  b->rows += batch->length;
  return QL_OK;
}

/* The group of probe row `row` joined with build entry `e`, by hashing the
 * whole group tuple. */
static int ql_fold_probe_group(struct ql_fold_run *run, struct ql_fold_groups *g, const struct ql_fold_row *row,
                               int64_t e, int is_new, int64_t *out, struct ql_error *error) {
  const struct ql_fold_build *b = &run->build;
  const struct ql_fold_spec *s = &run->plan->spec;
  int32_t ng = b->side.n_groups;
  int64_t tuple[QL_FOLD_MAX_GROUPS];
  uint32_t nulls = 0;
  for (int32_t i = 0; i < s->n_groups; i++) {
    const struct ql_fold_group_source *src = &run->sources[i];
    uint32_t null;
    if (src->from_build) {
      tuple[i] = b->e_groups[e * ng + src->index];
      null = (b->e_group_nulls[e] >> src->index) & 1u;
    } else {
      tuple[i] = row->groups[src->index];
      null = (row->group_nulls >> src->index) & 1u;
    }
    nulls |= null << i;
  }
  if (is_new) return ql_fold_group_append(g, tuple, nulls, out, &run->mem, error);
  return ql_fold_group(g, tuple, nulls, out, &run->mem, error);
}

/* The number of the probe row's group tuple in g->pmap, with its row of
 * cells (n_bgids wide) allocated. */
static int ql_fold_probe_number(struct ql_fold_run *run, struct ql_fold_groups *g, const struct ql_fold_row *row,
                                int64_t *out, struct ql_error *error) {
  int32_t width = run->probe_side.n_groups;
  int64_t nb = run->build.bgmap.count;
  uint64_t h = ql_fold_keys_hash(row->groups, row->group_nulls, width);
  int added;
  QL_RETURN_NOT_OK(ql_fold_keys_insert(&g->pmap, row->groups, row->group_nulls, h, out, &added, &run->mem, error));
  if ((*out + 1) * nb > g->n_cells) {
    int64_t n = g->n_cells ? g->n_cells * 2 : 64 * nb;
    while (n < (*out + 1) * nb) n *= 2;
    void *p = g->cells;
    QL_RETURN_NOT_OK(ql_fold_mem_resize(&run->mem, &p, g->n_cells * 8, n * 8, error));
    g->cells = p;
    g->n_cells = n;
  }
  return QL_OK;
}

/* x * y as DataFusion computes it at the product's width (wrapping), then
 * widened for the sum (as an unsigned bit pattern for wrapping adds). */
static inline ql_fold_u128 ql_fold_int_product(int32_t product, ql_fold_u128 x, ql_fold_u128 y) {
  uint64_t p = (uint64_t)x * (uint64_t)y;
  switch (product) {
    case QL_FOLD_S8: return (uint64_t)(int64_t)(int8_t)(uint8_t)p;
    case QL_FOLD_S16: return (uint64_t)(int64_t)(int16_t)(uint16_t)p;
    case QL_FOLD_S32: return (uint64_t)(int64_t)(int32_t)(uint32_t)p;
    default: return p;
  }
}

static int ql_fold_probe_batch(struct ql_fold_run *run, void *arg, const struct ArrowArray *batch,
                               struct ql_error *error) {
  struct ql_fold_groups *g = arg;
  struct ql_fold_build *b = &run->build;
  QL_RETURN_NOT_OK(ql_fold_check_batch(run, 1 - run->plan->build_side, batch, error));
  int64_t nb = b->bgmap.count;
  int by_cells = nb > 0 && nb <= QL_FOLD_MAX_BGIDS;
  int32_t product = run->plan->spec.product;
  struct ql_fold_row row;
  for (int64_t r = 0; r < batch->length; r++) {
    if (!ql_fold_decode(&run->probe_side, batch, r, &row)) continue;
    int64_t k;
    QL_RETURN_NOT_OK(ql_fold_key_index(b, row.keys, 0, &k, &run->mem, error));
    if (k < 0 || b->head[k] < 0) continue;
    int64_t pg = 0;
    if (by_cells) QL_RETURN_NOT_OK(ql_fold_probe_number(run, g, &row, &pg, error));
    for (int64_t e = b->head[k]; e >= 0; e = b->e_next[e]) {
      int64_t gi;
      if (by_cells) {
        int64_t *cell = &g->cells[pg * nb + b->e_bgid[e]];
        if (*cell == 0) {
          /* (probe tuple, build tuple) is new: so is the group. */
          QL_RETURN_NOT_OK(ql_fold_probe_group(run, g, &row, e, 1, &gi, error));
          *cell = gi + 1;
        }
        gi = *cell - 1;
      } else {
        QL_RETURN_NOT_OK(ql_fold_probe_group(run, g, &row, e, 0, &gi, error));
      }
      if (!row.has_value || !b->e_has[e]) continue;
      g->has[gi] = 1;
      if (g->is_float) {
        double prod = row.fvalue * b->e_fvalue[e];
        if (product == QL_FOLD_F32) prod = (double)((float)row.fvalue * (float)b->e_fvalue[e]);
        QL_RETURN_NOT_OK(ql_fold_xsum_add_fast(&g->acc_f[gi], prod, &run->mem, error));
      } else {
        if (product == QL_FOLD_D128) {
          /* arrow multiplies decimals with mul_checked: an overflow fails the query. */
          __int128 p;
          if (__builtin_mul_overflow((__int128)row.ivalue, (__int128)b->e_ivalue[e], &p))
            return ql_error_set(error, QL_EOVERFLOW, "qlink_fold: arithmetic overflow multiplying decimal values of %s and %s",
                                run->plan->spec.values[0].name, run->plan->spec.values[1].name);
          g->acc_i[gi] += (ql_fold_u128)p;
        } else {
          g->acc_i[gi] += ql_fold_int_product(product, row.ivalue, b->e_ivalue[e]);
        }
      }
    }
  }
  atomic_fetch_add(&run->plan->probe_rows, batch->length);
  return QL_OK;
}

/* A worker: probe partitions taken from a shared counter until none is left. */
static int ql_fold_probe_worker(void *arg, struct ql_error *error) {
  struct ql_fold_probe_task *t = arg;
  struct ql_fold_run *run = t->run;
  for (;;) {
    if (atomic_load(&t->failed)) return QL_OK;
    int64_t p = atomic_fetch_add(&t->next, 1);
    if (p >= t->n_partitions) return QL_OK;
    int rc = ql_fold_drain(run, 1 - run->plan->build_side, p, ql_fold_probe_batch, &t->tables[p], error);
    if (rc != QL_OK) {
      atomic_store(&t->failed, 1);
      return rc;
    }
  }
}

static int64_t ql_fold_partition_count(const struct ql_execution_plan *child, struct ql_error *error) {
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  if (child->get_properties(child, &props, error) != QL_OK) return -1;
  return props.partition_count;
}

static int ql_fold_parallel(const struct ql_task_context *ctx, int64_t max_workers, int (*fn)(void *, struct ql_error *),
                            void *arg, struct ql_error *error);

static int ql_fold_run_probe(struct ql_fold_run *run, struct ql_error *error) {
  const struct ql_execution_plan *child = &run->plan->children[1 - run->plan->build_side];
  int64_t n = ql_fold_partition_count(child, error);
  if (n < 0) return ql_error_prefix(error, "qlink_fold: probe input properties");
  struct ql_fold_probe_task task;
  memset(&task, 0, sizeof(task));
  task.run = run;
  task.n_partitions = n;
  void *tables = NULL;
  int64_t tables_bytes = n * (int64_t)sizeof(struct ql_fold_groups);
  QL_RETURN_NOT_OK(ql_fold_mem_resize(&run->mem, &tables, 0, tables_bytes, error));
  task.tables = tables;
  int32_t width = run->plan->spec.n_groups;
  int is_float = run->plan->spec.value_type == QL_FOLD_FLOAT64;
  for (int64_t p = 0; p < n; p++) ql_fold_groups_init(&task.tables[p], width, run->probe_side.n_groups, is_float);

  /* Workers on the host's executor; this thread works too. */
  int rc = ql_fold_parallel(&run->ctx, n, ql_fold_probe_worker, &task, error);
  /* Merge in partition order: the result does not depend on which worker
   * ran which partition. */
  for (int64_t p = 0; p < n && rc == QL_OK; p++) {
    if (run->result.gmap.count == 0) {
      /* Nothing to merge into yet: take the table as it is. */
      struct ql_fold_groups empty = run->result;
      run->result = task.tables[p];
      task.tables[p] = empty;
    } else {
      rc = ql_fold_groups_merge(&run->result, &task.tables[p], &run->mem, error);
    }
  }
  for (int64_t p = 0; p < n; p++) ql_fold_groups_destroy(&task.tables[p], &run->mem);
  /* The probe-side lookup tables are not needed to emit. */
  ql_fold_keys_destroy(&run->result.pmap, &run->mem);
  ql_fold_mem_free(&run->mem, run->result.cells, run->result.n_cells * 8);
  run->result.cells = NULL;
  run->result.n_cells = 0;
  ql_fold_mem_free(&run->mem, tables, tables_bytes);
  return rc;
}

/* Add every entry of a partition's build table to the final one, key by key
 * in first-seen order: a deterministic order, and for int64 the sums merge. */
static int ql_fold_build_merge(struct ql_fold_build *dst, const struct ql_fold_build *src, struct ql_fold_mem *mem,
                               struct ql_error *error) {
  int32_t nk = src->kmap.width, ng = src->side.n_groups;
  struct ql_fold_row row;
  memset(&row, 0, sizeof(row));
  for (int64_t k = 0; k < src->kmap.count; k++) {
    memcpy(row.keys, src->kmap.values + k * nk, (size_t)nk * 8);
    for (int64_t e = src->head[k]; e >= 0; e = src->e_next[e]) {
      memcpy(row.groups, src->e_groups + e * ng, (size_t)ng * 8);
      row.group_nulls = src->e_group_nulls[e];
      row.has_value = src->e_has[e];
      row.ivalue = src->e_ivalue[e];
      row.fvalue = src->e_fvalue[e];
      QL_RETURN_NOT_OK(ql_fold_build_add(dst, &row, mem, error));
    }
  }
  dst->rows += src->rows;
  return QL_OK;
}

struct ql_fold_build_task {
  struct ql_fold_run *run;
  struct ql_fold_build *tables; /* one per build partition */
  int64_t n_partitions;
  atomic_llong next;
  atomic_int failed;
};

static int ql_fold_build_worker(void *arg, struct ql_error *error) {
  struct ql_fold_build_task *t = arg;
  for (;;) {
    if (atomic_load(&t->failed)) return QL_OK;
    int64_t p = atomic_fetch_add(&t->next, 1);
    if (p >= t->n_partitions) return QL_OK;
    int rc = ql_fold_drain(t->run, t->run->plan->build_side, p, ql_fold_build_batch, &t->tables[p], error);
    if (rc != QL_OK) {
      atomic_store(&t->failed, 1);
      return rc;
    }
  }
}

/* Several partitions and an executor: each partition into its own table in
 * parallel, then merged in partition order. */
static int ql_fold_run_build_parallel(struct ql_fold_run *run, int64_t n, struct ql_error *error) {
  void *tables = NULL;
  int64_t bytes = n * (int64_t)sizeof(struct ql_fold_build);
  QL_RETURN_NOT_OK(ql_fold_mem_resize(&run->mem, &tables, 0, bytes, error));
  struct ql_fold_build_task task;
  memset(&task, 0, sizeof(task));
  task.run = run;
  task.tables = tables;
  task.n_partitions = n;
  int rc = QL_OK;
  for (int64_t p = 0; p < n; p++) {
    int prc = ql_fold_build_init(&task.tables[p], run->plan, 0, &run->mem, error);
    if (prc != QL_OK && rc == QL_OK) rc = prc;
  }
  if (rc == QL_OK) rc = ql_fold_parallel(&run->ctx, n, ql_fold_build_worker, &task, error);
  for (int64_t p = 0; p < n && rc == QL_OK; p++) rc = ql_fold_build_merge(&run->build, &task.tables[p], &run->mem, error);
  for (int64_t p = 0; p < n; p++) ql_fold_build_destroy(&task.tables[p], &run->mem);
  ql_fold_mem_free(&run->mem, tables, bytes);
  return rc;
}

static int ql_fold_run_build(struct ql_fold_run *run, struct ql_error *error) {
  const struct ql_execution_plan *child = &run->plan->children[run->plan->build_side];
  int64_t n = ql_fold_partition_count(child, error);
  if (n < 0) return ql_error_prefix(error, "qlink_fold: build input properties");
  const struct ql_executor *ex = run->ctx.executor;
  if (n > 1 && ex && ex->spawn && (!ex->parallelism || ex->parallelism(ex) > 1)) {
    QL_RETURN_NOT_OK(ql_fold_run_build_parallel(run, n, error));
  } else {
    for (int64_t p = 0; p < n; p++)
      QL_RETURN_NOT_OK(ql_fold_drain(run, run->plan->build_side, p, ql_fold_build_batch, NULL, error));
  }
  QL_RETURN_NOT_OK(ql_fold_build_finish(&run->build, &run->mem, error));
  atomic_fetch_add(&run->plan->build_rows, run->build.rows);
  return QL_OK;
}


/* ------------------------------------------------------------ dense kernel */

/* Not a qlink status: the dense kernel cannot take this input (a duplicate
 * or non-finite float cell, or statistics the data contradict); run the
 * hash path instead. */
#define QL_FOLD_FALLBACK 1000

struct ql_fold_gemm_fill {
  struct ql_fold_matrix *m;
  int64_t rows;
  struct ql_fold_side side;
  int32_t side_index;
};

static int ql_fold_gemm_batch(struct ql_fold_run *run, void *arg, const struct ArrowArray *batch,
                              struct ql_error *error) {
  struct ql_fold_gemm_fill *f = arg;
  const struct ql_fold_shared *p = run->plan;
  int s = f->side_index;
  QL_RETURN_NOT_OK(ql_fold_check_batch(run, s, batch, error));
  struct ql_fold_row row;
  for (int64_t r = 0; r < batch->length; r++) {
    if (!ql_fold_decode(&f->side, batch, r, &row)) continue;
    int64_t key = row.keys[0];
    if (key < p->gemm_kmin_side[s] || key > p->gemm_kmax_side[s]) return QL_FOLD_FALLBACK; /* statistics were wrong */
    if (key < p->gemm_kmin || key - p->gemm_kmin >= p->gemm_klen) continue;          /* cannot match the other side */
    int64_t g = 0;
    if (p->gemm_glen[s] > 0) {
      if (row.group_nulls & 1u) {
        g = p->gemm_glen[s]; /* the NULL group */
      } else {
        g = row.groups[0] - p->gemm_gmin[s];
        if (g < 0 || g >= p->gemm_glen[s]) return QL_FOLD_FALLBACK;
      }
    }
    int64_t k = key - p->gemm_kmin;
    int64_t iv = (int64_t)(uint64_t)row.ivalue; /* int64 products only on this path */
    int dup = s == 0 ? ql_fold_matrix_put(f->m, g, k, row.has_value, iv, row.fvalue)
                     : ql_fold_matrix_put(f->m, k, g, row.has_value, iv, row.fvalue);
    if (dup) return QL_FOLD_FALLBACK;
  }
  f->rows += batch->length;
  return QL_OK;
}

struct ql_fold_gemm_task {
  const struct ql_fold_matrix *a, *b;
  void *c;
  uint8_t *exist, *has;
  int64_t rows;
  atomic_llong next;
};

#define QL_FOLD_GEMM_ROWS 32

static int ql_fold_gemm_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct ql_fold_gemm_task *t = arg;
  for (;;) {
    int64_t from = atomic_fetch_add(&t->next, QL_FOLD_GEMM_ROWS);
    if (from >= t->rows) return QL_OK;
    int64_t to = from + QL_FOLD_GEMM_ROWS < t->rows ? from + QL_FOLD_GEMM_ROWS : t->rows;
    ql_fold_gemm_rows(t->a, t->b, t->c, t->exist, t->has, from, to);
  }
}

/* Run fn(arg) on this thread and up to parallelism - 1 executor workers. */
static int ql_fold_parallel(const struct ql_task_context *ctx, int64_t max_workers, int (*fn)(void *, struct ql_error *),
                            void *arg, struct ql_error *error) {
  const struct ql_executor *ex = ctx->executor;
  int64_t want = ex && ex->spawn ? (ex->parallelism ? ex->parallelism(ex) : 1) : 1;
  if (want > max_workers) want = max_workers;
  if (want > 64) want = 64;
  struct ql_job jobs[64];
  int32_t n_jobs = 0;
  for (int64_t j = 1; j < want; j++) {
    struct ql_error e;
    memset(&e, 0, sizeof(e));
    if (ex->spawn(ex, fn, arg, &jobs[n_jobs], &e) != QL_OK) {
      ql_error_release(&e);
      break; /* fewer workers is fine */
    }
    n_jobs++;
  }
  int rc = fn(arg, error);
  for (int32_t j = 0; j < n_jobs; j++) {
    struct ql_error e;
    memset(&e, 0, sizeof(e));
    int jrc = jobs[j].wait(&jobs[j], &e);
    if (jobs[j].release) jobs[j].release(&jobs[j]);
    if (jrc != QL_OK && rc == QL_OK) {
      rc = jrc;
      ql_error_move(error, &e);
    }
    ql_error_release(&e);
  }
  return rc;
}

static int ql_fold_drain_all(struct ql_fold_run *run, int side,
                             int (*fn)(struct ql_fold_run *, void *, const struct ArrowArray *, struct ql_error *),
                             void *arg, struct ql_error *error) {
  int64_t n = ql_fold_partition_count(&run->plan->children[side], error);
  if (n < 0) return ql_error_prefix(error, "qlink_fold: input %d properties", side);
  for (int64_t p = 0; p < n; p++) QL_RETURN_NOT_OK(ql_fold_drain(run, side, p, fn, arg, error));
  return QL_OK;
}

/* Turn C into groups of the result, row by row. */
static int ql_fold_gemm_groups(struct ql_fold_run *run, const struct ql_fold_gemm_task *t, int64_t n_cols,
                               struct ql_error *error) {
  const struct ql_fold_shared *p = run->plan;
  const struct ql_fold_spec *s = &p->spec;
  int64_t tuple[QL_FOLD_MAX_GROUPS];
  for (int64_t i = 0; i < t->rows; i++) {
    for (int64_t j = 0; j < n_cols; j++) {
      int64_t cell = i * n_cols + j;
      if (!t->exist[cell]) continue;
      uint32_t nulls = 0;
      for (int32_t g = 0; g < s->n_groups; g++) {
        int side = s->groups[g].side;
        int64_t idx = side == 0 ? i : j;
        if (idx == p->gemm_glen[side]) {
          tuple[g] = 0;
          nulls |= 1u << g;
        } else {
          tuple[g] = p->gemm_gmin[side] + idx;
        }
      }
      int64_t gi; /* each cell is its own group: no lookup needed */
      QL_RETURN_NOT_OK(ql_fold_group_append(&run->result, tuple, nulls, &gi, &run->mem, error));
      if (!t->has[cell]) continue;
      run->result.has[gi] = 1;
      if (run->result.is_float)
        QL_RETURN_NOT_OK(ql_fold_xsum_add(&run->result.acc_f[gi], ((const double *)t->c)[cell], &run->mem, error));
      else
        run->result.acc_i[gi] = (uint64_t)((const int64_t *)t->c)[cell];
    }
  }
  return QL_OK;
}

static int ql_fold_run_gemm(struct ql_fold_run *run, struct ql_error *error) {
  const struct ql_fold_shared *p = run->plan;
  int is_float = p->spec.value_type == QL_FOLD_FLOAT64;
  int64_t rows = p->gemm_glen[0] + (p->gemm_glen[0] > 0), cols = p->gemm_glen[1] + (p->gemm_glen[1] > 0);
  if (rows == 0) rows = 1;
  if (cols == 0) cols = 1;
  struct ql_fold_matrix a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  struct ql_fold_gemm_task task;
  memset(&task, 0, sizeof(task));
  void *c = NULL, *exist = NULL, *has = NULL;
  int64_t cells = rows * cols;
  int rc = ql_fold_matrix_init(&a, rows, p->gemm_klen, is_float, 0, &run->mem, error);
  if (rc == QL_OK) rc = ql_fold_matrix_init(&b, p->gemm_klen, cols, is_float, 1, &run->mem, error);
  if (rc == QL_OK) rc = ql_fold_mem_resize(&run->mem, &c, 0, cells * 8, error);
  if (rc == QL_OK) rc = ql_fold_mem_resize(&run->mem, &exist, 0, cells, error);
  if (rc == QL_OK) rc = ql_fold_mem_resize(&run->mem, &has, 0, cells, error);
  struct ql_fold_gemm_fill fill[2];
  for (int s = 0; s < 2; s++) {
    fill[s].m = s == 0 ? &a : &b;
    fill[s].rows = 0;
    fill[s].side_index = s;
    ql_fold_side_init(&p->spec, s, &fill[s].side);
    if (rc == QL_OK) rc = ql_fold_drain_all(run, s, ql_fold_gemm_batch, &fill[s], error);
  }
  if (rc == QL_OK) {
    task.a = &a;
    task.b = &b;
    task.c = c;
    task.exist = exist;
    task.has = has;
    task.rows = rows;
    rc = ql_fold_parallel(&run->ctx, (rows + QL_FOLD_GEMM_ROWS - 1) / QL_FOLD_GEMM_ROWS, ql_fold_gemm_worker, &task, error);
  }
  if (rc == QL_OK) rc = ql_fold_gemm_groups(run, &task, cols, error);
  ql_fold_matrix_destroy(&a, &run->mem);
  ql_fold_matrix_destroy(&b, &run->mem);
  ql_fold_mem_free(&run->mem, c, c ? cells * 8 : 0);
  ql_fold_mem_free(&run->mem, exist, exist ? cells : 0);
  ql_fold_mem_free(&run->mem, has, has ? cells : 0);
  if (rc == QL_OK) {
    atomic_fetch_add(&run->plan->dense_runs, 1);
    atomic_fetch_add(&run->plan->build_rows, fill[0].rows); /* left input */
    atomic_fetch_add(&run->plan->probe_rows, fill[1].rows); /* right input */
  }
  if (rc == QL_FOLD_FALLBACK) ql_fold_groups_destroy(&run->result, &run->mem); /* start over on the hash path */
  return rc;
}

static int64_t ql_fold_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int ql_fold_run_all(struct ql_fold_run *run, struct ql_error *error) {
  int64_t t0 = ql_fold_now_ns();
  int rc = run->plan->gemm ? ql_fold_run_gemm(run, error) : QL_FOLD_FALLBACK;
  if (rc == QL_FOLD_FALLBACK) {
    rc = ql_fold_build_init(&run->build, run->plan, 1, &run->mem, error);
    if (rc == QL_OK) rc = ql_fold_run_build(run, error);
    if (rc == QL_OK) rc = ql_fold_run_probe(run, error);
    /* The build table is not needed to emit. */
    ql_fold_build_destroy(&run->build, &run->mem);
  }
  atomic_fetch_add(&run->plan->elapsed_ns, ql_fold_now_ns() - t0);
  if (rc == QL_OK) atomic_fetch_add(&run->plan->groups, run->result.gmap.count);
  return rc;
}

/* ------------------------------------------------------------------- emit */

static int ql_fold_emit_key(const struct ql_fold_run *run, int32_t i, int64_t from, int64_t n, struct ArrowArray *out,
                            struct ql_error *error) {
  const struct ql_fold_groups *g = &run->result;
  int64_t width = ql_format_byte_width(run->plan->spec.groups[i].format);
  uint8_t *data = calloc((size_t)(n ? n : 1), (size_t)width);
  uint8_t *validity = NULL;
  int64_t nulls = 0;
  if (!data) return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
  for (int64_t r = 0; r < n; r++) {
    int64_t v = g->gmap.values[(from + r) * g->gmap.width + i];
    if ((g->gmap.nulls[from + r] >> i) & 1u) {
      if (!validity) {
        validity = malloc((size_t)(n / 8 + 1));
        if (!validity) {
          free(data);
          return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
        }
        memset(validity, 0xff, (size_t)(n / 8 + 1));
      }
      validity[r >> 3] &= (uint8_t) ~(1u << (r & 7));
      nulls++;
      continue;
    }
    /* Little-endian: the low `width` bytes of the int64 are the value. */
    memcpy(data + r * width, &v, (size_t)width);
  }
  return ql_array_init_fixed(out, n, nulls, validity, data, error);
}

static int ql_fold_emit_sum_column(const struct ql_fold_run *run, int64_t from, int64_t n, int empty_row,
                                   struct ArrowArray *out, struct ql_error *error) {
  const struct ql_fold_groups *g = &run->result;
  int is_decimal = run->plan->spec.value_type == QL_FOLD_DECIMAL128;
  size_t width = is_decimal ? 16 : 8;
  uint8_t *data = calloc((size_t)(n ? n : 1), width);
  uint8_t *validity = calloc((size_t)(n / 8 + 1), 1);
  if (!data || !validity) {
    free(data);
    free(validity);
    return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
  }
  int64_t nulls = 0;
  for (int64_t r = 0; r < n; r++) {
    if (empty_row || !g->has[from + r]) {
      nulls++;
      continue;
    }
    validity[r >> 3] |= (uint8_t)(1u << (r & 7));
    if (g->is_float) {
      double d = ql_fold_xsum_value(&g->acc_f[from + r]);
      memcpy(data + r * 8, &d, 8);
    } else if (is_decimal) {
      memcpy(data + r * 16, &g->acc_i[from + r], 16); /* little-endian two's complement */
    } else {
      uint64_t v = (uint64_t)g->acc_i[from + r]; /* the int64 sum: low 64 bits */
      memcpy(data + r * 8, &v, 8);
    }
  }
  if (nulls == 0) {
    free(validity);
    validity = NULL;
  }
  return ql_array_init_fixed(out, n, nulls, validity, data, error);
}

/* The next batch into `out` (released at the end). */
static int ql_fold_emit(struct ql_fold_run *run, struct ArrowArray *out, struct ql_error *error) {
  const struct ql_fold_spec *s = &run->plan->spec;
  int64_t total = run->result.gmap.count;
  int empty_row = 0;
  if (s->n_groups == 0 && total == 0) {
    /* No GROUP BY: one row, NULL without joined rows. */
    total = 1;
    empty_row = 1;
  }
  memset(out, 0, sizeof(*out));
  if (run->emitted >= total) return QL_OK;
  int64_t batch = run->ctx.batch_size > 0 ? run->ctx.batch_size : 8192;
  int64_t n = total - run->emitted < batch ? total - run->emitted : batch;
  QL_RETURN_NOT_OK(ql_array_init_struct(out, n, s->n_groups + 1, error));
  int rc = QL_OK;
  for (int32_t i = 0; i < s->n_groups && rc == QL_OK; i++) rc = ql_fold_emit_key(run, i, run->emitted, n, out->children[i], error);
  if (rc == QL_OK) rc = ql_fold_emit_sum_column(run, run->emitted, n, empty_row, out->children[s->n_groups], error);
  if (rc != QL_OK) {
    ql_array_release(out);
    return rc;
  }
  run->emitted += n;
  atomic_fetch_add(&run->plan->output_rows, n);
  return QL_OK;
}

/* ----------------------------------------------------------------- stream */

static void ql_fold_run_free(struct ql_fold_run *run) {
  ql_fold_groups_destroy(&run->result, &run->mem);
  ql_fold_mem_destroy(&run->mem);
  ql_fold_shared_unref(run->plan);
  free(run);
}

static int ql_fold_stream_get_schema(struct ArrowArrayStream *stream, struct ArrowSchema *out) {
  struct ql_fold_run *run = stream->private_data;
  struct ql_error error;
  memset(&error, 0, sizeof(error));
  int rc = ql_schema_copy(&run->plan->schema, out, &error);
  if (rc != QL_OK) snprintf(run->message, sizeof(run->message), "%s", ql_error_message(&error));
  ql_error_release(&error);
  return rc == QL_OK ? 0 : ql_status_to_errno(rc);
}

static int ql_fold_stream_get_next(struct ArrowArrayStream *stream, struct ArrowArray *out) {
  struct ql_fold_run *run = stream->private_data;
  if (run->status != QL_OK) return ql_status_to_errno(run->status);
  struct ql_error error;
  memset(&error, 0, sizeof(error));
  int rc = QL_OK;
  if (!run->done) {
    rc = ql_fold_run_all(run, &error);
    run->done = 1;
  }
  if (rc == QL_OK) rc = ql_fold_emit(run, out, &error);
  if (rc != QL_OK) {
    run->status = rc;
    snprintf(run->message, sizeof(run->message), "%s", ql_error_message(&error));
    /* Give the memory back at once: the stream is dead. */
    ql_fold_groups_destroy(&run->result, &run->mem);
  }
  ql_error_release(&error);
  return rc == QL_OK ? 0 : ql_status_to_errno(rc);
}

static const char *ql_fold_stream_get_last_error(struct ArrowArrayStream *stream) {
  struct ql_fold_run *run = stream->private_data;
  return run->message[0] ? run->message : NULL;
}

static void ql_fold_stream_release(struct ArrowArrayStream *stream) {
  if (!stream->release) return;
  ql_fold_run_free(stream->private_data);
  stream->release = NULL;
}

/* ------------------------------------------------------------------- plan */

static struct ql_fold_shared *ql_fold_of(const struct ql_execution_plan *self) { return self->private_data; }

static const char *ql_fold_name(const struct ql_execution_plan *self) {
  (void)self;
  return "FoldExec";
}

static const char *ql_fold_display(const struct ql_execution_plan *self) { return ql_fold_of(self)->display; }

static int ql_fold_get_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  return ql_schema_copy(&ql_fold_of(self)->schema, out, error);
}

static int ql_fold_get_properties(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                                  struct ql_error *error) {
  (void)self;
  (void)error;
  out->struct_size = sizeof(*out);
  out->boundedness = QL_BOUNDED;
  out->partition_count = 1;
  out->n_ordering = 0;
  out->ordering = NULL;
  return QL_OK;
}

static int64_t ql_fold_child_count(const struct ql_execution_plan *self) {
  (void)self;
  return 2;
}

static const struct ql_execution_plan *ql_fold_child(const struct ql_execution_plan *self, int64_t i) {
  return (i == 0 || i == 1) ? &ql_fold_of(self)->children[i] : NULL;
}

static int ql_fold_with_new_children(const struct ql_execution_plan *self, struct ql_execution_plan *children,
                                     int64_t n_children, struct ql_execution_plan *out, struct ql_error *error) {
  struct ql_fold_shared *s = ql_fold_of(self);
  if (n_children != 2) {
    for (int64_t i = 0; i < n_children; i++)
      if (children[i].release) children[i].release(&children[i]);
    return ql_error_set(error, QL_EINVAL, "FoldExec takes 2 children, got %lld", (long long)n_children);
  }
  /* New children must still have the columns the fold reads. */
  for (int k = 0; k < 2; k++) {
    int rc = ql_fold_check_child(&s->spec, k, &children[k], error);
    if (rc != QL_OK) {
      for (int j = 0; j < 2; j++)
        if (children[j].release) children[j].release(&children[j]);
      return rc;
    }
  }
  return ql_fold_exec_new(&s->spec, &s->schema, children, out, error);
}

static int ql_fold_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                           struct ArrowArrayStream *out, struct ql_error *error) {
  struct ql_fold_shared *s = ql_fold_of(self);
  if (partition != 0) return ql_error_set(error, QL_EINVAL, "FoldExec has 1 partition, asked for %lld", (long long)partition);
  if (!ctx) return ql_error_set(error, QL_EINVAL, "FoldExec: no task context");
  struct ql_fold_run *run = calloc(1, sizeof(*run));
  if (!run) return ql_error_set(error, QL_ENOMEM, "FoldExec: out of memory");
  run->ctx = *ctx;
  if (ctx->struct_size < sizeof(*ctx)) {
    /* An older, smaller context: keep only what it has. */
    memset((char *)&run->ctx + ctx->struct_size, 0, sizeof(*ctx) - ctx->struct_size);
  }
  const struct ql_memory_pool *pool = ctx->runtime_env ? ctx->runtime_env->memory_pool : NULL;
  int rc = ql_fold_mem_init(&run->mem, pool, "FoldExec", error);
  if (rc != QL_OK) {
    free(run);
    return rc;
  }
  atomic_fetch_add(&s->refs, 1);
  run->plan = s;
  ql_fold_side_init(&s->spec, 1 - s->build_side, &run->probe_side);
  /* Where each output group key is found while probing. */
  int32_t counts[2] = {0, 0};
  for (int32_t i = 0; i < s->spec.n_groups; i++) {
    int side = s->spec.groups[i].side;
    run->sources[i].from_build = side == s->build_side;
    run->sources[i].index = counts[side]++;
  }
  ql_fold_groups_init(&run->result, s->spec.n_groups, 0, s->spec.value_type == QL_FOLD_FLOAT64);
  memset(out, 0, sizeof(*out));
  out->get_schema = ql_fold_stream_get_schema;
  out->get_next = ql_fold_stream_get_next;
  out->get_last_error = ql_fold_stream_get_last_error;
  out->release = ql_fold_stream_release;
  out->private_data = run;
  return QL_OK;
}

static int ql_fold_get_metrics(const struct ql_execution_plan *self, struct ql_metrics *out, struct ql_error *error);

static void ql_fold_release(struct ql_execution_plan *self) {
  if (!self->release) return;
  ql_fold_shared_unref(self->private_data);
  self->release = NULL;
}

static void ql_fold_metrics_release(struct ql_metrics *m) {
  free(m->items);
  m->release = NULL;
}

static int ql_fold_get_metrics(const struct ql_execution_plan *self, struct ql_metrics *out, struct ql_error *error) {
  struct ql_fold_shared *s = ql_fold_of(self);
  enum { N = 6 };
  struct ql_metric *items = calloc(N, sizeof(*items));
  if (!items) return ql_error_set(error, QL_ENOMEM, "FoldExec: out of memory");
  /* dense_kernel_runs: executions that finished on the dense kernel (the
   * others fell back to, or started on, the hash path). */
  const char *names[N] = {"output_rows", "build_rows", "probe_rows", "groups", "elapsed_compute", "dense_kernel_runs"};
  int32_t kinds[N] = {QL_METRIC_COUNT, QL_METRIC_COUNT, QL_METRIC_COUNT,
                      QL_METRIC_COUNT, QL_METRIC_TIME_NS, QL_METRIC_COUNT};
  int64_t values[N] = {atomic_load(&s->output_rows), atomic_load(&s->build_rows), atomic_load(&s->probe_rows),
                       atomic_load(&s->groups),      atomic_load(&s->elapsed_ns), atomic_load(&s->dense_runs)};
  for (int i = 0; i < N; i++) {
    items[i].name = names[i];
    items[i].kind = kinds[i];
    items[i].partition = -1;
    items[i].value = values[i];
  }
  out->count = N;
  out->items = items;
  out->release = ql_fold_metrics_release;
  out->private_data = NULL;
  return QL_OK;
}

/* ------------------------------------------------------------ construction */

int ql_fold_check_child(const struct ql_fold_spec *spec, int side, const struct ql_execution_plan *child,
                        struct ql_error *error) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  QL_RETURN_NOT_OK(child->get_schema(child, &schema, error));
  const struct ql_fold_operand *ops[QL_FOLD_MAX_KEYS + QL_FOLD_MAX_GROUPS + 1];
  int n = 0;
  for (int32_t i = 0; i < spec->n_keys; i++) ops[n++] = &spec->keys[side][i];
  for (int32_t i = 0; i < spec->n_groups; i++)
    if (spec->groups[i].side == side) ops[n++] = &spec->groups[i];
  ops[n++] = &spec->values[side];
  int rc = QL_OK;
  for (int i = 0; i < n && rc == QL_OK; i++) {
    const struct ql_fold_operand *op = ops[i];
    if (op->column >= schema.n_children || !schema.children[op->column]->format ||
        schema.children[op->column]->dictionary ||
        ql_fold_format_storage(schema.children[op->column]->format) != op->storage)
      rc = ql_error_set(error, QL_EINVAL, "qlink_fold: input %d column %d (%s) is not of the planned type", side,
                        op->column, op->name);
  }
  ql_schema_release(&schema);
  return rc;
}

static int64_t ql_fold_stat_rows(const struct ql_execution_plan *child) {
  if (!child->get_statistics) return -1;
  struct ql_statistics st;
  memset(&st, 0, sizeof(st));
  if (child->get_statistics(child, -1, &st, NULL) != QL_OK) return -1;
  int64_t rows = st.num_rows_precision != QL_PRECISION_ABSENT ? st.num_rows : -1;
  if (st.release) st.release(&st);
  return rows;
}

/* A single integer join key whose exact statistics say it takes every value
 * of [min, max] (distinct count = max - min + 1): index it densely. */
static void ql_fold_choose_dense(struct ql_fold_shared *s) {
  const struct ql_execution_plan *child = &s->children[s->build_side];
  const struct ql_fold_operand *key = &s->spec.keys[s->build_side][0];
  if (s->spec.n_keys != 1 || !child->get_statistics || key->storage == QL_FOLD_U64) return;
  struct ql_statistics st;
  memset(&st, 0, sizeof(st));
  if (child->get_statistics(child, -1, &st, NULL) != QL_OK) return;
  if (key->column < st.n_columns && st.columns) {
    const struct ql_column_statistics *c = &st.columns[key->column];
    if (c->min_max_precision == QL_PRECISION_EXACT && c->distinct_count_precision == QL_PRECISION_EXACT &&
        !c->min.is_null && !c->max.is_null && c->min.format && ql_fold_format_storage(c->min.format) == key->storage) {
      int64_t lo = c->min.value.i64, hi = c->max.value.i64;
      /* Bounded so the head arrays stay proportionate (16 bytes per key). */
      if (hi >= lo && (uint64_t)hi - (uint64_t)lo < (UINT64_C(1) << 26) && hi - lo + 1 == c->distinct_count) {
        s->dense = 1;
        s->dense_min = lo;
        s->dense_len = hi - lo + 1;
      }
    }
  }
  if (st.release) st.release(&st);
}


/* Exact min, max and distinct count of an integer column, from statistics. */
static int ql_fold_column_range(const struct ql_statistics *st, const struct ql_fold_operand *op, int64_t *lo,
                                int64_t *hi, int64_t *distinct) {
  if (!st->columns || op->column >= st->n_columns || op->storage == QL_FOLD_U64) return 0;
  const struct ql_column_statistics *c = &st->columns[op->column];
  if (c->min_max_precision != QL_PRECISION_EXACT || c->distinct_count_precision != QL_PRECISION_EXACT) return 0;
  if (c->min.is_null || c->max.is_null || !c->min.format || ql_fold_format_storage(c->min.format) != op->storage)
    return 0;
  *lo = c->min.value.i64;
  *hi = c->max.value.i64;
  *distinct = c->distinct_count;
  return *hi >= *lo && (uint64_t)*hi - (uint64_t)*lo < (UINT64_C(1) << 40);
}

/* The dense kernel applies when one join key and at most one group key per
 * side are integers whose statistics describe full ranges, and the matrices
 * are not much larger than the inputs (so they are truly dense). */
static void ql_fold_choose_gemm(struct ql_fold_shared *s) {
  const struct ql_fold_spec *p = &s->spec;
  if (p->n_keys != 1 || (p->product != QL_FOLD_S64 && p->product != QL_FOLD_F64)) return;
  struct ql_fold_side sides[2];
  struct ql_statistics st[2];
  memset(st, 0, sizeof(st));
  int ok = 1;
  for (int k = 0; k < 2 && ok; k++) {
    ql_fold_side_init(p, k, &sides[k]);
    const struct ql_execution_plan *c = &s->children[k];
    ok = sides[k].n_groups <= 1 && c->get_statistics && c->get_statistics(c, -1, &st[k], NULL) == QL_OK &&
         st[k].num_rows_precision == QL_PRECISION_EXACT;
  }
  int64_t klo[2], khi[2], kd[2], cells = 1;
  int full_key = 0;
  for (int k = 0; k < 2 && ok; k++) {
    ok = ql_fold_column_range(&st[k], sides[k].keys[0], &klo[k], &khi[k], &kd[k]);
    full_key |= ok && kd[k] == khi[k] - klo[k] + 1;
    s->gemm_glen[k] = 0;
    if (ok && sides[k].n_groups == 1) {
      int64_t lo, hi, d;
      ok = ql_fold_column_range(&st[k], sides[k].groups[0], &lo, &hi, &d) && d == hi - lo + 1;
      s->gemm_gmin[k] = lo;
      s->gemm_glen[k] = hi - lo + 1;
    }
  }
  if (ok && full_key) {
    int64_t lo = klo[0] > klo[1] ? klo[0] : klo[1], hi = khi[0] < khi[1] ? khi[0] : khi[1];
    int64_t K = hi - lo + 1;
    int64_t M = s->gemm_glen[0] + 1, N = s->gemm_glen[1] + 1;
    cells = M * K + K * N + M * N;
    if (K >= 1 && M <= (1 << 24) && N <= (1 << 24) && K <= (1 << 24) && cells <= (INT64_C(1) << 26) &&
        M * K <= 4 * st[0].num_rows + 1024 && K * N <= 4 * st[1].num_rows + 1024) {
      s->gemm = 1;
      s->gemm_kmin = lo;
      s->gemm_klen = K;
      for (int k = 0; k < 2; k++) {
        s->gemm_kmin_side[k] = klo[k];
        s->gemm_kmax_side[k] = khi[k];
      }
    }
  }
  for (int k = 0; k < 2; k++)
    if (st[k].release) st[k].release(&st[k]);
}

static void ql_fold_append(char *buf, size_t cap, const char *fmt, const char *a, const char *b) {
  size_t len = strlen(buf);
  if (len < cap) snprintf(buf + len, cap - len, fmt, a, b);
}

static void ql_fold_describe(struct ql_fold_shared *s) {
  const struct ql_fold_spec *p = &s->spec;
  char *d = s->display;
  size_t cap = sizeof(s->display);
  d[0] = 0;
  ql_fold_append(d, cap, "%s%s", "on=[", "");
  for (int32_t i = 0; i < p->n_keys; i++) {
    ql_fold_append(d, cap, "%s%s", i ? ", " : "", p->keys[0][i].name);
    ql_fold_append(d, cap, "%s%s", " = ", p->keys[1][i].name);
  }
  ql_fold_append(d, cap, "%s%s", "], by=[", "");
  for (int32_t i = 0; i < p->n_groups; i++) ql_fold_append(d, cap, "%s%s", i ? ", " : "", p->groups[i].name);
  ql_fold_append(d, cap, "], sum=%s * %s", p->values[0].name, p->values[1].name);
  if (s->gemm) ql_fold_append(d, cap, ", kernel=%s%s", "dense", "");
  else ql_fold_append(d, cap, ", build=%s%s", s->build_side ? "right" : "left", s->dense ? ", dense keys" : "");
}

int ql_fold_exec_new(const struct ql_fold_spec *spec, const struct ArrowSchema *schema,
                     struct ql_execution_plan *children, struct ql_execution_plan *out, struct ql_error *error) {
  struct ql_fold_shared *s = calloc(1, sizeof(*s));
  int rc = QL_OK;
  if (!s) rc = ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory");
  if (rc == QL_OK) {
    atomic_init(&s->refs, 1);
    s->spec = *spec;
    for (int k = 0; k < 2; k++) {
      s->children[k] = children[k];
      children[k].release = NULL;
    }
    rc = ql_schema_copy(schema, &s->schema, error);
    if (rc != QL_OK) ql_fold_shared_unref(s);
  } else {
    for (int k = 0; k < 2; k++)
      if (children[k].release) children[k].release(&children[k]);
  }
  if (rc != QL_OK) return rc;
  /* Build on the smaller input (by statistics); the right one when unknown. */
  int64_t rows0 = ql_fold_stat_rows(&s->children[0]), rows1 = ql_fold_stat_rows(&s->children[1]);
  s->build_side = (rows0 >= 0 && rows1 >= 0 && rows0 < rows1) ? 0 : 1;
  ql_fold_choose_dense(s);
  ql_fold_choose_gemm(s);
  ql_fold_describe(s);
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->name = ql_fold_name;
  out->display = ql_fold_display;
  out->get_schema = ql_fold_get_schema;
  out->get_properties = ql_fold_get_properties;
  out->child_count = ql_fold_child_count;
  out->child = ql_fold_child;
  out->with_new_children = ql_fold_with_new_children;
  out->execute = ql_fold_execute;
  out->get_statistics = NULL;
  out->get_metrics = ql_fold_get_metrics;
  out->release = ql_fold_release;
  out->private_data = s;
  return QL_OK;
}
