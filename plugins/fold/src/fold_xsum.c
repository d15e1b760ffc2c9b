/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: an exact, order-independent sum of float64 values (see fold_xsum.h).
 *
 * Fixed point: global bit 0 is 2^-1074 (the smallest subnormal), so a finite
 * double with biased exponent e and significand m (implicit bit included) is
 * m << (max(e, 1) - 1) in these units, and the largest occupies bit 2098. */
#include "fold_xsum.h"

#include <math.h>
#include <string.h>

#include "qlink/lib/status.h"

enum { FD_XSUM_NAN = 1, FD_XSUM_PINF = 2, FD_XSUM_NINF = 4 };
/* 2099 value bits, plus headroom for 2^63 additions and the sign: 36 limbs. */
enum { FD_XSUM_MAX_LIMBS = 36 };

static uint64_t *fd_xsum_limbs(struct fd_xsum *x) { return x->heap ? x->heap : x->inl; }
static const uint64_t *fd_xsum_climbs(const struct fd_xsum *x) { return x->heap ? x->heap : x->inl; }

/* Widen the window to [lo, lo + n): zeros below, sign limbs above. */
static int fd_xsum_widen(struct fd_xsum *x, int32_t lo, int32_t n, struct fd_mem *mem,
                              struct ql_error *error) {
  uint64_t tmp[FD_XSUM_MAX_LIMBS];
  if (n > FD_XSUM_MAX_LIMBS) return ql_error_set(error, QL_EINTERNAL, "qlink_fold: exact sum window overflow");
  const uint64_t *old = fd_xsum_climbs(x);
  uint64_t sign = (x->n > 0 && (int64_t)old[x->n - 1] < 0) ? ~(uint64_t)0 : 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t j = lo + i - x->lo; /* index in the old window */
    tmp[i] = (x->n > 0 && j >= 0 && j < x->n) ? old[j] : (x->n > 0 && j >= x->n ? sign : 0);
  }
  if (n > FD_XSUM_INLINE) {
    int64_t old_bytes = x->heap ? (int64_t)x->n * 8 : 0;
    void *p = x->heap;
    QL_RETURN_NOT_OK(fd_mem_resize(mem, &p, old_bytes, (int64_t)n * 8, error));
    x->heap = p;
  } else if (x->heap) {
    fd_mem_free(mem, x->heap, (int64_t)x->n * 8);
    x->heap = NULL;
  }
  memcpy(fd_xsum_limbs(x), tmp, (size_t)n * 8);
  x->lo = lo;
  x->n = (int16_t)n;
  return QL_OK;
}

/* x += (neg ? -1 : 1) * (v1:v0) * 2^(64 idx). */
static int fd_xsum_add_at(struct fd_xsum *x, int32_t idx, uint64_t v0, uint64_t v1, int neg,
                               struct fd_mem *mem, struct ql_error *error) {
  if (x->n == 0) {
    memset(x->inl, 0, sizeof(x->inl));
    x->lo = idx;
    x->n = 3;
  } else if (idx < x->lo || idx + 2 > x->lo + x->n - 1) {
    int32_t lo = idx < x->lo ? idx : x->lo;
    int32_t top = (idx + 2 > x->lo + x->n - 1) ? idx + 2 : x->lo + x->n - 1;
    QL_RETURN_NOT_OK(fd_xsum_widen(x, lo, top - lo + 1, mem, error));
  }
  uint64_t *l = fd_xsum_limbs(x);
  int32_t i = idx - x->lo;
  /* Two limbs at once; the carry (borrow) then ripples up from limb i + 2,
   * which exists: the window reaches idx + 2. */
  unsigned __int128 cur = ((unsigned __int128)l[i + 1] << 64) | l[i];
  unsigned __int128 v = ((unsigned __int128)v1 << 64) | v0;
  unsigned __int128 r = neg ? cur - v : cur + v;
  int carry = neg ? cur < v : r < cur;
  l[i] = (uint64_t)r;
  l[i + 1] = (uint64_t)(r >> 64);
  for (int32_t k = i + 2; carry && k < x->n; k++) {
    if (neg) carry = l[k]-- == 0;
    else carry = ++l[k] == 0;
  }
  return fd_xsum_fix_top(x, mem, error);
}

int fd_xsum_fix_top(struct fd_xsum *x, struct fd_mem *mem, struct ql_error *error) {
  uint64_t top = fd_xsum_limbs(x)[x->n - 1];
  if (top != 0 && top != ~(uint64_t)0) return fd_xsum_widen(x, x->lo, x->n + 1, mem, error);
  return QL_OK;
}

