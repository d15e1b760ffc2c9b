/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: small helpers to build and read Arrow C Data Interface structs.
 *
 * Everything built here owns its memory through private_data and frees it
 * in release, following the Arrow C Data Interface's rules (release sets
 * release to NULL; children released by the parent's release). Formats are
 * Arrow C format strings.
 *
 * Thread-safety: functions touch only their arguments.
 */
#ifndef QLINK_LIB_ARROW_H
#define QLINK_LIB_ARROW_H

#include <stdint.h>

#include "qlink/arrow_c.h"
#include "qlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- schemas */

/* A leaf field: format, name (both copied), flags (ARROW_FLAG_NULLABLE ...). */
int ql_schema_init(struct ArrowSchema *out, const char *format, const char *name, int64_t flags,
                   struct ql_error *error);
/* A struct ("+s") with n_children children allocated and zeroed (release ==
 * NULL); fill each with ql_schema_init or a move. */
int ql_schema_init_struct(struct ArrowSchema *out, const char *name, int64_t n_children, struct ql_error *error);
/* Replace the metadata with n key/value pairs (copied, Arrow's encoding);
 * n == 0 clears it. QL_EINVAL for a schema not built by libqlink (its
 * metadata buffer is not ours to free). */
int ql_schema_set_metadata(struct ArrowSchema *schema, int64_t n, const char *const *keys,
                           const char *const *values, struct ql_error *error);
/* The value of metadata `key`, copied into a malloc'd string (*out, caller
 * frees), or QL_ENOTFOUND. */
int ql_schema_metadata_get(const struct ArrowSchema *schema, const char *key, char **out);
/* Deep copy (format, name, metadata, children, dictionary). */
int ql_schema_copy(const struct ArrowSchema *src, struct ArrowSchema *out, struct ql_error *error);
/* A struct schema of the listed children of `src` (a struct), in that order. */
int ql_schema_project(const struct ArrowSchema *src, const int32_t *indices, int32_t n, struct ArrowSchema *out,
                      struct ql_error *error);
/* Index of child `name` in a struct schema, or -1. */
int64_t ql_schema_find(const struct ArrowSchema *schema, const char *name);
/* Byte width of a fixed-width format ("l" -> 8, "b" -> 0 (bit-packed), "w:16" -> 16), or -1. */
int64_t ql_format_byte_width(const char *format);
void ql_schema_release(struct ArrowSchema *schema); /* safe on released */

/* ---- arrays */

/* A fixed-width array taking ownership of malloc'd buffers: `validity`
 * (bit-packed, LSB first; NULL: no nulls) and `data`. null_count -1: computed.
 * On failure the buffers are freed. */
int ql_array_init_fixed(struct ArrowArray *out, int64_t length, int64_t null_count, void *validity, void *data,
                        struct ql_error *error);
/* A utf8/binary array owning malloc'd validity, int32 offsets (length+1) and data. */
int ql_array_init_binary(struct ArrowArray *out, int64_t length, int64_t null_count, void *validity,
                         int32_t *offsets, void *data, struct ql_error *error);
/* A struct array of `length` rows with n_children children allocated and
 * zeroed (release == NULL) for the caller to fill (e.g. by moving arrays in). */
int ql_array_init_struct(struct ArrowArray *out, int64_t length, int64_t n_children, struct ql_error *error);
/* An array of `length` nulls of a fixed-width or binary format. */
int ql_array_init_nulls(struct ArrowArray *out, const char *format, int64_t length, struct ql_error *error);
void ql_array_release(struct ArrowArray *array); /* safe on released */
void ql_array_move(struct ArrowArray *src, struct ArrowArray *dst);
void ql_schema_move(struct ArrowSchema *src, struct ArrowSchema *dst);

/* Is row i valid (not null)? Honours offset and a NULL validity buffer;
 * the null type (no buffers) is never valid. Not for union arrays (their
 * first buffer is type ids, not validity). */
int ql_array_is_valid(const struct ArrowArray *array, int64_t i);

/* Row i (the array's offset applied) of a string or binary view array
 * (formats "vu" and "vz", the Arrow C data interface's view layout: the
 * validity buffer, 16-byte views, the variadic data buffers, then their
 * int64 sizes): its bytes, borrowed from `array`, in *data and *length.
 * The caller checks validity first (ql_array_is_valid). QL_EDATA, naming
 * the row, when the array has fewer than 3 buffers, a view's length is
 * negative, or it names a data buffer the array lacks or bytes beyond that
 * buffer's size: what a plugin sends is checked before it is read. */
int ql_array_view_at(const struct ArrowArray *array, int64_t i, const uint8_t **data, int64_t *length,
                     struct ql_error *error);

/* ---- streams */

/* A stream over `n` arrays (moved in) with `schema` (moved in). get_schema
 * returns a deep copy; get_next moves the next array out, then returns 0
 * with a released array (release == NULL) at the end, every time after;
 * get_last_error is NULL until a call failed. On failure the inputs are
 * released all the same. Single consumer thread. */
int ql_stream_from_arrays(struct ArrowSchema *schema, struct ArrowArray *arrays, int64_t n,
                          struct ArrowArrayStream *out, struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_ARROW_H */
