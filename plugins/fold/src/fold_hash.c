/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the hash path: build table, group tables, probe (see fold_internal.h, fold_exec.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_internal.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

static int fd_grow(struct fd_mem *mem, void **p, int64_t old_n, int64_t new_n, int64_t size,
                        struct ql_error *error) {
  return fd_mem_resize(mem, p, old_n * size, new_n * size, error);
}

void fd_build_destroy(struct fd_build *b, struct fd_mem *mem) {
  fd_keys_destroy(&b->bgmap, mem);
  fd_mem_free(mem, b->e_bgid, b->bgid_bytes);
  fd_keys_destroy(&b->kmap, mem);
  fd_keys_destroy(&b->emap, mem);
  fd_mem_free(mem, b->head, b->heads_cap * 8);
  fd_mem_free(mem, b->tail, b->heads_cap * 8);
  fd_mem_free(mem, b->e_next, b->cap * 8);
  fd_mem_free(mem, b->e_groups, b->cap * b->side.n_groups * 8);
  fd_mem_free(mem, b->e_group_nulls, b->cap * 4);
  fd_mem_free(mem, b->e_ivalue, b->cap * 16);
  fd_mem_free(mem, b->e_fvalue, b->cap * 8);
  fd_mem_free(mem, b->e_has, b->cap);
}

static int fd_build_heads(struct fd_build *b, int64_t need, struct fd_mem *mem, struct ql_error *error) {
  if (need > b->heads_cap) {
    int64_t cap = b->heads_cap ? b->heads_cap : 16;
    while (cap < need) cap *= 2;
    void *h = b->head, *t = b->tail;
    QL_RETURN_NOT_OK(fd_grow(mem, &h, b->heads_cap, cap, 8, error));
    b->head = h;
    int rc = fd_grow(mem, &t, b->heads_cap, cap, 8, error);
    if (rc != QL_OK) {
      if (fd_grow(mem, &h, cap, b->heads_cap, 8, NULL) == QL_OK) b->head = h;
      return rc;
    }
    b->tail = t;
    b->heads_cap = cap;
  }
  for (int64_t i = b->n_heads; i < need; i++) b->head[i] = b->tail[i] = -1;
  if (need > b->n_heads) b->n_heads = need;
  return QL_OK;
}

/* The build table of run->build_side. A single integer join key whose
 * values read span a range not much larger than the rows indexes its heads
 * directly (key - min) instead of hashing. */
static int fd_build_init(struct fd_build *b, struct fd_run *run, struct ql_error *error) {
  const struct fd_shared *plan = run->plan;
  const struct fd_input *in = &run->in[run->build_side];
  memset(b, 0, sizeof(*b));
  b->plan = plan;
  b->side = in->side;
  /* Pre-aggregating is exact only when the product is the sum's own int64
   * ring: x * (y1 + y2) = x * y1 + x * y2 (mod 2^64). */
  b->merge = plan->spec.product == FD_S64;
  fd_keys_init(&b->kmap, plan->spec.n_keys);
  fd_keys_init(&b->emap, plan->spec.n_keys + b->side.n_groups);
  fd_keys_init(&b->bgmap, b->side.n_groups);
  int64_t lo, hi;
  int nulls;
  if (plan->spec.n_keys == 1 && b->side.keys[0]->storage != FD_U64 && fd_input_range(in, 0, 0, &lo, &hi, &nulls) &&
      (uint64_t)hi - (uint64_t)lo < 2 * (uint64_t)in->rows + 1024) {
    b->dense = 1;
    b->dense_min = lo;
    b->dense_len = hi - lo + 1;
    atomic_fetch_add(&run->plan->dense_index_runs, 1);
    return fd_build_heads(b, b->dense_len, &run->mem, error);
  }
  return QL_OK;
}

/* Index of a join key among the heads: key - min inside the dense range,
 * else dense_len + its number in kmap. -1 when absent and not inserting. */
static int fd_key_index(struct fd_build *b, const int64_t *keys, int insert, int64_t *out,
                             struct fd_mem *mem, struct ql_error *error) {
  if (b->dense && (uint64_t)keys[0] - (uint64_t)b->dense_min < (uint64_t)b->dense_len) {
    *out = keys[0] - b->dense_min;
    return QL_OK;
  }
  int64_t base = b->dense ? b->dense_len : 0;
  uint64_t h = fd_keys_hash(keys, 0, b->kmap.width);
  if (!insert) {
    int64_t n = fd_keys_find(&b->kmap, keys, 0, h);
    *out = n < 0 ? -1 : base + n;
    return QL_OK;
  }
  int64_t n;
  int added;
  QL_RETURN_NOT_OK(fd_keys_insert(&b->kmap, keys, 0, h, &n, &added, mem, error));
  if (added) QL_RETURN_NOT_OK(fd_build_heads(b, base + n + 1, mem, error));
  *out = base + n;
  return QL_OK;
}

static int fd_build_entries(struct fd_build *b, struct fd_mem *mem, struct ql_error *error) {
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
    int rc = fd_grow(mem, &p, b->cap, cap, sizes[k], error);
    if (rc != QL_OK) {
      for (int j = 0; j < k; j++) {
        void *q = *arrays[j];
        if (fd_grow(mem, &q, cap, b->cap, sizes[j], NULL) == QL_OK) *arrays[j] = q;
      }
      return rc;
    }
    *arrays[k] = p;
  }
  b->cap = cap;
  return QL_OK;
}

