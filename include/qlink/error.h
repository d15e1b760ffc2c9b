/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: status codes and the error struct.
 *
 * Every call across the qlink boundary returns an `int` status: QL_OK (0) or
 * one of the codes below. Details travel in a caller-owned `struct ql_error`
 * (NULL allowed where a declaration says so). No call across the boundary may
 * unwind (C++ exceptions, Rust panics) or longjmp: adapters catch at every edge
 * and turn the failure into a status plus an error.
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_ERROR_H
#define QLINK_ERROR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. Values are never renumbered; new codes go at the end.
 * Each names a class of failure a host can act on without parsing messages. */
enum ql_status {
  QL_OK = 0,
  QL_EINVAL = 1,       /* a bad argument or option: the caller's mistake (SQLSTATE 22023) */
  QL_ENOTFOUND = 2,    /* a named thing (table, option, object, function) does not exist (42704) */
  QL_ENOTSUP = 3,      /* valid request the callee does not support (0A000) */
  QL_ENOMEM = 4,       /* the process could not allocate (53200) */
  QL_ERESOURCES = 5,   /* a memory pool or other host limit said no (53000, DataFusion's ResourcesExhausted) */
  QL_EIO = 6,          /* an object store or file read failed (58030) */
  QL_EDATA = 7,        /* input data is malformed or corrupt (22000) */
  QL_EVERSION = 8,     /* ABI version mismatch: the callee cannot serve this version (0A000) */
  QL_ECANCELLED = 9,   /* the task context's cancellation flag was set (57014) */
  QL_ESTATE = 10,      /* a call out of order: use after release, second release where forbidden (55000) */
  QL_EINTERNAL = 11,   /* a bug in the callee, including a caught panic or exception (XX000) */
  QL_EOVERFLOW = 12,   /* a value or size does not fit (22003) */
  QL_ESTATUS_COUNT_ = 13 /* not a status: one past the last; grows as codes are added */
};

/* Detail of a failed call.
 *
 * Ownership: the caller allocates the struct (usually on its stack), zero-
 * initialised or with `release == NULL`. The callee fills it on failure and
 * sets `release`; the caller calls `release` once it has read the message.
 * `release` frees `message` and sets `release` to NULL; calling it on an
 * unset error is not allowed, so check `release != NULL` first.
 *
 * Lifetime: the release callback lives in the library that filled the error.
 * Release errors before unloading that library.
 *
 * Passing NULL for `error` is allowed on every call of the ABI: the callee
 * then only returns the status.
 *
 * Growth: `struct_size` is the size the filler knew (sizeof at its ABI
 * version); fields after it must not be read. New fields go at the end.
 */
struct ql_error {
  uint32_t struct_size;
  int32_t status;          /* the enum ql_status returned with this error */
  char sqlstate[6];        /* five SQLSTATE characters and NUL, e.g. "53000"; "" if none */
  char reserved_[2];
  char *message;           /* NUL-terminated UTF-8, one line, names what was wrong; never NULL once set */
  void (*release)(struct ql_error *self);
  void *private_data;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_ERROR_H */
