/* SPDX-License-Identifier: Apache-2.0 */
/* The Arrow -> SQLite type mapping (cells.h), cell by cell. */
#include "cells.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static struct qls_buf g_buf;

/* A one-column fixed-width array of `n` values of `width` bytes with the
 * given validity (NULL: none null) and its schema. */
static void fixed(const char *format, const void *values, size_t width, int64_t n, const uint8_t *validity,
                  struct ArrowSchema *s, struct ArrowArray *a) {
  size_t bytes = width ? width * (size_t)n : (size_t)(n + 7) / 8; /* width 0: bit-packed */
  void *data = malloc(bytes + 1);
  memcpy(data, values, bytes);
  uint8_t *bits = NULL;
  if (validity) {
    bits = malloc(1);
    *bits = *validity;
  }
  ql_schema_init(s, format, "c", ARROW_FLAG_NULLABLE, NULL);
  ql_array_init_fixed(a, n, -1, bits, data, NULL);
}

static struct qls_cell cell_at(const struct ArrowSchema *s, const struct ArrowArray *a, int64_t i) {
  struct qls_cell c;
  struct ql_error err = {0};
  int rc = qls_cell_read(s, a, i, &c, &g_buf, &err);
  if (rc != QL_OK) {
    fprintf(stderr, "qls_cell_read: %s\n", ql_error_message(&err));
    ql_error_release(&err);
    c.klass = -1;
  }
  return c;
}

static void check_text(struct qls_cell c, const char *want) {
  QL_CHECK_INT(c.klass, QLS_TEXT);
  char got[256] = {0};
  if (c.klass == QLS_TEXT && c.size < 255) memcpy(got, c.data, (size_t)c.size);
  QL_CHECK_STR(got, want);
}

static void test_integers(void) {
  struct ArrowSchema s;
  struct ArrowArray a;
  int8_t v8[] = {-128, 127};
  uint8_t valid = 0x1;
  fixed("c", v8, 1, 2, &valid, &s, &a);
  struct qls_cell c = cell_at(&s, &a, 0);
  QL_CHECK_INT(c.klass, QLS_INTEGER);
  QL_CHECK_INT(c.i, -128);
  QL_CHECK_INT(cell_at(&s, &a, 1).klass, QLS_NULL);
  ql_array_release(&a);
  ql_schema_release(&s);
  uint64_t u[] = {42, UINT64_MAX};
  fixed("L", u, 8, 2, NULL, &s, &a);
  QL_CHECK_INT(cell_at(&s, &a, 0).i, 42);
  c = cell_at(&s, &a, 1);
  QL_CHECK_INT(c.klass, QLS_REAL);
  QL_CHECK(c.f == 18446744073709551615.0);
  ql_array_release(&a);
  ql_schema_release(&s);
  uint8_t bools = 0x2; /* false, true */
  fixed("b", &bools, 0, 2, NULL, &s, &a);
  QL_CHECK_INT(cell_at(&s, &a, 0).i, 0);
  QL_CHECK_INT(cell_at(&s, &a, 1).i, 1);
  QL_CHECK_STR(qls_decltype(&s), "INTEGER");
  ql_array_release(&a);
  ql_schema_release(&s);
}

static void test_floats(void) {
  struct ArrowSchema s;
  struct ArrowArray a;
  double d[] = {1.5, NAN, -INFINITY};
  fixed("g", d, 8, 3, NULL, &s, &a);
  QL_CHECK(cell_at(&s, &a, 0).f == 1.5);
  QL_CHECK_INT(cell_at(&s, &a, 1).klass, QLS_NULL); /* NaN as NULL */
  QL_CHECK(isinf(cell_at(&s, &a, 2).f));
  QL_CHECK_STR(qls_decltype(&s), "REAL");
  ql_array_release(&a);
  ql_schema_release(&s);
  uint16_t h[] = {0x3c00, 0xc000}; /* 1.0, -2.0 */
  fixed("e", h, 2, 2, NULL, &s, &a);
  QL_CHECK(cell_at(&s, &a, 0).f == 1.0);
  QL_CHECK(cell_at(&s, &a, 1).f == -2.0);
  ql_array_release(&a);
  ql_schema_release(&s);
}

