/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink internal: small string helpers shared by src/ folders.
 * Not part of the public API (no header under include/). */
#ifndef QLINK_SRC_BASE_TEXT_H
#define QLINK_SRC_BASE_TEXT_H

#include <stddef.h>

#include "qlink/error.h"
#include "qlink/lib/text.h" /* the public part: ql_text_check_nul */

/* malloc'd copy of s (NULL for NULL or on allocation failure). */
char *ql_strdup(const char *s);
/* malloc'd copy of the first n bytes of s, NUL-terminated. */
char *ql_strndup(const char *s, size_t n);
/* Decode %XX escapes of s[0..n) into a malloc'd string; '+' is kept as is.
 * QL_EINVAL (naming `what` and the text) for a truncated or non-hex escape or
 * an escape decoding to NUL. */
int ql_percent_decode(const char *s, size_t n, const char *what, char **out, struct ql_error *error);
/* Normalise a '/'-separated relative path lexically: drops empty and "."
 * segments, resolves "..". QL_EINVAL if ".." climbs above the start (message
 * names `what` and the path). Output malloc'd, without leading/trailing '/'. */
int ql_path_normalize(const char *path, const char *what, char **out, struct ql_error *error);

#endif /* QLINK_SRC_BASE_TEXT_H */
