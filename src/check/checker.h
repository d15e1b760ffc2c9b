/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance kit's internals: the checker state (struct ql_checker),
 * the call-bracketing macros and the report calls (report.c) its files share. */
#ifndef QLINK_CHECK_CHECKER_H
#define QLINK_CHECK_CHECKER_H

#include <stdio.h>

#include "qlink/lib/check.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"

struct ql_checker {
  FILE *out;
  int verbose;
  int threads;
  int violations;
  int plugin_errors;        /* failures the plugin reported correctly (see ql_check_plugin_error) */
  char *last_plugin_error;  /* the last one's message (malloc'd), printed once */
  const char *path;
  const struct ql_check_options *options;
  const struct ql_plugin *plugin; /* the loaded descriptor (after ql_plugin_load) */
  struct ql_ref_host *host;
  const char *scan_label; /* which scan the execution checks run on, for messages */
};

/* Report one violation: "VIOLATION <rule>: <what>". */
void ql_check_violation(struct ql_checker *ck, const char *rule, const char *fmt, ...) QL_PRINTF_FORMAT(3, 4);
/* A call that failed as the ABI allows, with the plugin's own message (a
 * stream's get_next on a corrupt chunk): not a violation, but the checks
 * needing its result are skipped. Printed as "PLUGIN ERROR <what>" and
 * counted, unless `message` equals the previous plugin error's (the same
 * failure met again by another scan of the same data). */
void ql_check_plugin_error(struct ql_checker *ck, const char *message, const char *fmt, ...) QL_PRINTF_FORMAT(3, 4);
/* An error a plugin call (named `call`) filled, if any, with the status it
 * returned: its message must be set, its status field equal `rc` when the
 * call failed, and its release must clear release (R5, R1). Reports each
 * breach (error.message, error.status, release.error), releases the error
 * inside the plugin's executor hooks, and leaves *err zeroed for reuse. */
void ql_check_error(struct ql_checker *ck, struct ql_error *err, int rc, const char *call);
/* In verbose mode, "check <what>". */
void ql_check_note(struct ql_checker *ck, const char *fmt, ...) QL_PRINTF_FORMAT(2, 3);

/* Call into the plugin bracketed by its executor hooks. */
#define QLC_CALL(ck, rc, expr)                                \
  do {                                                        \
    void *qlc_token_ = ql_plugin_enter((ck)->plugin);         \
    (rc) = (expr);                                            \
    ql_plugin_leave((ck)->plugin, qlc_token_);                \
  } while (0)
#define QLC_DO(ck, stmt)                                      \
  do {                                                        \
    void *qlc_token_ = ql_plugin_enter((ck)->plugin);         \
    stmt;                                                     \
    ql_plugin_leave((ck)->plugin, qlc_token_);                \
  } while (0)

/* Exports of the ELF file at path (exports.c). */
void ql_check_exports(struct ql_checker *ck, const char *path);
/* The same over a file's bytes (`path` only names it in messages). */
void ql_check_exports_image(struct ql_checker *ck, const unsigned char *data, size_t size, const char *path);
/* Version negotiation and the descriptor, through dlopen (descriptor.c).
 * Returns 0 if the plugin could be initialised at all. */
int ql_check_negotiation_and_descriptor(struct ql_checker *ck, const char *path);
/* Every catalogue item (tables.c, objects.c). */
void ql_check_table_provider(struct ql_checker *ck, const struct ql_item_info *item);
void ql_check_schema_provider(struct ql_checker *ck, const struct ql_item_info *item);
void ql_check_function(struct ql_checker *ck, const struct ql_item_info *item);
void ql_check_planner(struct ql_checker *ck, const struct ql_item_info *item);
/* The table-provider checks (members, schema, statistics, scans, rows) of
 * provider `p` that a table function call returned, named `name` in
 * reports; releases it (tables.c). */
void ql_check_provider_of_call(struct ql_checker *ck, const char *name, struct ql_table_provider *p);

/* Options for a provider from the specs ("name?k=v&..."), or none. */
int ql_check_spec_options(struct ql_checker *ck, const char *name, struct ql_table_spec *spec);

/* Internal to batches.c, shared with tables.c. */
int ql_check_batches_push(struct ql_batches *b, struct ArrowArray *batch, struct ql_error *error);
int ql_check_schema_equal(const struct ArrowSchema *a, const struct ArrowSchema *b);
/* Rows and an FNV-1a hash over every cell, for comparing two runs. */
uint64_t ql_check_batches_hash(const struct ql_batches *b);

#endif /* QLINK_CHECK_CHECKER_H */
