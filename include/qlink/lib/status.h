/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: helpers for statuses and struct ql_error.
 *
 * Thread-safety: every function is thread-safe for distinct error structs.
 */
#ifndef QLINK_LIB_STATUS_H
#define QLINK_LIB_STATUS_H

#include <stdarg.h>

#include "qlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define QL_PRINTF_FORMAT(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define QL_PRINTF_FORMAT(fmt_index, args_index)
#endif

/* Propagate a non-OK status from an expression (nanoarrow's habit). */
#define QL_RETURN_NOT_OK(expr)       \
  do {                               \
    int ql_status_rc_ = (expr);      \
    if (ql_status_rc_ != QL_OK) {    \
      return ql_status_rc_;          \
    }                                \
  } while (0)

/* "QL_EINVAL" for QL_EINVAL, "QL_UNKNOWN_STATUS" for a value outside the enum. */
const char *ql_status_name(int status);
/* The SQLSTATE the ABI pairs with a status ("22023" for QL_EINVAL ...). */
const char *ql_status_sqlstate(int status);
/* errno-style code for an ArrowArrayStream's get_next (EINVAL, ENOMEM, EIO, ...). */
int ql_status_to_errno(int status);
/* The inverse, for codes from an Arrow stream. */
int ql_status_from_errno(int code);

/* Fill `error` (may be NULL) with `status`, its SQLSTATE and a formatted
 * message; releases what `error` held before. Returns `status`, so a callee
 * can `return ql_error_set(error, QL_EINVAL, "...")`. If the message cannot be
 * allocated, the error still carries the status with a static message.
 * Messages are one line: newlines in the formatted text become spaces. */
int ql_error_set(struct ql_error *error, int status, const char *fmt, ...) QL_PRINTF_FORMAT(3, 4);
int ql_error_setv(struct ql_error *error, int status, const char *fmt, va_list args);
/* Prepend "context: " to the message already in `error` (no-op if unset or
 * NULL). Returns error's status (or QL_EINTERNAL if unset). Works on errors
 * filled by another library too: their message is freed through their own
 * release and their status and SQLSTATE are kept. */
int ql_error_prefix(struct ql_error *error, const char *fmt, ...) QL_PRINTF_FORMAT(2, 3);
/* Release `error` if set; safe on NULL and on released errors. */
void ql_error_release(struct ql_error *error);
/* Move src into dst (releasing dst first); src is left released. */
void ql_error_move(struct ql_error *dst, struct ql_error *src);
/* The message, or "" when error is NULL or unset. */
const char *ql_error_message(const struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_STATUS_H */
