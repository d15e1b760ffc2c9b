/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: checks on text that arrives with a length.
 *
 * Hosts receive text from their engine with a byte length (SQLite's
 * sqlite3_value_bytes, DuckDB's string_t) and hand it to libqlink functions
 * that take C strings. A NUL byte inside such text would silently end it
 * there ("spec" || char(0) || "&x=1" read as "spec"), so a host checks the
 * text first and refuses it with an error naming the byte's position.
 *
 * Thread-safety: pure functions.
 */
#ifndef QLINK_LIB_TEXT_H
#define QLINK_LIB_TEXT_H

#include <stddef.h>

#include "qlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* QL_OK when the `len` bytes at `text` hold no NUL byte (len 0 is fine).
 * QL_EINVAL otherwise, the message naming `what` (e.g. "qlink_allow
 * argument 1"), the offset of the first NUL (0-based) and the length, and
 * quoting the text before it:
 *   "WHAT has a NUL byte at offset 26 (of 31 bytes), after 'qlink_sample/se...'"
 * QL_EINVAL naming `what` when `text` is NULL. */
int ql_text_check_nul(const char *text, size_t len, const char *what, struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_TEXT_H */
