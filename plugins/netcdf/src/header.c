/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: a classic (CDF-1, CDF-2, CDF-5) header checked against the
 * bytes the file holds before libnetcdf parses it (ncf.h:
 * ncf_header_check). Format: "The NetCDF Classic Format Specification"
 * (netCDF-C's docs/file_format_specifications.md), big-endian throughout;
 * CDF-5 widens every count, length and dimension id (NON_NEG) to 8 bytes,
 * CDF-2 and CDF-5 widen `begin` (OFFSET) to 8.
 *
 * Why: libnetcdf 4.9 allocates what a header declares before it reads it,
 * and a failed allocation (a 40-byte file declaring 2^30 dimensions) frees
 * a table it never made: the process dies. Here every declared count must
 * fit in the bytes left in the file, so libnetcdf's allocations stay
 * proportional to the file's size. The walk reads the header only, through
 * a 64 KiB window (pread on file:// descriptors). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncf.h"
#include "qlink/lib/status.h"

enum { TAG_ABSENT = 0, TAG_DIMENSION = 0x0A, TAG_VARIABLE = 0x0B, TAG_ATTRIBUTE = 0x0C };
enum { WINDOW = 65536, MAX_VAR_DIMS = 1024 /* NC_MAX_VAR_DIMS */ };

struct cursor {
  int fd; /* >= 0: read with pread; else `mem` */
  const uint8_t *mem;
  uint64_t size; /* the file's bytes */
  uint64_t pos;  /* the next byte to read */
  int version;   /* 1, 2 or 5 */
  int64_t items; /* dimensions, attributes and variables so far */
  const char *label;
  uint64_t at; /* window: file offset of buf[0], bytes held */
  size_t held;
  uint8_t buf[WINDOW];
};

static int truncated(struct cursor *c, const char *what, struct ql_error *error) {
  return ql_error_set(error, QL_EDATA, "netcdf file %s: header truncated at byte %llu (%s)", c->label,
                      (unsigned long long)c->pos, what);
}

/* `n` (<= 8) bytes at the cursor, big-endian, as an unsigned number. */
static int take(struct cursor *c, size_t n, const char *what, uint64_t *out, struct ql_error *error) {
  if (c->pos > c->size || c->size - c->pos < n) return truncated(c, what, error);
  const uint8_t *p;
  if (c->fd < 0) {
    p = c->mem + c->pos;
  } else {
    if (c->pos < c->at || c->pos + n > c->at + c->held) {
      uint64_t want = c->size - c->pos < WINDOW ? c->size - c->pos : WINDOW;
      ssize_t got = pread(c->fd, c->buf, (size_t)want, (off_t)c->pos);
      if (got < (ssize_t)n) {
        return ql_error_set(error, QL_EIO, "netcdf file %s: reading its header: %s", c->label,
                            got < 0 ? strerror(errno) : "file shorter than its size");
      }
      c->at = c->pos;
      c->held = (size_t)got;
    }
    p = c->buf + (c->pos - c->at);
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v << 8 | p[i];
  c->pos += n;
  *out = v;
  return QL_OK;
}

/* The bytes of a NON_NEG. The smallest elements follow from it: a
 * one-character name is a NON_NEG and four bytes; a dim adds its length;
 * an attr its type and count; a var its rank, an absent attribute list
 * (a tag and a NON_NEG), its type, vsize and begin. */
static uint64_t nn(const struct cursor *c) { return c->version == 5 ? 8 : 4; }

/* A NON_NEG: 4 bytes (a non-negative INT) or 8 in CDF-5 (a non-negative INT64). */
static int non_neg(struct cursor *c, const char *what, uint64_t *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(take(c, nn(c), what, out, error));
  if (*out > (c->version == 5 ? (uint64_t)INT64_MAX : (uint64_t)INT32_MAX)) {
    return ql_error_set(error, QL_EDATA, "netcdf file %s: header byte %llu: %s is negative", c->label,
                        (unsigned long long)(c->pos - nn(c)), what);
  }
  return QL_OK;
}

static int skip(struct cursor *c, uint64_t n, const char *what, struct ql_error *error) {
  if (c->pos > c->size || c->size - c->pos < n) return truncated(c, what, error);
  c->pos += n;
  return QL_OK;
}

/* A declared count of elements each at least `min_bytes` long: refused
 * unless that many fit in what is left of the file. (A list's elements
 * also count towards NCF_MAX_HEADER_ITEMS: add_items.) */
static int count(struct cursor *c, const char *what, uint64_t min_bytes, uint64_t *n, struct ql_error *error) {
  QL_RETURN_NOT_OK(non_neg(c, what, n, error));
  uint64_t left = c->size - c->pos;
  if (*n > left / min_bytes) {
    return ql_error_set(
        error, QL_EDATA, "netcdf file %s: header byte %llu: %llu %s declared, more than the %llu bytes left can hold",
        c->label, (unsigned long long)(c->pos - nn(c)), (unsigned long long)*n, what, (unsigned long long)left);
  }
  return QL_OK;
}

static int add_items(struct cursor *c, uint64_t n, const char *what, struct ql_error *error) {
  if (n > (uint64_t)(NCF_MAX_HEADER_ITEMS - c->items)) {
    return ql_error_set(error, QL_ENOTSUP,
                        "netcdf file %s: header declares over %lld dimensions, attributes and variables in all (%s)",
                        c->label, (long long)NCF_MAX_HEADER_ITEMS, what);
  }
  c->items += (int64_t)n;
  return QL_OK;
}

static uint64_t padded(uint64_t n) { return (n + 3) / 4 * 4; }

/* name = nelems namestring (padded to 4 bytes); at least one character. */
static int name(struct cursor *c, const char *what, struct ql_error *error) {
  uint64_t len;
  char bytes[64];
  snprintf(bytes, sizeof(bytes), "bytes of %s", what);
  QL_RETURN_NOT_OK(count(c, bytes, 1, &len, error));
  if (len == 0)
    return ql_error_set(error, QL_EDATA, "netcdf file %s: header byte %llu: empty %s", c->label,
                        (unsigned long long)c->pos, what);
  return skip(c, padded(len), what, error);
}

/* The size of one value of an nc_type code, or 0 if the version has no such type. */
static uint64_t type_size(int version, uint64_t type) {
  static const uint8_t sizes[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
  if (type < 1 || type > (version == 5 ? 11u : 6u)) return 0;
  return sizes[type];
}

static int nc_type(struct cursor *c, const char *what, uint64_t *size, struct ql_error *error) {
  uint64_t type;
  QL_RETURN_NOT_OK(take(c, 4, what, &type, error));
  if (!(*size = type_size(c->version, type))) {
    return ql_error_set(error, QL_EDATA, "netcdf file %s: header byte %llu: %s %llu is not a CDF-%d type", c->label,
                        (unsigned long long)(c->pos - 4), what, (unsigned long long)type, c->version);
  }
  return QL_OK;
}

/* A list's tag and count: ABSENT (zero, zero) or `tag` nelems. The
 * smallest element is `min_bytes` long. */
static int list(struct cursor *c, uint64_t tag, const char *what, uint64_t min_bytes, uint64_t *n,
                struct ql_error *error) {
  uint64_t got;
  QL_RETURN_NOT_OK(take(c, 4, what, &got, error));
  if (got != TAG_ABSENT && got != tag) {
    return ql_error_set(error, QL_EDATA, "netcdf file %s: header byte %llu: expected the %s tag, found 0x%llx",
                        c->label, (unsigned long long)(c->pos - 4), what, (unsigned long long)got);
  }
  QL_RETURN_NOT_OK(count(c, what, min_bytes, n, error));
  if (got == TAG_ABSENT && *n != 0) {
    return ql_error_set(error, QL_EDATA, "netcdf file %s: header byte %llu: an absent %s list with %llu elements",
                        c->label, (unsigned long long)c->pos, what, (unsigned long long)*n);
  }
  return add_items(c, *n, what, error);
}

static int att_list(struct cursor *c, struct ql_error *error) {
  uint64_t n;
  QL_RETURN_NOT_OK(list(c, TAG_ATTRIBUTE, "attributes", nn(c) + 4 + 4 + nn(c), &n, error));
  for (uint64_t i = 0; i < n; i++) {
    uint64_t size, values;
    QL_RETURN_NOT_OK(name(c, "attribute name", error));
    QL_RETURN_NOT_OK(nc_type(c, "attribute type", &size, error));
    QL_RETURN_NOT_OK(count(c, "attribute values", size, &values, error));
    QL_RETURN_NOT_OK(skip(c, padded(values * size), "attribute values", error));
  }
  return QL_OK;
}

static int walk(struct cursor *c, struct ql_error *error);

int ncf_header_check(int fd, const uint8_t *mem, uint64_t size, const char *label, struct ql_error *error) {
  struct cursor *c = calloc(1, sizeof(*c));
  if (!c) return ql_error_set(error, QL_ENOMEM, "out of memory");
  c->fd = fd;
  c->mem = mem;
  c->size = size;
  c->label = label ? label : "(unnamed)";
  int rc = walk(c, error);
  free(c);
  return rc;
}

static int walk(struct cursor *c, struct ql_error *error) {
  int fd = c->fd;
  if (fd >= 0) {
    struct stat st;
    if (fstat(fd, &st) != 0) return ql_error_set(error, QL_EIO, "netcdf file %s: %s", c->label, strerror(errno));
    c->size = (uint64_t)st.st_size;
  }
  uint64_t magic;
  if (c->size < 4) return QL_OK; /* not a classic file: libnetcdf says what it is not */
  QL_RETURN_NOT_OK(take(c, 4, "magic", &magic, error));
  if ((magic >> 8) != 0x434446 /* "CDF" */) return QL_OK; /* HDF5 (netCDF-4) or not netCDF */
  c->version = (int)(magic & 0xff);
  if (c->version != 1 && c->version != 2 && c->version != 5) {
    return ql_error_set(error, QL_EDATA, "netcdf file %s: CDF version %d is not 1, 2 or 5", c->label, c->version);
  }
  uint64_t n;
  QL_RETURN_NOT_OK(take(c, nn(c), "numrecs", &n, error));
  QL_RETURN_NOT_OK(list(c, TAG_DIMENSION, "dimensions", nn(c) + 4 + nn(c), &n, error));
  uint64_t ndims = n;
  for (uint64_t i = 0; i < ndims; i++) {
    QL_RETURN_NOT_OK(name(c, "dimension name", error));
    QL_RETURN_NOT_OK(non_neg(c, "dimension length", &n, error));
  }
  QL_RETURN_NOT_OK(att_list(c, error));
  uint64_t nvars;
  uint64_t offset = c->version == 1 ? 4 : 8;
  QL_RETURN_NOT_OK(
      list(c, TAG_VARIABLE, "variables", (nn(c) + 4) + nn(c) + (4 + nn(c)) + 4 + nn(c) + offset, &nvars, error));
  for (uint64_t i = 0; i < nvars; i++) {
    uint64_t rank, size, dimid;
    QL_RETURN_NOT_OK(name(c, "variable name", error));
    QL_RETURN_NOT_OK(count(c, "variable dimensions", nn(c), &rank, error));
    if (rank > MAX_VAR_DIMS) {
      return ql_error_set(error, QL_EDATA,
                          "netcdf file %s: header byte %llu: a variable of %llu dimensions (at most %d)", c->label,
                          (unsigned long long)c->pos, (unsigned long long)rank, MAX_VAR_DIMS);
    }
    for (uint64_t d = 0; d < rank; d++) {
      QL_RETURN_NOT_OK(non_neg(c, "dimension id", &dimid, error));
      if (dimid >= ndims) {
        return ql_error_set(error, QL_EDATA, "netcdf file %s: header byte %llu: dimension id %llu of %llu dimensions",
                            c->label, (unsigned long long)(c->pos - nn(c)), (unsigned long long)dimid,
                            (unsigned long long)ndims);
      }
    }
    QL_RETURN_NOT_OK(att_list(c, error));
    QL_RETURN_NOT_OK(nc_type(c, "variable type", &size, error));
    QL_RETURN_NOT_OK(take(c, nn(c), "vsize", &n, error));
    QL_RETURN_NOT_OK(take(c, offset, "begin", &n, error));
  }
  return QL_OK;
}
