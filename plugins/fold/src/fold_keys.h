/* qlink_fold: a hash set of key tuples, each numbered in insertion order.
 *
 * A tuple is `width` int64 values plus a null mask (bit i set: value i is
 * NULL; its value is then stored as 0). Integer and temporal keys of every
 * width are widened to int64 on the way in, so equal SQL values have equal
 * tuples. Open addressing with linear probing; memory through the fold
 * accounting. Single owner.
 */
#ifndef QL_FOLD_KEYS_H
#define QL_FOLD_KEYS_H

#include <stdint.h>

#include "fold_mem.h"

struct ql_fold_keys {
  int32_t width;
  int32_t reserved_;
  int64_t count;    /* tuples stored, numbered 0..count-1 */
  int64_t capacity; /* tuples the value arrays can hold */
  int64_t *values;  /* row-major, width per tuple */
  uint32_t *nulls;  /* one mask per tuple */
  int64_t n_indexed; /* tuples [0, n_indexed) are in the slots */
  int64_t n_slots;  /* power of two; 0 before the first insert */
  int64_t *slots;   /* tuple number + 1, 0 = empty */
  uint64_t *slot_hashes;
};

void ql_fold_keys_init(struct ql_fold_keys *keys, int32_t width);
void ql_fold_keys_destroy(struct ql_fold_keys *keys, struct ql_fold_mem *mem);
uint64_t ql_fold_keys_hash(const int64_t *values, uint32_t nulls, int32_t width);
/* The number of the tuple, or -1. Only valid when every tuple is indexed
 * (no ql_fold_keys_append since the last insert or ql_fold_keys_index). */
int64_t ql_fold_keys_find(const struct ql_fold_keys *keys, const int64_t *values, uint32_t nulls, uint64_t hash);
/* The number of the tuple, inserting it if new (*added = 1). */
int ql_fold_keys_insert(struct ql_fold_keys *keys, const int64_t *values, uint32_t nulls, uint64_t hash,
                        int64_t *number, int *added, struct ql_fold_mem *mem, struct ql_error *error);

/* Append a tuple known to be new, without indexing it (cheaper when the
 * caller deduplicates by other means); *number receives its number. */
int ql_fold_keys_append(struct ql_fold_keys *keys, const int64_t *values, uint32_t nulls, int64_t *number,
                        struct ql_fold_mem *mem, struct ql_error *error);
/* Index every appended tuple (insert does this itself when needed). */
int ql_fold_keys_index(struct ql_fold_keys *keys, struct ql_fold_mem *mem, struct ql_error *error);

#endif /* QL_FOLD_KEYS_H */
