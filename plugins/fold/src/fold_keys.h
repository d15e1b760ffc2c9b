/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: a hash set of key tuples, each numbered in insertion order.
 *
 * A tuple is `width` int64 values plus a null mask (bit i set: value i is
 * NULL; its value is then stored as 0). Integer and temporal keys of every
 * width are widened to int64 on the way in, so equal SQL values have equal
 * tuples. Open addressing with linear probing; memory through the fold
 * accounting. Single owner.
 */
#ifndef QLINK_FOLD_KEYS_H
#define QLINK_FOLD_KEYS_H

#include <stdint.h>

#include "fold_mem.h"

struct fd_keys {
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

void fd_keys_init(struct fd_keys *keys, int32_t width);
void fd_keys_destroy(struct fd_keys *keys, struct fd_mem *mem);
uint64_t fd_keys_hash(const int64_t *values, uint32_t nulls, int32_t width);
/* The number of the tuple, or -1. Only valid when every tuple is indexed
 * (no fd_keys_append since the last insert or fd_keys_index). */
int64_t fd_keys_find(const struct fd_keys *keys, const int64_t *values, uint32_t nulls, uint64_t hash);
/* The number of the tuple, inserting it if new (*added = 1). */
int fd_keys_insert(struct fd_keys *keys, const int64_t *values, uint32_t nulls, uint64_t hash,
                        int64_t *number, int *added, struct fd_mem *mem, struct ql_error *error);

/* Append a tuple known to be new, without indexing it (cheaper when the
 * caller deduplicates by other means); *number receives its number. */
int fd_keys_append(struct fd_keys *keys, const int64_t *values, uint32_t nulls, int64_t *number,
                        struct fd_mem *mem, struct ql_error *error);
/* Index every appended tuple (insert does this itself when needed). */
int fd_keys_index(struct fd_keys *keys, struct fd_mem *mem, struct ql_error *error);

#endif /* QLINK_FOLD_KEYS_H */