static int fd_build_add(struct fd_build *b, const struct fd_row *row, struct fd_mem *mem,
                             struct ql_error *error) {
  int64_t k;
  QL_RETURN_NOT_OK(fd_key_index(b, row->keys, 1, &k, mem, error));
  int32_t nk = b->plan->spec.n_keys, ng = b->side.n_groups;
  int64_t e;
  if (b->merge) {
    int64_t tuple[FD_MAX_KEYS + FD_MAX_GROUPS];
    memcpy(tuple, row->keys, (size_t)nk * 8);
    memcpy(tuple + nk, row->groups, (size_t)ng * 8);
    uint32_t nulls = row->group_nulls << nk;
    int added;
    uint64_t h = fd_keys_hash(tuple, nulls, nk + ng);
    QL_RETURN_NOT_OK(fd_build_entries(b, mem, error)); /* room for a possible new entry */
    QL_RETURN_NOT_OK(fd_keys_insert(&b->emap, tuple, nulls, h, &e, &added, mem, error));
    if (!added) {
      if (row->has_value) {
        b->e_ivalue[e] += row->ivalue;
        b->e_has[e] = 1;
      }
      return QL_OK;
    }
  } else {
    QL_RETURN_NOT_OK(fd_build_entries(b, mem, error));
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

/* Make each key's entries contiguous, in key order: afterwards key k's
 * entries are [head[k], tail[k]). The probe then reads them from one place
 * instead of chasing a chain across the table (cache misses on large
 * builds). */
static int fd_build_contiguous(struct fd_build *b, struct fd_mem *mem, struct ql_error *error) {
  int64_t cap = b->cap, ng = b->side.n_groups;
  int64_t sizes[5] = {cap * ng * 8, cap * 4, cap * 16, cap * 8, cap};
  void *p[5] = {NULL, NULL, NULL, NULL, NULL};
  int rc = QL_OK;
  for (int i = 0; i < 5 && rc == QL_OK; i++) rc = fd_mem_alloc(mem, &p[i], sizes[i], error);
  if (rc != QL_OK) {
    for (int i = 0; i < 5; i++) fd_mem_free(mem, p[i], sizes[i]);
    return rc;
  }
  int64_t *groups = p[0];
  uint32_t *group_nulls = p[1];
  fd_u128 *ivalue = p[2];
  double *fvalue = p[3];
  uint8_t *has = p[4];
  int64_t at = 0;
  for (int64_t k = 0; k < b->n_heads; k++) {
    int64_t start = at;
    for (int64_t e = b->head[k]; e >= 0; e = b->e_next[e], at++) {
      if (ng) memcpy(groups + at * ng, b->e_groups + e * ng, (size_t)ng * 8);
      group_nulls[at] = b->e_group_nulls[e];
      ivalue[at] = b->e_ivalue[e];
      fvalue[at] = b->e_fvalue[e];
      has[at] = b->e_has[e];
    }
    b->head[k] = start;
    b->tail[k] = at;
  }
  fd_mem_free(mem, b->e_groups, sizes[0]);
  fd_mem_free(mem, b->e_group_nulls, sizes[1]);
  fd_mem_free(mem, b->e_ivalue, sizes[2]);
  fd_mem_free(mem, b->e_fvalue, sizes[3]);
  fd_mem_free(mem, b->e_has, sizes[4]);
  b->e_groups = groups;
  b->e_group_nulls = group_nulls;
  b->e_ivalue = ivalue;
  b->e_fvalue = fvalue;
  b->e_has = has;
  return QL_OK;
}

/* Entries made contiguous per key, then the build-side group tuples
 * numbered (see e_bgid). */
static int fd_build_finish(struct fd_build *b, struct fd_mem *mem, struct ql_error *error) {
  QL_RETURN_NOT_OK(fd_build_contiguous(b, mem, error));
  void *p = NULL;
  QL_RETURN_NOT_OK(fd_mem_resize(mem, &p, 0, b->n_entries * 8, error));
  b->e_bgid = p;
  b->bgid_bytes = b->n_entries * 8;
  int32_t ng = b->side.n_groups;
  for (int64_t e = 0; e < b->n_entries; e++) {
    const int64_t *g = b->e_groups + e * ng;
    int added;
    uint64_t h = fd_keys_hash(g, b->e_group_nulls[e], ng);
    QL_RETURN_NOT_OK(fd_keys_insert(&b->bgmap, g, b->e_group_nulls[e], h, &b->e_bgid[e], &added, mem, error));
    if (b->bgmap.count > FD_MAX_BGIDS) return QL_OK; /* too many: the probe hashes tuples */
  }
  return QL_OK;
}

void fd_groups_init(struct fd_groups *g, int32_t width, int32_t probe_width, int32_t is_float) {
  memset(g, 0, sizeof(*g));
  fd_keys_init(&g->gmap, width);
  fd_keys_init(&g->pmap, probe_width);
  g->is_float = is_float;
}

void fd_groups_destroy(struct fd_groups *g, struct fd_mem *mem) {
  if (g->acc_f)
    for (int64_t i = 0; i < g->gmap.count; i++) fd_xsum_clear(&g->acc_f[i], mem);
  fd_keys_destroy(&g->gmap, mem);
  fd_keys_destroy(&g->pmap, mem);
  fd_mem_free(mem, g->cells, g->n_cells * 8);
  fd_mem_free(mem, g->acc_i, g->cap * 16);
  fd_mem_free(mem, g->acc_f, g->cap * (int64_t)sizeof(struct fd_xsum));
  fd_mem_free(mem, g->final_f, g->cap * 8);
  fd_mem_free(mem, g->has, g->cap);
  fd_groups_init(g, g->gmap.width, g->pmap.width, g->is_float);
}

int fd_groups_alloc(struct fd_groups *g, int64_t count, int final, struct fd_mem *mem,
                         struct ql_error *error) {
  int64_t width = g->gmap.width;
  int64_t acc = !g->is_float ? 16 : final ? 8 : (int64_t)sizeof(struct fd_xsum);
  int64_t sizes[4] = {count * width * 8, count * 4, count, count * acc};
  void *p[4] = {NULL, NULL, NULL, NULL};
  int rc = QL_OK;
  for (int i = 0; i < 4 && rc == QL_OK; i++) rc = fd_mem_alloc(mem, &p[i], sizes[i], error);
  if (rc != QL_OK) {
    for (int i = 0; i < 4; i++) fd_mem_free(mem, p[i], sizes[i]);
    return rc;
  }
  g->gmap.values = p[0];
  g->gmap.nulls = p[1];
  g->gmap.capacity = count;
  g->has = p[2];
  if (!g->is_float) g->acc_i = p[3];
  else if (final) g->final_f = p[3];
  else g->acc_f = p[3];
  g->cap = count;
  return QL_OK;
}

/* Room in the accumulators for one more group. */
static int fd_groups_reserve(struct fd_groups *g, struct fd_mem *mem, struct ql_error *error) {
  if (g->gmap.count < g->cap) return QL_OK;
  int64_t cap = g->cap ? g->cap * 2 : 64;
  void *p = g->is_float ? (void *)g->acc_f : (void *)g->acc_i;
  int64_t size = g->is_float ? (int64_t)sizeof(struct fd_xsum) : 16;
  QL_RETURN_NOT_OK(fd_grow(mem, &p, g->cap, cap, size, error));
  if (g->is_float) g->acc_f = p;
  else g->acc_i = p;
  void *hp = g->has;
  int rc = fd_grow(mem, &hp, g->cap, cap, 1, error);
  if (rc != QL_OK) {
    if (fd_grow(mem, &p, cap, g->cap, size, NULL) == QL_OK) {
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
static int fd_group(struct fd_groups *g, const int64_t *tuple, uint32_t nulls, int64_t *out,
                         struct fd_mem *mem, struct ql_error *error) {
  QL_RETURN_NOT_OK(fd_keys_index(&g->gmap, mem, error));
  uint64_t h = fd_keys_hash(tuple, nulls, g->gmap.width);
  int64_t n = fd_keys_find(&g->gmap, tuple, nulls, h);
  if (n >= 0) {
    *out = n;
    return QL_OK;
  }
  QL_RETURN_NOT_OK(fd_groups_reserve(g, mem, error));
  int added;
  return fd_keys_insert(&g->gmap, tuple, nulls, h, out, &added, mem, error);
}

/* A group the caller knows is new (not indexed until needed). */
static int fd_group_append(struct fd_groups *g, const int64_t *tuple, uint32_t nulls, int64_t *out,
                                struct fd_mem *mem, struct ql_error *error) {
  QL_RETURN_NOT_OK(fd_groups_reserve(g, mem, error));
  return fd_keys_append(&g->gmap, tuple, nulls, out, mem, error);
}

/* dst += src, group by group, in src's order. */
static int fd_groups_merge(struct fd_groups *dst, const struct fd_groups *src, struct fd_mem *mem,
                                struct ql_error *error) {
  int32_t w = src->gmap.width;
  for (int64_t i = 0; i < src->gmap.count; i++) {
    int64_t d;
    QL_RETURN_NOT_OK(fd_group(dst, src->gmap.values + i * w, src->gmap.nulls[i], &d, mem, error));
    if (!src->has[i]) continue;
    dst->has[d] = 1;
    if (dst->is_float) QL_RETURN_NOT_OK(fd_xsum_merge(&dst->acc_f[d], &src->acc_f[i], mem, error));
    else dst->acc_i[d] += src->acc_i[i];
  }
  return QL_OK;
}

/* The probe's tasks: with buckets, task t probes every row whose probe-side
 * group tuple hashes to bucket t, so the tasks' groups are disjoint and
 * their tables are concatenated; without (the probe side has no group
 * key), task t probes partition t and the tables are merged in partition
 * order. Either way the result does not depend on which worker ran which
 * task. */
struct fd_probe_task {
  struct fd_run *run;
  struct fd_groups *tables; /* one per task */
  int64_t n_tasks;
  int32_t by_bucket;
  atomic_llong next;
  atomic_int failed;
};

/* The group of probe row `row` joined with build entry `e`, by hashing the
 * whole group tuple. */
static int fd_probe_group(struct fd_run *run, struct fd_groups *g, const struct fd_row *row,
                               int64_t e, int is_new, int64_t *out, struct ql_error *error) {
  const struct fd_build *b = &run->build;
  const struct fd_spec *s = &run->plan->spec;
  int32_t ng = b->side.n_groups;
  int64_t tuple[FD_MAX_GROUPS];
  uint32_t nulls = 0;
  for (int32_t i = 0; i < s->n_groups; i++) {
    const struct fd_group_source *src = &run->sources[i];
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
  if (is_new) return fd_group_append(g, tuple, nulls, out, &run->mem, error);
  return fd_group(g, tuple, nulls, out, &run->mem, error);
}

/* The number of the probe row's group tuple in g->pmap, with its row of
 * cells (n_bgids wide) allocated. */
static int fd_probe_number(struct fd_run *run, struct fd_groups *g, const struct fd_row *row,
                                uint64_t h, int64_t *out, struct ql_error *error) {
  int64_t nb = run->build.bgmap.count;
  int added;
  QL_RETURN_NOT_OK(fd_keys_insert(&g->pmap, row->groups, row->group_nulls, h, out, &added, &run->mem, error));
  if ((*out + 1) * nb > g->n_cells) {
    int64_t n = g->n_cells ? g->n_cells * 2 : 64 * nb;
    while (n < (*out + 1) * nb) n *= 2;
    void *p = g->cells;
    QL_RETURN_NOT_OK(fd_mem_resize(&run->mem, &p, g->n_cells * 8, n * 8, error));
    g->cells = p;
    g->n_cells = n;
  }
  return QL_OK;
}

/* x * y as DataFusion computes it at the product's width (wrapping), then
 * widened for the sum (as an unsigned bit pattern for wrapping adds). */
static inline fd_u128 fd_int_product(int32_t product, fd_u128 x, fd_u128 y) {
  uint64_t p = (uint64_t)x * (uint64_t)y;
  switch (product) {
    case FD_S8: return (uint64_t)(int64_t)(int8_t)(uint8_t)p;
    case FD_S16: return (uint64_t)(int64_t)(int16_t)(uint16_t)p;
    case FD_S32: return (uint64_t)(int64_t)(int32_t)(uint32_t)p;
    default: return p;
  }
}

/* The bucket of a probe group tuple's hash among n: from the high 32 bits
 * (the low ones pick hash slots, and one bucket's tuples must not crowd a
 * few slots), by multiplication rather than a division per row. */
static int64_t fd_bucket(uint64_t h, int64_t n) { return (int64_t)(((h >> 32) * (uint64_t)n) >> 32); }

/* Probe the rows of one decoded block of the probe side into g: all of
 * them, or with n_buckets > 1 those of bucket `bucket`. */
static int fd_probe_block(struct fd_run *run, struct fd_groups *g, const struct fd_block *blk,
                               int64_t bucket, int64_t n_buckets, struct ql_error *error) {
  struct fd_build *b = &run->build;
  const struct fd_input *in = &run->in[1 - run->build_side];
  int32_t width = in->side.n_groups;
  int64_t nb = b->bgmap.count;
  int by_cells = nb > 0 && nb <= FD_MAX_BGIDS;
  int32_t product = run->plan->spec.product;
  const struct fd_pdirect *pd = &run->pdirect;
  int64_t base = 0;
  if (pd->on) {
    /* Bucket b owns the numbers v with floor(v n / len) = b, which are
     * [ceil(b len / n), ceil((b + 1) len / n)). */
    base = (bucket * pd->len + n_buckets - 1) / n_buckets;
    int64_t cells = (((bucket + 1) * pd->len + n_buckets - 1) / n_buckets - base) * nb;
    if (by_cells && g->n_cells < cells) {
      void *p = g->cells;
      QL_RETURN_NOT_OK(fd_mem_resize(&run->mem, &p, g->n_cells * 8, cells * 8, error));
      g->cells = p;
      g->n_cells = cells;
    }
  }
  struct fd_row row;
  for (int64_t r = 0; r < blk->n; r++) {
    fd_block_row(in, blk, r, &row);
    int64_t pg = 0;
    uint64_t ph = 0;
    if (pd->on) {
      /* The probe group's number is its value's place in the range. */
      int64_t v = (row.group_nulls & 1u) ? pd->len - 1 : row.groups[0] - pd->min;
      if (n_buckets > 1 && v * n_buckets / pd->len != bucket) continue;
      pg = v - base;
    } else {
      ph = (by_cells || n_buckets > 1) ? fd_keys_hash(row.groups, row.group_nulls, width) : 0;
      if (n_buckets > 1 && fd_bucket(ph, n_buckets) != bucket) continue;
    }
    int64_t k;
    QL_RETURN_NOT_OK(fd_key_index(b, row.keys, 0, &k, &run->mem, error));
    if (k < 0 || b->head[k] == b->tail[k]) continue;
    if (by_cells && !pd->on) QL_RETURN_NOT_OK(fd_probe_number(run, g, &row, ph, &pg, error));
    for (int64_t e = b->head[k]; e < b->tail[k]; e++) {
      int64_t gi;
      if (by_cells) {
        int64_t *cell = &g->cells[pg * nb + b->e_bgid[e]];
        if (*cell == 0) {
          /* (probe tuple, build tuple) is new: so is the group. */
          QL_RETURN_NOT_OK(fd_probe_group(run, g, &row, e, 1, &gi, error));
          *cell = gi + 1;
        }
        gi = *cell - 1;
      } else {
        QL_RETURN_NOT_OK(fd_probe_group(run, g, &row, e, 0, &gi, error));
      }
      if (!row.has_value || !b->e_has[e]) continue;
      g->has[gi] = 1;
      if (g->is_float) {
        double prod = row.fvalue * b->e_fvalue[e];
        if (product == FD_F32) prod = (double)((float)row.fvalue * (float)b->e_fvalue[e]);
        QL_RETURN_NOT_OK(fd_xsum_add_fast(&g->acc_f[gi], prod, &run->mem, error));
      } else {
        if (product == FD_D128) {
          /* arrow multiplies decimals with mul_checked: an overflow fails the query. */
          __int128 p;
          if (__builtin_mul_overflow((__int128)row.ivalue, (__int128)b->e_ivalue[e], &p))
            return ql_error_set(error, QL_EOVERFLOW, "qlink_fold: arithmetic overflow multiplying decimal values of %s and %s",
                                run->plan->spec.values[0].name, run->plan->spec.values[1].name);
          g->acc_i[gi] += (fd_u128)p;
        } else {
          g->acc_i[gi] += fd_int_product(product, row.ivalue, b->e_ivalue[e]);
        }
      }
    }
  }
  return QL_OK;
}

/* A worker: probe tasks taken from a shared counter until none is left. */
static int fd_probe_task_run(struct fd_probe_task *t, int64_t task, struct fd_block *blk,
                                  struct ql_error *error) {
  struct fd_run *run = t->run;
  const struct fd_input *in = &run->in[1 - run->build_side];
  int64_t from = t->by_bucket ? 0 : task, to = t->by_bucket ? in->n_parts : task + 1;
  for (int64_t p = from; p < to; p++) {
    const struct fd_part *part = &in->parts[p];
    for (int64_t c = 0; c < part->n_chunks; c++) {
      const struct fd_chunk *chunk = part->chunks[c];
      for (int64_t row = 0; row < chunk->batch.length; row += FD_BLOCK) {
        fd_block_decode(in, chunk, row, blk);
        QL_RETURN_NOT_OK(fd_probe_block(run, &t->tables[task], blk, t->by_bucket ? task : 0,
                                             t->by_bucket ? t->n_tasks : 1, error));
      }
    }
  }
  return QL_OK;
}

static int fd_probe_worker(void *arg, struct ql_error *error) {
  struct fd_probe_task *t = arg;
  struct fd_block *blk = NULL;
  int rc = fd_block_new(&t->run->mem, &blk, error);
  while (rc == QL_OK && !atomic_load(&t->failed)) {
    int64_t task = atomic_fetch_add(&t->next, 1);
    if (task >= t->n_tasks) break;
    rc = fd_probe_task_run(t, task, blk, error);
  }
  if (rc != QL_OK) atomic_store(&t->failed, 1);
  if (blk) fd_mem_free(&t->run->mem, blk, (int64_t)sizeof(*blk));
  return rc;
}

/* Disjoint tables one after another into run->result (which is empty). */
static int fd_groups_concat(struct fd_run *run, struct fd_groups *tables, int64_t n,
                                 struct ql_error *error) {
  struct fd_groups *res = &run->result;
  int64_t total = 0;
  for (int64_t t = 0; t < n; t++) total += tables[t].gmap.count;
  QL_RETURN_NOT_OK(fd_groups_alloc(res, total, 0, &run->mem, error));
  int64_t w = res->gmap.width, at = 0;
  for (int64_t t = 0; t < n; t++) {
    struct fd_groups *g = &tables[t];
    int64_t c = g->gmap.count;
    if (c == 0) continue;
    memcpy(res->gmap.values + at * w, g->gmap.values, (size_t)(c * w * 8));
    memcpy(res->gmap.nulls + at, g->gmap.nulls, (size_t)c * 4);
    memcpy(res->has + at, g->has, (size_t)c);
    if (res->is_float) {
      /* The exact sums move (with any heap limbs they own). */
      memcpy(res->acc_f + at, g->acc_f, (size_t)c * sizeof(struct fd_xsum));
      memset(g->acc_f, 0, (size_t)c * sizeof(struct fd_xsum));
    } else {
      memcpy(res->acc_i + at, g->acc_i, (size_t)c * 16);
    }
    at += c;
  }
  res->gmap.count = total;
  return QL_OK;
}

/* A single integer probe-side group key whose values read span a range not
 * much larger than the rows (and whose cell tables stay proportionate)
 * numbers probe groups by value - min (the NULL group last) instead of
 * hashing them, and splits the buckets by value ranges. */
static void fd_choose_pdirect(struct fd_run *run) {
  const struct fd_input *in = &run->in[1 - run->build_side];
  struct fd_pdirect *pd = &run->pdirect;
  memset(pd, 0, sizeof(*pd));
  int64_t lo, hi, nb = run->build.bgmap.count;
  int nulls;
  if (in->side.n_groups != 1 || in->side.groups[0]->storage == FD_U64 ||
      !fd_input_range(in, 1, 0, &lo, &hi, &nulls))
    return;
  uint64_t span = (uint64_t)hi - (uint64_t)lo;
  uint64_t rows = (uint64_t)in->rows;
  if (span >= 2 * rows + 1024 || (span + 2) * (uint64_t)(nb > 0 ? nb : 1) > 4 * rows + 4096) return;
  pd->on = 1;
  pd->min = lo;
  pd->len = (int64_t)span + 2; /* the values, then the NULL group */
}

/* Probe into per-task group tables (in parallel), then combine them. */
static int fd_run_probe(struct fd_run *run, struct ql_error *error) {
  const struct fd_input *in = &run->in[1 - run->build_side];
  struct fd_probe_task task;
  memset(&task, 0, sizeof(task));
  task.run = run;
  const struct ql_executor *ex = run->ctx.executor;
  int64_t workers = ex && ex->spawn ? (ex->parallelism ? ex->parallelism(ex) : 1) : 1;
  task.by_bucket = in->side.n_groups > 0;
  task.n_tasks = task.by_bucket ? (workers < 1 ? 1 : workers > 64 ? 64 : workers) : in->n_parts;
  fd_choose_pdirect(run);
  int64_t n = task.n_tasks;
  void *tables = NULL;
  int64_t tables_bytes = n * (int64_t)sizeof(struct fd_groups);
  QL_RETURN_NOT_OK(fd_mem_resize(&run->mem, &tables, 0, tables_bytes, error));
  task.tables = tables;
  int32_t width = run->plan->spec.n_groups;
  int is_float = run->plan->spec.value_type == FD_FLOAT64;
  for (int64_t p = 0; p < n; p++) fd_groups_init(&task.tables[p], width, in->side.n_groups, is_float);

  /* Workers on the host's executor; this thread works too. */
  int rc = fd_parallel(&run->ctx, n, fd_probe_worker, &task, error);
  if (rc == QL_OK && n == 1) {
    struct fd_groups empty = run->result;
    run->result = task.tables[0];
    task.tables[0] = empty;
  } else if (rc == QL_OK && task.by_bucket) {
    rc = fd_groups_concat(run, task.tables, n, error);
  } else {
    for (int64_t p = 0; p < n && rc == QL_OK; p++) {
      if (run->result.gmap.count == 0) {
        /* Nothing to merge into yet: take the table as it is. */
        struct fd_groups empty = run->result;
        run->result = task.tables[p];
        task.tables[p] = empty;
      } else {
        rc = fd_groups_merge(&run->result, &task.tables[p], &run->mem, error);
      }
    }
  }
  for (int64_t p = 0; p < n; p++) fd_groups_destroy(&task.tables[p], &run->mem);
  /* The probe-side lookup tables are not needed to emit. */
  fd_keys_destroy(&run->result.pmap, &run->mem);
  fd_mem_free(&run->mem, run->result.cells, run->result.n_cells * 8);
  run->result.cells = NULL;
  run->result.n_cells = 0;
  fd_mem_free(&run->mem, tables, tables_bytes);
  return rc;
}

/* The build side's rows, partition by partition, into run->build. */
static int fd_run_build(struct fd_run *run, struct ql_error *error) {
  struct fd_build *b = &run->build;
  const struct fd_input *in = &run->in[run->build_side];
  struct fd_row row;
  struct fd_block *blk;
  QL_RETURN_NOT_OK(fd_block_new(&run->mem, &blk, error));
  int rc = QL_OK;
  for (int64_t p = 0; p < in->n_parts && rc == QL_OK; p++) {
    const struct fd_part *part = &in->parts[p];
    for (int64_t c = 0; c < part->n_chunks && rc == QL_OK; c++) {
      const struct fd_chunk *chunk = part->chunks[c];
      for (int64_t from = 0; from < chunk->batch.length && rc == QL_OK; from += FD_BLOCK) {
        fd_block_decode(in, chunk, from, blk);
        for (int64_t r = 0; r < blk->n && rc == QL_OK; r++) {
          fd_block_row(in, blk, r, &row);
          rc = fd_build_add(b, &row, &run->mem, error);
        }
      }
    }
  }
  fd_mem_free(&run->mem, blk, (int64_t)sizeof(*blk));
  b->rows = in->rows_read;
  return rc == QL_OK ? fd_build_finish(b, &run->mem, error) : rc;
}

int fd_run_hash(struct fd_run *run, struct ql_error *error) {
  /* The key index and the group numbering use the ranges. */
  QL_RETURN_NOT_OK(fd_inputs_exact(run, FD_KEYS | FD_GROUPS, 3, error));
  /* Where each output group key is found while probing. */
  int32_t counts[2] = {0, 0};
  const struct fd_spec *s = &run->plan->spec;
  for (int32_t i = 0; i < s->n_groups; i++) {
    int side = s->groups[i].side;
    run->sources[i].from_build = side == run->build_side;
    run->sources[i].index = counts[side]++;
  }
  int rc = fd_build_init(&run->build, run, error);
  if (rc == QL_OK) rc = fd_run_build(run, error);
  if (rc == QL_OK) rc = fd_run_probe(run, error);
  /* The build table is not needed to emit. */
  fd_build_destroy(&run->build, &run->mem);
  return rc;
}
