/* SPDX-License-Identifier: Apache-2.0 */
/* Status names, SQLSTATEs, errno mapping and struct ql_error helpers.
 *
 * Messages are always heap-allocated to their full length (no fixed buffer
 * that truncates). When even that allocation fails the error still carries
 * its status, with a static message and a release that frees nothing. */
#include "qlink/lib/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ql_status_row {
  const char *name;
  const char *sqlstate;
  int errno_code;
};

/* Indexed by enum ql_status; SQLSTATEs as include/qlink/error.h lists them.
 * errno codes are distinct per status so ql_status_from_errno inverts them. */
static const struct ql_status_row ql_status_table[QL_ESTATUS_COUNT_] = {
    [QL_OK] = {"QL_OK", "00000", 0},
    [QL_EINVAL] = {"QL_EINVAL", "22023", EINVAL},
    [QL_ENOTFOUND] = {"QL_ENOTFOUND", "42704", ENOENT},
    [QL_ENOTSUP] = {"QL_ENOTSUP", "0A000", ENOTSUP},
    [QL_ENOMEM] = {"QL_ENOMEM", "53200", ENOMEM},
    [QL_ERESOURCES] = {"QL_ERESOURCES", "53000", ENOSPC},
    [QL_EIO] = {"QL_EIO", "58030", EIO},
    [QL_EDATA] = {"QL_EDATA", "22000", EBADMSG},
    [QL_EVERSION] = {"QL_EVERSION", "0A000", EPROTO},
    [QL_ECANCELLED] = {"QL_ECANCELLED", "57014", ECANCELED},
    [QL_ESTATE] = {"QL_ESTATE", "55000", EALREADY},
    [QL_EINTERNAL] = {"QL_EINTERNAL", "XX000", ENOTRECOVERABLE},
    [QL_EOVERFLOW] = {"QL_EOVERFLOW", "22003", EOVERFLOW},
};

static int ql_status_known(int status) { return status >= 0 && status < QL_ESTATUS_COUNT_; }

const char *ql_status_name(int status) {
  return ql_status_known(status) ? ql_status_table[status].name : "QL_UNKNOWN_STATUS";
}

const char *ql_status_sqlstate(int status) {
  /* An unknown status is still a failure: report it as internal. */
  return ql_status_known(status) ? ql_status_table[status].sqlstate : "XX000";
}

int ql_status_to_errno(int status) {
  return ql_status_known(status) ? ql_status_table[status].errno_code : ENOTRECOVERABLE;
}

int ql_status_from_errno(int code) {
  if (code == 0) return QL_OK;
  for (int s = 1; s < QL_ESTATUS_COUNT_; s++) {
    if (ql_status_table[s].errno_code == code) return s;
  }
  /* Common codes other producers use for the same classes. */
  switch (code) {
    case ERANGE:
      return QL_EOVERFLOW;
    case ENOSYS:
      return QL_ENOTSUP;
    default:
      return QL_EINTERNAL;
  }
}

/* ---- struct ql_error */

static void ql_error_release_heap(struct ql_error *self) {
  free(self->message);
  self->message = NULL;
  self->release = NULL;
}

static void ql_error_release_static(struct ql_error *self) {
  self->message = NULL;
  self->release = NULL;
}

static void ql_error_fill(struct ql_error *error, int status, char *message, int heap) {
  static char oom_message[] = "out of memory while formatting an error message";
  error->struct_size = (uint32_t)sizeof(struct ql_error);
  error->status = status;
  memcpy(error->sqlstate, ql_status_sqlstate(status), 6);
  memset(error->reserved_, 0, sizeof(error->reserved_));
  error->private_data = NULL;
  if (heap && message) {
    error->message = message;
    error->release = ql_error_release_heap;
  } else {
    error->message = oom_message;
    error->release = ql_error_release_static;
  }
}

/* Messages are one line (error.h): newlines become spaces. */
static void ql_flatten_lines(char *s) {
  for (; *s; s++) {
    if (*s == '\n' || *s == '\r') *s = ' ';
  }
}

static char *ql_vformat(const char *fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return NULL;
  char *buf = malloc((size_t)n + 1);
  if (!buf) return NULL;
  vsnprintf(buf, (size_t)n + 1, fmt, args);
  ql_flatten_lines(buf);
  return buf;
}

int ql_error_setv(struct ql_error *error, int status, const char *fmt, va_list args) {
  if (!error) return status;
  ql_error_release(error);
  char *message = ql_vformat(fmt ? fmt : "", args);
  ql_error_fill(error, status, message, 1);
  return status;
}

int ql_error_set(struct ql_error *error, int status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ql_error_setv(error, status, fmt, args);
  va_end(args);
  return status;
}

int ql_error_prefix(struct ql_error *error, const char *fmt, ...) {
  if (!error || !error->release) return QL_EINTERNAL;
  int status = error->status;
  va_list args;
  va_start(args, fmt);
  char *context = ql_vformat(fmt ? fmt : "", args);
  va_end(args);
  if (!context) return status; /* keep the original message rather than lose it */
  const char *old = error->message ? error->message : "";
  size_t n = strlen(context) + 2 + strlen(old) + 1;
  char *joined = malloc(n);
  if (joined) snprintf(joined, n, "%s: %s", context, old);
  free(context);
  if (!joined) return status;
  /* The old message may belong to another library: free it through its own
   * release, keeping the status and SQLSTATE it reported. */
  char sqlstate[6];
  memcpy(sqlstate, error->sqlstate, 6);
  error->release(error);
  ql_error_fill(error, status, joined, 1);
  if (sqlstate[0] != '\0') memcpy(error->sqlstate, sqlstate, 6);
  return status;
}

void ql_error_release(struct ql_error *error) {
  if (error && error->release) error->release(error);
}

void ql_error_move(struct ql_error *dst, struct ql_error *src) {
  if (!dst || dst == src) return;
  ql_error_release(dst);
  if (!src) return;
  *dst = *src;
  src->release = NULL;
  src->message = NULL;
}

const char *ql_error_message(const struct ql_error *error) {
  if (!error || !error->release || !error->message) return "";
  return error->message;
}
