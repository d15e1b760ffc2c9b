/* SPDX-License-Identifier: Apache-2.0 */
/* qlink-check's report (checker.h): violations, a plugin's errors,
 * notes, and the --spec options a check asks for, shared by every check
 * (descriptor.c, exports.c, objects.c, tables.c) and the runner (check.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"

/* One report line: `prefix`, the formatted text, a newline. */
__attribute__((format(printf, 3, 0))) static void report_line(struct ql_checker *ck, const char *prefix,
                                                              const char *fmt, va_list args) {
  fputs(prefix, ck->out);
  vfprintf(ck->out, fmt, args);
  fputc('\n', ck->out);
}

void ql_check_violation(struct ql_checker *ck, const char *rule, const char *fmt, ...) {
  ck->violations++;
  fprintf(ck->out, "VIOLATION %s: ", rule);
  va_list args;
  va_start(args, fmt);
  report_line(ck, "", fmt, args);
  va_end(args);
}

void ql_check_plugin_error(struct ql_checker *ck, const char *message, const char *fmt, ...) {
  if (ck->last_plugin_error && strcmp(ck->last_plugin_error, message) == 0) return;
  free(ck->last_plugin_error);
  ck->last_plugin_error = strdup(message);
  ck->plugin_errors++;
  va_list args;
  va_start(args, fmt);
  report_line(ck, "PLUGIN ERROR ", fmt, args);
  va_end(args);
}

void ql_check_error(struct ql_checker *ck, struct ql_error *err, int rc, const char *call) {
  if (err->release == NULL) {
    memset(err, 0, sizeof *err);
    return;
  }
  if (err->message == NULL) ql_check_violation(ck, "error.message", "%s filled an error with a NULL message", call);
  if (rc != QL_OK && err->status != rc) {
    ql_check_violation(ck, "error.status", "%s returned %s but its error's status field is %s (%d)", call,
                       ql_status_name(rc), ql_status_name(err->status), (int)err->status);
  }
  QLC_DO(ck, err->release(err));
  if (err->release != NULL) ql_check_violation(ck, "release.error", "%s: error release left release set", call);
  memset(err, 0, sizeof *err); /* never call a plugin's release twice */
}

void ql_check_note(struct ql_checker *ck, const char *fmt, ...) {
  if (!ck->verbose) return;
  va_list args;
  va_start(args, fmt);
  report_line(ck, "check ", fmt, args);
  va_end(args);
}

int ql_check_spec_options(struct ql_checker *ck, const char *name, struct ql_table_spec *spec) {
  memset(spec, 0, sizeof *spec);
  const struct ql_check_options *o = ck->options;
  size_t len = strlen(name);
  for (int32_t i = 0; o && i < o->n_specs; i++) {
    const char *s = o->specs[i];
    if (strncmp(s, name, len) != 0 || (s[len] != '?' && s[len] != '\0')) continue;
    /* ql_table_spec_parse reads "PLUGIN/PROVIDER?..."; the plugin is known here. */
    size_t n = strlen(s) + 8;
    char *full = malloc(n);
    if (!full) return QL_ENOMEM;
    snprintf(full, n, "check/%s", s);
    struct ql_error err = {0};
    int rc = ql_table_spec_parse(full, spec, &err);
    free(full);
    if (rc != QL_OK) {
      ql_check_violation(ck, "check.spec", "cannot parse spec '%s': %s", s, ql_error_message(&err));
      ql_error_release(&err);
    }
    return rc;
  }
  return QL_OK;
}