int fd_xsum_add(struct fd_xsum *x, double v, struct fd_mem *mem, struct ql_error *error) {
  uint64_t b;
  memcpy(&b, &v, 8);
  uint32_t e = (uint32_t)(b >> 52) & 0x7ffu;
  if (e == 0x7ffu) {
    x->flags |= (b & ((UINT64_C(1) << 52) - 1)) ? FD_XSUM_NAN
                : (b >> 63)                     ? FD_XSUM_NINF
                                                : FD_XSUM_PINF;
    return QL_OK;
  }
  uint64_t m = b & ((UINT64_C(1) << 52) - 1);
  if (e) m |= UINT64_C(1) << 52;
  if (m == 0) return QL_OK;
  uint32_t p = (e ? e : 1) - 1; /* bit position of m's lowest bit */
  uint32_t s = p % 64;
  uint64_t v0 = m << s;
  uint64_t v1 = s ? m >> (64 - s) : 0;
  return fd_xsum_add_at(x, (int32_t)(p / 64), v0, v1, (int)(b >> 63), mem, error);
}

int fd_xsum_merge(struct fd_xsum *x, const struct fd_xsum *y, struct fd_mem *mem,
                       struct ql_error *error) {
  x->flags |= y->flags;
  const uint64_t *l = fd_xsum_climbs(y);
  for (int32_t i = 0; i + 1 < y->n; i++) {
    if (l[i]) QL_RETURN_NOT_OK(fd_xsum_add_at(x, y->lo + i, l[i], 0, 0, mem, error));
  }
  /* The top limb is the sign: ~0 stands for -2^(64 (lo + n - 1)). */
  if (y->n > 0 && l[y->n - 1]) QL_RETURN_NOT_OK(fd_xsum_add_at(x, y->lo + y->n - 1, 1, 0, 1, mem, error));
  return QL_OK;
}

static int fd_xsum_bit(const uint64_t *mag, int32_t n, int64_t bit) {
  if (bit < 0 || bit >= (int64_t)n * 64) return 0;
  return (int)((mag[bit / 64] >> (bit % 64)) & 1u);
}

/* The 53 bits starting at local bit `low` (which may be negative: zeros). */
static uint64_t fd_xsum_bits(const uint64_t *mag, int32_t n, int64_t low) {
  uint64_t m;
  if (low < 0) {
    m = mag[0] << (-low); /* top < 53 here, so everything sits in limb 0 */
  } else {
    int64_t w = low / 64, b = low % 64;
    m = mag[w] >> b;
    if (b && w + 1 < n) m |= mag[w + 1] << (64 - b);
  }
  return m & ((UINT64_C(1) << 53) - 1);
}

static int fd_xsum_any_below(const uint64_t *mag, int64_t bit) {
  if (bit <= 0) return 0;
  for (int64_t k = 0; k < bit / 64; k++)
    if (mag[k]) return 1;
  if (bit % 64 && (mag[bit / 64] & ((UINT64_C(1) << (bit % 64)) - 1))) return 1;
  return 0;
}

double fd_xsum_value(const struct fd_xsum *x) {
  if (x->flags & FD_XSUM_NAN) return NAN;
  if ((x->flags & FD_XSUM_PINF) && (x->flags & FD_XSUM_NINF)) return NAN;
  if (x->flags & FD_XSUM_PINF) return INFINITY;
  if (x->flags & FD_XSUM_NINF) return -INFINITY;
  if (x->n == 0) return 0.0;
  uint64_t mag[FD_XSUM_MAX_LIMBS];
  const uint64_t *l = fd_xsum_climbs(x);
  int32_t n = x->n;
  memcpy(mag, l, (size_t)n * 8);
  int neg = (int64_t)mag[n - 1] < 0;
  if (neg) { /* two's complement negation */
    uint64_t carry = 1;
    for (int32_t i = 0; i < n; i++) {
      mag[i] = ~mag[i] + carry;
      carry = carry && mag[i] == 0;
    }
  }
  int32_t h = n - 1;
  while (h >= 0 && mag[h] == 0) h--;
  if (h < 0) return 0.0;
  int64_t top = (int64_t)h * 64 + (63 - __builtin_clzll(mag[h])); /* local bit index of the leading 1 */
  int64_t global_top = top + (int64_t)x->lo * 64;
  int64_t low = top - 52; /* local index of the significand's lowest bit */
  uint64_t m = fd_xsum_bits(mag, n, low);
  if (global_top >= 53) {
    /* Round to nearest, ties to even, on the 53 leading bits. */
    int round = fd_xsum_bit(mag, n, low - 1);
    int sticky = fd_xsum_any_below(mag, low - 1);
    if (round && (sticky || (m & 1u))) {
      m++;
      if (m == (UINT64_C(1) << 53)) {
        m >>= 1;
        low++;
      }
    }
  }
  /* Below 2^53 units everything is a multiple of 2^-1074 with at most 53
   * significant bits: exact. (bits under local 0 are zeros of the window.) */
  double r = ldexp((double)m, (int)(low + (int64_t)x->lo * 64 - 1074));
  return neg ? -r : r;
}

void fd_xsum_clear(struct fd_xsum *x, struct fd_mem *mem) {
  if (x->heap) fd_mem_free(mem, x->heap, (int64_t)x->n * 8);
  memset(x, 0, sizeof(*x));
}