static void test_strings(void) {
  struct ArrowSchema s;
  struct ArrowArray a;
  int32_t *off = malloc(3 * sizeof *off);
  off[0] = 0;
  off[1] = 3;
  off[2] = 5;
  char *data = malloc(5);
  memcpy(data, "abcde", 5);
  ql_schema_init(&s, "u", "s", 0, NULL);
  ql_array_init_binary(&a, 2, 0, NULL, off, data, NULL);
  struct qls_cell c = cell_at(&s, &a, 1);
  check_text(c, "de");
  QL_CHECK(c.data == a.buffers[2] + 3); /* read in place */
  ql_array_release(&a);
  ql_schema_release(&s);
  off = malloc(2 * sizeof *off);
  off[0] = 0;
  off[1] = 2;
  data = malloc(2);
  memcpy(data, "\x00\xff", 2);
  ql_schema_init(&s, "z", "b", 0, NULL);
  ql_array_init_binary(&a, 1, 0, NULL, off, data, NULL);
  c = cell_at(&s, &a, 0);
  QL_CHECK_INT(c.klass, QLS_BLOB);
  QL_CHECK_INT(c.size, 2);
  QL_CHECK_STR(qls_decltype(&s), "BLOB");
  ql_array_release(&a);
  ql_schema_release(&s);
}

static void test_temporal(void) {
  struct ArrowSchema s;
  struct ArrowArray a;
  int64_t ts[] = {1577836800000000LL, 1577836800123450LL, -1LL};
  fixed("tsu:UTC", ts, 8, 3, NULL, &s, &a);
  check_text(cell_at(&s, &a, 0), "2020-01-01 00:00:00");
  check_text(cell_at(&s, &a, 1), "2020-01-01 00:00:00.12345");
  check_text(cell_at(&s, &a, 2), "1969-12-31 23:59:59.999999");
  QL_CHECK_STR(qls_decltype(&s), "TEXT");
  ql_array_release(&a);
  ql_schema_release(&s);
  int64_t ns[] = {1000000001LL};
  fixed("tsn:", ns, 8, 1, NULL, &s, &a);
  check_text(cell_at(&s, &a, 0), "1970-01-01 00:00:01.000000001");
  ql_array_release(&a);
  ql_schema_release(&s);
  int32_t days[] = {18262, -719528}; /* 2020-01-01, 0000-01-01 */
  fixed("tdD", days, 4, 2, NULL, &s, &a);
  check_text(cell_at(&s, &a, 0), "2020-01-01");
  check_text(cell_at(&s, &a, 1), "0000-01-01");
  ql_array_release(&a);
  ql_schema_release(&s);
  int64_t dur[] = {3, INT64_MAX};
  fixed("tDs", dur, 8, 2, NULL, &s, &a);
  QL_CHECK_INT(cell_at(&s, &a, 0).i, 3000000000LL);
  struct qls_cell c;
  struct ql_error err = {0};
  QL_CHECK_INT(qls_cell_read(&s, &a, 1, &c, &g_buf, &err), QL_EOVERFLOW);
  ql_error_release(&err);
  ql_array_release(&a);
  ql_schema_release(&s);
  int32_t secs[] = {3661};
  fixed("tts", secs, 4, 1, NULL, &s, &a);
  check_text(cell_at(&s, &a, 0), "01:01:01");
  ql_array_release(&a);
  ql_schema_release(&s);
  /* parsing back what SQLite users write */
  int64_t out = 0;
  QL_CHECK_INT(qls_parse_timestamp("2020-01-01", 10, 'u', &out), 0);
  QL_CHECK_INT(out, 1577836800000000LL);
  QL_CHECK_INT(qls_parse_timestamp("2020-01-01 00:00:00.5", 21, 'm', &out), 0);
  QL_CHECK_INT(out, 1577836800500LL);
  QL_CHECK_INT(qls_parse_timestamp("2020-01-01T00:00:00", 19, 'u', &out), -1);
  QL_CHECK_INT(qls_parse_timestamp("2020-13-01", 10, 'u', &out), -1);
}

