/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: the conformance kit (qlink-check) as a library.
 *
 * ql_check_plugin loads a plugin and checks the ABI rules of docs/abi.md
 * against every object its catalogue lists, reporting each violation as
 * one line "VIOLATION <rule>: <what>" on the report stream.
 *
 * Thread-safety: ql_check_plugin may run for different plugins at once only
 * without `isolate` (fork is per process). The batch helpers below touch
 * only their arguments.
 */
#ifndef QLINK_LIB_CHECK_H
#define QLINK_LIB_CHECK_H

#include <stdio.h>

#include "qlink/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_check_options {
  /* Options per table/schema provider: "provider?key=value&..." specs; a
   * provider without one is opened with no options. */
  int32_t n_specs;
  const char *const *specs;
  int32_t threads;   /* threads for the concurrent-execute check; 0: 4 */
  int32_t verbose;   /* print each check as it runs */
  FILE *out;         /* report stream; NULL: stdout */
  /* Non-zero: run the descriptor checks and each catalogue item's checks in
   * a forked child with its own reference host, so a plugin that crashes is
   * reported ("VIOLATION crash: ...") instead of ending the check. */
  int32_t isolate;
};

/* Run every check. Returns the number of violations plus plugin errors (0:
 * conforming, every check ran), or -1 when the plugin could not be loaded at
 * all (reported as a violation too; qlink-check exits 3 for it, 1 for
 * violations or plugin errors). A plugin error is a call failing as the ABI
 * allows, with the plugin's message (a stream on a corrupt file), printed
 * "PLUGIN ERROR <what>": not a broken rule, but the checks needing its
 * result are skipped. The report ends with "qlink-check: PATH: N
 * violation(s)" (", M plugin error(s) ..." appended when M > 0). */
int ql_check_plugin(const char *path, const struct ql_check_options *options);

/* ---- Driving helpers the kit is built on, for tools and tests that run a
 * plugin's objects under a host. Every call they make into a plugin object
 * is bracketed by the plugin's executor hooks (ql_plugin_enter/leave). */

/* Every record batch of one or more streams, with the schema of the first.
 * Owned by the caller: ql_batches_free. Zero-initialise before first use. */
struct ql_batches {
  struct ArrowSchema schema; /* release == NULL until a stream was collected */
  int64_t n_batches;
  int64_t capacity;
  struct ArrowArray *batches; /* struct arrays, one per batch, in stream order */
  int64_t n_rows;
  int64_t *ends; /* ends[i]: the rows of batches 0..i (a cell's batch is found by binary search) */
};

/* Read `stream` to its end, appending its batches to `out`, then release it
 * (also on failure). Errors: the stream's errno-style code mapped to a
 * status, with get_last_error's message; QL_EDATA if a batch is not a struct
 * array of the schema's width. */
int ql_batches_collect(const struct ql_plugin *plugin, struct ArrowArrayStream *stream, struct ql_batches *out,
                       struct ql_error *error);
/* Plan `args` on `provider` (NULL: every column, no filter, no limit),
 * execute every partition one after the other with task contexts from
 * `host`, and collect the rows, partition 0 first. QL_EINVAL when the
 * provider has no scan or its plan lacks get_properties, get_schema,
 * execute or release (a stream without get_schema/get_next likewise, in
 * ql_batches_collect): the helpers never call a NULL member. */
struct ql_ref_host;
int ql_batches_scan(const struct ql_plugin *plugin, const struct ql_table_provider *provider,
                    struct ql_ref_host *host, const struct ql_scan_args *args, struct ql_batches *out,
                    struct ql_error *error);
void ql_batches_free(struct ql_batches *batches);
/* Cell (column, row) over all batches: 1 and *out set when valid, 0 for NULL
 * or when out of range. _i64 reads signed/unsigned integers, booleans and
 * temporal values (dates, times, timestamps, durations) as stored, in their unit;
 * _f64 floating point (and integers), _str utf8/binary (not NUL-terminated). */
int ql_batches_i64(const struct ql_batches *batches, int64_t column, int64_t row, int64_t *out);
int ql_batches_f64(const struct ql_batches *batches, int64_t column, int64_t row, double *out);
int ql_batches_str(const struct ql_batches *batches, int64_t column, int64_t row, const char **data, int64_t *size);
/* Print as "csv" (header line, NULL as empty) or "jsonl" (one object a
 * row). QL_EINVAL for another format. */
int ql_batches_write(const struct ql_batches *batches, FILE *out, const char *format, struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_CHECK_H */
