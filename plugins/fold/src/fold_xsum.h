/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: an exact, order-independent sum of float64 values.
 *
 * Why: SUM over float64 products must give bit-for-bit the same result from
 * run to run whatever the thread timing and however the host partitions the
 * inputs. Summing in a fixed order is not enough (a host may repartition
 * round-robin), so the fold operator sums exactly: every finite double is an
 * integer multiple of 2^-1074, and the accumulator holds the exact sum as a
 * two's-complement big integer in those units, over a window of 64-bit limbs
 * that grows only as far as the values seen require (usually 3-4 limbs). The
 * result is the exact sum rounded once to nearest, ties to even: the same
 * for every order, and at least as accurate as any summation order (so within
 * DataFusion's own rounding of its sequential sum). NaN and infinities follow
 * IEEE 754 addition: any NaN, or +inf with -inf, gives NaN; otherwise an
 * infinity wins. An exact zero gives +0.0, as DataFusion's sum (which starts
 * at +0.0) does.
 *
 * Single owner; not thread-safe. Limbs beyond the inline ones are allocated
 * through the fold memory accounting.
 */
#ifndef QLINK_FOLD_XSUM_H
#define QLINK_FOLD_XSUM_H

#include <stdint.h>

#include "fold_mem.h"

#define FD_XSUM_INLINE 4

struct fd_xsum {
  int32_t lo;     /* global index of limbs[0]; limb i holds bits [64 (lo+i), 64 (lo+i) + 64) */
  int16_t n;      /* limbs in the window (0: exactly zero); the top limb is 0 or ~0 (the sign) */
  uint8_t flags;  /* FD_XSUM_NAN | _PINF | _NINF */
  uint8_t reserved_;
  uint64_t *heap; /* the limbs when n > FD_XSUM_INLINE, else NULL */
  uint64_t inl[FD_XSUM_INLINE];
};

/* A zeroed struct is an empty sum (0). fd_xsum_add is the general
 * path; fd_xsum_add_fast (below) handles the common case inline. */
int fd_xsum_add(struct fd_xsum *x, double v, struct fd_mem *mem, struct ql_error *error);
/* Restore the invariant that the top limb is only the sign (internal). */
int fd_xsum_fix_top(struct fd_xsum *x, struct fd_mem *mem, struct ql_error *error);
/* x += y exactly (y unchanged). */
int fd_xsum_merge(struct fd_xsum *x, const struct fd_xsum *y, struct fd_mem *mem,
                       struct ql_error *error);
/* The exact sum rounded to nearest, ties to even. */
double fd_xsum_value(const struct fd_xsum *x);
/* Free heap limbs (the struct is then an empty sum again). */
void fd_xsum_clear(struct fd_xsum *x, struct fd_mem *mem);

/* The hot path of fd_xsum_add: a finite non-zero value landing inside
 * the current window (limbs idx..idx+2 present) with no carry into the top
 * limb's sign; anything else goes to the general function. Same result. */
static inline int fd_xsum_add_fast(struct fd_xsum *x, double v, struct fd_mem *mem,
                                        struct ql_error *error) {
  uint64_t b;
  __builtin_memcpy(&b, &v, 8);
  uint32_t e = (uint32_t)(b >> 52) & 0x7ffu;
  uint32_t p = (e ? e : 1) - 1;
  int32_t idx = (int32_t)(p / 64);
  if (e == 0x7ffu || x->n == 0 || idx < x->lo || idx + 2 >= x->lo + x->n) return fd_xsum_add(x, v, mem, error);
  uint64_t m = b & ((UINT64_C(1) << 52) - 1);
  if (e) m |= UINT64_C(1) << 52;
  uint32_t s = p % 64;
  uint64_t t0 = m << s, t1 = s ? m >> (64 - s) : 0; /* the value's two limbs */
  uint64_t *l = x->heap ? x->heap : x->inl;
  int32_t i = idx - x->lo;
  uint64_t r0, r1;
  int carry;
  /* Two-limb add (subtract) with carry (borrow) in 64-bit pieces: no
   * 128-bit temporaries to spill. */
  if (b >> 63) {
    int b0 = __builtin_sub_overflow(l[i], t0, &r0);
    int b1 = __builtin_sub_overflow(l[i + 1], t1, &r1);
    b1 |= __builtin_sub_overflow(r1, (uint64_t)b0, &r1);
    carry = b1;
  } else {
    int c0 = __builtin_add_overflow(l[i], t0, &r0);
    int c1 = __builtin_add_overflow(l[i + 1], t1, &r1);
    c1 |= __builtin_add_overflow(r1, (uint64_t)c0, &r1);
    carry = c1;
  }
  l[i] = r0;
  l[i + 1] = r1;
  /* idx + 2 < top: the carry stops below the sign limb or reaches it. */
  for (int32_t k = i + 2; carry && k < x->n; k++) carry = (b >> 63) ? l[k]-- == 0 : ++l[k] == 0;
  uint64_t top = l[x->n - 1];
  if (top != 0 && top != ~(uint64_t)0) {
    /* Undo is not needed: widening keeps the value; let the general path
     * re-establish the sign-limb invariant by adding zero. */
    return fd_xsum_fix_top(x, mem, error);
  }
  return 0;
}

#endif /* QLINK_FOLD_XSUM_H */
