/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: a hash set of key tuples (see fold_keys.h). */
#include "fold_keys.h"

#include <string.h>

#include "qlink/lib/status.h"

void fd_keys_init(struct fd_keys *keys, int32_t width) {
  memset(keys, 0, sizeof(*keys));
  keys->width = width;
}

void fd_keys_destroy(struct fd_keys *keys, struct fd_mem *mem) {
  fd_mem_free(mem, keys->values, keys->capacity * keys->width * 8);
  fd_mem_free(mem, keys->nulls, keys->capacity * 4);
  fd_mem_free(mem, keys->slots, keys->n_slots * 8);
  fd_mem_free(mem, keys->slot_hashes, keys->n_slots * 8);
  fd_keys_init(keys, keys->width);
}

static uint64_t fd_mix(uint64_t h) {
  /* splitmix64's finalizer: every input bit affects every output bit. */
  h ^= h >> 30;
  h *= UINT64_C(0xbf58476d1ce4e5b9);
  h ^= h >> 27;
  h *= UINT64_C(0x94d049bb133111eb);
  h ^= h >> 31;
  return h;
}

uint64_t fd_keys_hash(const int64_t *values, uint32_t nulls, int32_t width) {
  uint64_t h = fd_mix(UINT64_C(0x9e3779b97f4a7c15) ^ nulls);
  for (int32_t i = 0; i < width; i++) h = fd_mix(h ^ (uint64_t)values[i]) + (uint64_t)i;
  return h;
}

static int fd_keys_equal(const struct fd_keys *keys, int64_t number, const int64_t *values,
                              uint32_t nulls) {
  if (keys->nulls[number] != nulls) return 0;
  const int64_t *v = keys->values + number * keys->width;
  for (int32_t i = 0; i < keys->width; i++)
    if (v[i] != values[i]) return 0;
  return 1;
}

int64_t fd_keys_find(const struct fd_keys *keys, const int64_t *values, uint32_t nulls, uint64_t hash) {
  if (keys->n_slots == 0) return -1;
  uint64_t mask = (uint64_t)keys->n_slots - 1;
  for (uint64_t s = hash & mask;; s = (s + 1) & mask) {
    int64_t slot = keys->slots[s];
    if (slot == 0) return -1;
    if (keys->slot_hashes[s] == hash && fd_keys_equal(keys, slot - 1, values, nulls)) return slot - 1;
  }
}

/* Rebuild the slots (n_slots of them) from the tuples themselves. */
static int fd_keys_rehash(struct fd_keys *keys, int64_t n_slots, struct fd_mem *mem,
                               struct ql_error *error) {
  void *slots = NULL, *hashes = NULL;
  QL_RETURN_NOT_OK(fd_mem_resize(mem, &slots, 0, n_slots * 8, error));
  int rc = fd_mem_resize(mem, &hashes, 0, n_slots * 8, error);
  if (rc != QL_OK) {
    fd_mem_free(mem, slots, n_slots * 8);
    return rc;
  }
  int64_t *new_slots = slots;
  uint64_t *new_hashes = hashes;
  uint64_t mask = (uint64_t)n_slots - 1;
  for (int64_t k = 0; k < keys->count; k++) {
    uint64_t h = fd_keys_hash(keys->values + k * keys->width, keys->nulls[k], keys->width);
    uint64_t s = h & mask;
    while (new_slots[s]) s = (s + 1) & mask;
    new_slots[s] = k + 1;
    new_hashes[s] = h;
  }
  fd_mem_free(mem, keys->slots, keys->n_slots * 8);
  fd_mem_free(mem, keys->slot_hashes, keys->n_slots * 8);
  keys->slots = new_slots;
  keys->slot_hashes = new_hashes;
  keys->n_slots = n_slots;
  keys->n_indexed = keys->count;
  return QL_OK;
}

int fd_keys_index(struct fd_keys *keys, struct fd_mem *mem, struct ql_error *error) {
  if (keys->n_indexed == keys->count && keys->n_slots > 0) return QL_OK;
  int64_t n = 16;
  while (n < (keys->count + 1) * 2) n *= 2;
  return fd_keys_rehash(keys, n, mem, error);
}

static int fd_keys_reserve(struct fd_keys *keys, struct fd_mem *mem, struct ql_error *error) {
  if (keys->count < keys->capacity) return QL_OK;
  int64_t cap = keys->capacity ? keys->capacity * 2 : 16;
  void *v = keys->values, *n = keys->nulls;
  QL_RETURN_NOT_OK(fd_mem_resize(mem, &v, keys->capacity * keys->width * 8, cap * keys->width * 8, error));
  keys->values = v;
  int rc = fd_mem_resize(mem, &n, keys->capacity * 4, cap * 4, error);
  if (rc != QL_OK) {
    /* Give the values' growth back so the accounting matches `capacity`. */
    if (fd_mem_resize(mem, &v, cap * keys->width * 8, keys->capacity * keys->width * 8, NULL) == QL_OK)
      keys->values = v;
    return rc;
  }
  keys->nulls = n;
  keys->capacity = cap;
  return QL_OK;
}

int fd_keys_append(struct fd_keys *keys, const int64_t *values, uint32_t nulls, int64_t *number,
                        struct fd_mem *mem, struct ql_error *error) {
  QL_RETURN_NOT_OK(fd_keys_reserve(keys, mem, error));
  int64_t k = keys->count++;
  if (keys->width) memcpy(keys->values + k * keys->width, values, (size_t)keys->width * 8);
  keys->nulls[k] = nulls;
  *number = k;
  return QL_OK;
}

int fd_keys_insert(struct fd_keys *keys, const int64_t *values, uint32_t nulls, uint64_t hash,
                        int64_t *number, int *added, struct fd_mem *mem, struct ql_error *error) {
  if (keys->n_indexed < keys->count) QL_RETURN_NOT_OK(fd_keys_index(keys, mem, error));
  int64_t found = fd_keys_find(keys, values, nulls, hash);
  *added = 0;
  if (found >= 0) {
    *number = found;
    return QL_OK;
  }
  /* Keep the load factor at or below 1/2. */
  if ((keys->count + 1) * 2 > keys->n_slots)
    QL_RETURN_NOT_OK(fd_keys_rehash(keys, keys->n_slots ? keys->n_slots * 2 : 16, mem, error));
  QL_RETURN_NOT_OK(fd_keys_reserve(keys, mem, error));
  int64_t k = keys->count++;
  if (keys->width) memcpy(keys->values + k * keys->width, values, (size_t)keys->width * 8);
  keys->nulls[k] = nulls;
  uint64_t mask = (uint64_t)keys->n_slots - 1;
  uint64_t s = hash & mask;
  while (keys->slots[s]) s = (s + 1) & mask;
  keys->slots[s] = k + 1;
  keys->slot_hashes[s] = hash;
  keys->n_indexed = keys->count;
  *number = k;
  *added = 1;
  return QL_OK;
}
