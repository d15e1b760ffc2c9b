/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: reading Zarr metadata documents as their writers write them.
 *
 * zarr-python (v2 and v3 formats alike) and xarray serialise metadata with
 * Python's json module, which writes a NaN or infinite float attribute
 * (`missing_value: nan`, `valid_max: inf`, ...) as the bare tokens `NaN`,
 * `Infinity` and `-Infinity` (Python's `json.dumps(allow_nan=True)`, its
 * default). RFC 8259 has no such tokens and jansson rejects them, so such a
 * store would not open. xarray reads them as floats; here they become the
 * JSON strings "NaN", "Infinity" and "-Infinity", the spelling the Zarr v3
 * specification gives non-finite fill values, which the CF decoder (cf.h)
 * and fill-value parser (fill.c) read as those numbers.
 *
 * Integers outside int64 are valid JSON that jansson refuses ("too big
 * integer"); netCDF's default uint64 fill value 18446744073709551614 is one.
 * Such a literal becomes the string of its digits, which fill.c and cf.c
 * read as that number.
 */
#ifndef QLINK_ZARR_JSON_TEXT_H
#define QLINK_ZARR_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

/* Parse `n` bytes of JSON text (any value at the top level), accepting the
 * bare tokens and big integers above outside strings. Returns a new reference (the caller
 * json_decref()s it), or NULL with `jerr` describing the first error (line
 * numbers are those of the input; columns after a rewritten token on the
 * same line are off by two per token). NULL with jerr->text "out of memory"
 * when the rewritten copy cannot be allocated. Thread-safe (no shared
 * state). */
json_t *zr_json_parse(const char *text, size_t n, json_error_t *jerr);

/* zr_json_parse with more jansson decoding flags (e.g. JSON_ALLOW_NUL). */
json_t *zr_json_parse_flags(const char *text, size_t n, size_t flags, json_error_t *jerr);

#endif /* QLINK_ZARR_JSON_TEXT_H */
