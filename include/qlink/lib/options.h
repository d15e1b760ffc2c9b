/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: reading struct ql_options. */
#ifndef QLINK_LIB_OPTIONS_H
#define QLINK_LIB_OPTIONS_H

#include "qlink/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The value of `key`, or `fallback` when absent (options may be NULL). */
const char *ql_options_get(const struct ql_options *options, const char *key, const char *fallback);
/* QL_EINVAL naming the first key not in `known`, or a required option that
 * is missing ("unknown option 'pth' for zarr/store; accepted: path, ..."). `what`
 * names the object for the message. */
int ql_options_check(const struct ql_options *options, const struct ql_option_info *known, int32_t n_known,
                     const char *what, struct ql_error *error);
/* Parse an integer / boolean option value; QL_EINVAL naming key and value.
 * An absent key gives `fallback` (QL_OK). Integers are base-10 int64 with
 * nothing else in the value; booleans are true/false, 1/0, yes/no, on/off in
 * any case. Keys are case-sensitive everywhere. */
int ql_options_get_i64(const struct ql_options *options, const char *key, int64_t fallback, int64_t *out,
                       struct ql_error *error);
int ql_options_get_bool(const struct ql_options *options, const char *key, int fallback, int *out,
                        struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_OPTIONS_H */
