/* SPDX-License-Identifier: Apache-2.0 */
/* ncf_header_check over hand-built classic headers: files libnetcdf
 * writes pass; every declared count larger than the file, negative
 * counts, absent lists with elements, unknown types, ranks over 1024 and
 * dangling dimension ids are QL_EDATA naming the byte; the item cap is
 * QL_ENOTSUP; the same bytes through a descriptor give the same answer. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncf.h"
#include "ql_test.h"
#include "qlink/lib/status.h"

struct bytes {
  uint8_t *p;
  size_t len, cap;
};

static void put(struct bytes *b, uint64_t v, int n) {
  if (b->len + (size_t)n > b->cap) {
    b->cap = (b->len + (size_t)n) * 2;
    b->p = realloc(b->p, b->cap);
    QL_CHECK(b->p != NULL);
  }
  for (int i = n - 1; i >= 0; i--) b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

static void zeros(struct bytes *b, int n) {
  for (int i = 0; i < n; i++) put(b, 0, 1);
}

/* "CDF" version, numrecs 0 */
static struct bytes start(int version) {
  struct bytes b = {0};
  put(&b, 0x43444600u | (uint64_t)version, 4);
  put(&b, 0, version == 5 ? 8 : 4);
  return b;
}

static void contains(const struct ql_error *err, const char *needle) {
  const char *m = err->release && err->message ? err->message : "(no message)";
  if (!strstr(m, needle)) fprintf(stderr, "message \"%s\" lacks \"%s\"\n", m, needle);
  QL_CHECK(strstr(m, needle) != NULL);
}

/* A one-character name: its count, then the character padded to 4 bytes. */
static void name1(struct bytes *b, char c) {
  put(b, 1, 4);
  put(b, (uint64_t)(uint8_t)c << 24, 4);
}

/* CDF-1 with no dimensions and one global attribute "a" of nc_type `type`
 * declaring `n` values (the values are the caller's to write). */
static struct bytes one_attribute(uint64_t type, uint64_t n) {
  struct bytes b = start(1);
  zeros(&b, 8);
  put(&b, 0x0C, 4);
  put(&b, 1, 4);
  name1(&b, 'a');
  put(&b, type, 4);
  put(&b, n, 4);
  return b;
}

/* CDF-1 with dimension x(3), no global attributes, and one variable "v"
 * of rank `rank` (its dimension ids and the rest are the caller's). */
static struct bytes one_variable(uint64_t rank) {
  struct bytes b = start(1);
  put(&b, 0x0A, 4);
  put(&b, 1, 4);
  name1(&b, 'x');
  put(&b, 3, 4);
  zeros(&b, 8);
  put(&b, 0x0B, 4);
  put(&b, 1, 4);
  name1(&b, 'v');
  put(&b, rank, 4);
  return b;
}

/* The check over memory and over a descriptor of the same bytes: both
 * give `code`, and an error message holding `needle`. */
static void expect(struct bytes *b, int code, const char *needle) {
  struct ql_error err = {0};
  QL_CHECK_INT(ncf_header_check(-1, b->p, b->len, "t.nc", &err), code);
  if (needle) contains(&err, needle);
  ql_error_release(&err);
  char path[] = "/tmp/qlink_header_test_XXXXXX";
  int fd = mkstemp(path);
  QL_CHECK(fd >= 0);
  QL_CHECK_INT((int)write(fd, b->p, b->len), (int)b->len);
  QL_CHECK_INT(ncf_header_check(fd, NULL, 0, "t.nc", &err), code);
  if (needle) contains(&err, needle);
  ql_error_release(&err);
  close(fd);
  unlink(path);
  free(b->p);
  *b = (struct bytes){0};
}

/* A file libnetcdf wrote in each classic version passes. */
static void test_written_files(void) {
  int modes[3] = {NC_CLASSIC_MODEL, NC_64BIT_OFFSET, NC_64BIT_DATA};
  for (int m = 0; m < 3; m++) {
    char path[] = "/tmp/qlink_header_written_XXXXXX";
    int fd = mkstemp(path);
    QL_CHECK(fd >= 0);
    int ncid, dt, dx, dims[2], v;
    QL_CHECK_INT(nc_create(path, (m ? modes[m] : 0) | NC_CLOBBER, &ncid), NC_NOERR);
    QL_CHECK_INT(nc_def_dim(ncid, "time", NC_UNLIMITED, &dt), NC_NOERR);
    QL_CHECK_INT(nc_def_dim(ncid, "x", 3, &dx), NC_NOERR);
    dims[0] = dt, dims[1] = dx;
    QL_CHECK_INT(nc_def_var(ncid, "v", m == 2 ? NC_UINT64 : NC_DOUBLE, 2, dims, &v), NC_NOERR);
    QL_CHECK_INT(nc_put_att_text(ncid, NC_GLOBAL, "title", 5, "hello"), NC_NOERR);
    short s[3] = {1, 2, 3};
    QL_CHECK_INT(nc_put_att_short(ncid, v, "valid", NC_SHORT, 3, s), NC_NOERR);
    QL_CHECK_INT(nc_close(ncid), NC_NOERR);
    struct ql_error err = {0};
    QL_CHECK_OK(ncf_header_check(fd, NULL, 0, "written.nc", &err), err);
    close(fd);
    unlink(path);
  }
}

