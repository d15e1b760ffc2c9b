/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal test macros for qlink's C tests. Each check counts as one
 * assertion; QL_TEST_END prints "N passed, N failed" and sets the exit code.
 * Checks compare exact values. */
#ifndef QL_TEST_H
#define QL_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int ql_test_passed_ = 0;
static int ql_test_failed_ = 0;

#define QL_CHECK(cond)                                                           \
  do {                                                                           \
    if (cond) {                                                                  \
      ql_test_passed_++;                                                         \
    } else {                                                                     \
      ql_test_failed_++;                                                         \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
    }                                                                            \
  } while (0)

#define QL_CHECK_INT(actual, expected)                                                              \
  do {                                                                                              \
    long long ql_a_ = (long long)(actual), ql_e_ = (long long)(expected);                           \
    if (ql_a_ == ql_e_) {                                                                           \
      ql_test_passed_++;                                                                            \
    } else {                                                                                        \
      ql_test_failed_++;                                                                            \
      fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #actual, ql_a_, ql_e_); \
    }                                                                                               \
  } while (0)

#define QL_CHECK_STR(actual, expected)                                                                  \
  do {                                                                                                  \
    const char *ql_a_ = (actual), *ql_e_ = (expected);                                                  \
    if (ql_a_ && ql_e_ && strcmp(ql_a_, ql_e_) == 0) {                                                  \
      ql_test_passed_++;                                                                                \
    } else {                                                                                            \
      ql_test_failed_++;                                                                                \
      fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #actual,            \
              ql_a_ ? ql_a_ : "(null)", ql_e_ ? ql_e_ : "(null)");                                       \
    }                                                                                                   \
  } while (0)

/* expr returns a status; err is a struct ql_error whose message is printed on failure. */
#define QL_CHECK_OK(expr, err)                                                                       \
  do {                                                                                               \
    int ql_rc_ = (expr);                                                                             \
    if (ql_rc_ == 0) {                                                                               \
      ql_test_passed_++;                                                                             \
    } else {                                                                                         \
      ql_test_failed_++;                                                                             \
      fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #expr, ql_rc_,              \
              ((err).release && (err).message) ? (err).message : "(no message)");                   \
    }                                                                                                \
  } while (0)

#define QL_TEST_END()                                                         \
  do {                                                                        \
    printf("%d passed, %d failed\n", ql_test_passed_, ql_test_failed_);       \
    return ql_test_failed_ == 0 ? 0 : 1;                                      \
  } while (0)

#endif /* QL_TEST_H */