static void test_decimal(void) {
  struct ArrowSchema s;
  struct ArrowArray a;
  uint64_t w[] = {1250, 0, (uint64_t)-1250, UINT64_MAX, 5, 0};
  fixed("d:10,2", w, 16, 3, NULL, &s, &a);
  check_text(cell_at(&s, &a, 0), "12.50");
  check_text(cell_at(&s, &a, 1), "-12.50");
  check_text(cell_at(&s, &a, 2), "0.05");
  QL_CHECK_STR(qls_decltype(&s), "TEXT");
  ql_array_release(&a);
  ql_schema_release(&s);
}

static void test_nested(void) {
  /* struct<a: int64, b: list<float64>> of one row {a: 7, b: [1.5, NaN]} */
  struct ArrowSchema s, *la, *lb;
  struct ArrowArray a;
  ql_schema_init_struct(&s, "r", 2, NULL);
  ql_schema_init(s.children[0], "l", "a", 0, NULL);
  lb = s.children[1];
  memset(lb, 0, sizeof *lb);
  ql_schema_init_struct(lb, "b", 1, NULL);
  /* turn the struct schema into a list: rebuild its format through a copy */
  ql_schema_release(lb);
  struct ArrowSchema list_item;
  ql_schema_init(&list_item, "g", "item", ARROW_FLAG_NULLABLE, NULL);
  ql_schema_init_struct(lb, "b", 1, NULL);
  ql_schema_release(lb->children[0]);
  ql_schema_move(&list_item, lb->children[0]);
  la = lb;
  /* ql_schema_init_struct wrote "+s": lists need "+l". The format string is
   * owned by the schema: write the list format into it (same length). */
  ((char *)la->format)[1] = 'l';
  ql_array_init_struct(&a, 1, 2, NULL);
  int64_t *av = malloc(8);
  *av = 7;
  ql_array_init_fixed(a.children[0], 1, 0, NULL, av, NULL);
  /* the list: offsets [0, 2] over a child of 2 doubles */
  struct ArrowArray *list = a.children[1];
  ql_array_init_struct(list, 1, 1, NULL);
  int32_t *off = malloc(2 * sizeof *off);
  off[0] = 0;
  off[1] = 2;
  double *dv = malloc(16);
  dv[0] = 1.5;
  dv[1] = NAN;
  ql_array_init_fixed(list->children[0], 2, 0, NULL, dv, NULL);
  /* the struct builder made one buffer (validity); a list has two */
  const void **bufs = malloc(2 * sizeof *bufs);
  bufs[0] = NULL;
  bufs[1] = off;
  const void **old = list->buffers;
  list->buffers = bufs;
  list->n_buffers = 2;
  QL_CHECK_STR(qls_decltype(&s), "TEXT");
  check_text(cell_at(&s, &a, 0), "{\"a\":7,\"b\":[1.5,null]}");
  list->buffers = old;
  list->n_buffers = 1;
  free(bufs);
  free(off);
  ql_array_release(&a);
  ql_schema_release(&s);
}

static void test_unsupported(void) {
  struct ArrowSchema s;
  ql_schema_init(&s, "+r", "r", 0, NULL);
  QL_CHECK(qls_decltype(&s) == NULL);
  ql_schema_release(&s);
  ql_schema_init(&s, "n", "nothing", 0, NULL);
  QL_CHECK_STR(qls_decltype(&s), "");
  ql_schema_release(&s);
}

int main(void) {
  test_integers();
  test_floats();
  test_strings();
  test_temporal();
  test_decimal();
  test_nested();
  test_unsupported();
  qls_buf_free(&g_buf);
  QL_TEST_END();
}