static void test_hostile(void) {
  /* 40 bytes declaring 791,621,423 dimensions (found by fuzzing: libnetcdf
   * 4.9 crashes on it) */
  struct bytes b = start(5);
  put(&b, 0x0A, 4);
  put(&b, 0x2f2f2f2f, 8);
  put(&b, 0x0105000000000000ull, 8);
  put(&b, 0, 4);
  expect(&b, QL_EDATA, "header byte 16: 791621423 dimensions declared, more than the 12 bytes left can hold");
  /* a 2 GiB dimension name */
  b = start(1);
  put(&b, 0x0A, 4);
  put(&b, 1, 4);
  put(&b, 0x7fffffff, 4);
  zeros(&b, 16);
  expect(&b, QL_EDATA, "header byte 16: 2147483647 bytes of dimension name declared, more than the 16 bytes left");
  /* a negative count (CDF-1's NON_NEG is a non-negative INT) */
  b = start(1);
  put(&b, 0x0A, 4);
  put(&b, 0x80000000u, 4);
  expect(&b, QL_EDATA, "header byte 12: dimensions is negative");
  /* ABSENT with elements */
  b = start(2);
  put(&b, 0, 4);
  put(&b, 1, 4);
  zeros(&b, 16);
  expect(&b, QL_EDATA, "an absent dimensions list with 1 elements");
  /* neither ABSENT nor the tag */
  b = start(1);
  put(&b, 0x0B, 4);
  put(&b, 0, 4);
  expect(&b, QL_EDATA, "expected the dimensions tag, found 0xb");
  /* an attribute of NC_STRING (12): not a classic type */
  b = one_attribute(12, 0);
  expect(&b, QL_EDATA, "attribute type 12 is not a CDF-1 type");
  /* attribute values past the end: 3 doubles in 16 bytes */
  b = one_attribute(6, 3);
  zeros(&b, 16);
  expect(&b, QL_EDATA, "3 attribute values declared, more than the 16 bytes left");
  /* a variable over dimension 1 of 1 */
  b = one_variable(1);
  put(&b, 1, 4);
  zeros(&b, 8);
  put(&b, 5, 4);
  put(&b, 12, 4);
  put(&b, 100, 4);
  expect(&b, QL_EDATA, "dimension id 1 of 1 dimensions");
  /* a variable of rank 1025 */
  b = one_variable(1025);
  zeros(&b, 4 * (1025 + 8));
  expect(&b, QL_EDATA, "a variable of 1025 dimensions (at most 1024)");
  /* truncated inside a fixed field */
  b = start(5);
  zeros(&b, 2);
  expect(&b, QL_EDATA, "header truncated at byte 12 (dimensions)");
  /* a CDF version that does not exist */
  b = start(3);
  expect(&b, QL_EDATA, "CDF version 3 is not 1, 2 or 5");
  /* not classic: left to HDF5 and libnetcdf */
  b = (struct bytes){0};
  put(&b, 0x89484446, 4);
  expect(&b, QL_OK, NULL);
}

/* Over NCF_MAX_HEADER_ITEMS dimensions, each present in the file. */
static void test_item_cap(void) {
  int64_t n = NCF_MAX_HEADER_ITEMS + 1;
  struct bytes b = start(1);
  put(&b, 0x0A, 4);
  put(&b, (uint64_t)n, 4);
  for (int64_t i = 0; i < n; i++) {
    put(&b, 1, 4);
    put(&b, 0x64000000, 4);
    put(&b, 1, 4);
  }
  zeros(&b, 16);
  expect(&b, QL_ENOTSUP, "over 4194304 dimensions, attributes and variables in all");
}

int main(void) {
  test_written_files();
  test_hostile();
  test_item_cap();
  QL_TEST_END();
}
