/* SPDX-License-Identifier: Apache-2.0 */
/* What DuckDB's settings let qlink load and read (access.c), and the text
 * helpers every file uses. Both builds read the settings their own way
 * (v1/bind.c, v2/bind.c) into a struct qd_settings. */
#ifndef QLINK_DUCKDB_ACCESS_H
#define QLINK_DUCKDB_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "qlink/lib/status.h"

struct qd_db;
struct ql_options;

/* DuckDB's settings as one bind reads them. */
struct qd_settings {
  int64_t threads;    /* <= 0: not known */
  char *memory_limit; /* DuckDB's text ("1.5 GiB"); NULL: not known */
  int locked;         /* lock_configuration; -1: not readable */
  int external;       /* enable_external_access; -1: not readable */
  char **dirs, **paths; /* allowed_directories, allowed_paths (read when external is 0) */
  int64_t n_dirs, n_paths;
};
void qd_settings_free(struct qd_settings *s);
/* Append a copy of `text` to a settings list; -1 without memory. */
int qd_settings_add(char ***list, int64_t *n, const char *text);
/* Every bind's first step: threads and memory_limit become the host's, and
 * the latches close (lock: the plugin directories sealed; no external
 * access: sealed too, no plugin loads, reads limited to the allowed lists).
 * Refused (fail closed) when DuckDB did not give the two switches. */
int qd_follow(struct qd_db *db, struct qd_settings *s, struct ql_error *err);
/* DuckDB's `threads` and `memory_limit` (its text, e.g. "1.5 GiB"; NULL:
 * unchanged) as the reference host's settings; threads <= 0: unchanged. */
void qd_apply_settings(struct qd_db *db, int64_t threads, const char *memory_limit);
/* With external access off: every `path` option must be a local path or
 * file:// URL inside the allowed lists (memory:// passes), else refused
 * naming the setting. */
int qd_check_options(struct qd_db *db, const struct ql_options *options, struct ql_error *err);
/* Serve the session's file:// store through the latches (qd_db_new). */
int qd_guard_files(struct qd_db *db, struct ql_error *err);

/* A malloc'd formatted string (NULL without memory), and the text to show
 * for one that could not be made. */
char *qd_printf(const char *fmt, ...) QL_PRINTF_FORMAT(1, 2);
const char *qd_text_or_oom(const char *s);

#endif /* QLINK_DUCKDB_ACCESS_H */
