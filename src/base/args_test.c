/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/base/args.c: cells to a function's argument struct array. */
#include "qlink/lib/args.h"

#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static struct ql_cell integer(int64_t v) {
  struct ql_cell c = {QL_CELL_INTEGER, 0, v, 0, NULL, 0};
  return c;
}
static struct ql_cell real(double v) {
  struct ql_cell c = {QL_CELL_REAL, 0, 0, v, NULL, 0};
  return c;
}
static struct ql_cell text(const char *s) {
  struct ql_cell c = {QL_CELL_TEXT, 0, 0, 0, s, (int64_t)strlen(s)};
  return c;
}
static struct ql_cell null_cell(void) {
  struct ql_cell c = {QL_CELL_NULL, 0, 0, 0, NULL, 0};
  return c;
}

static void test_formats(void) {
  QL_CHECK_STR(ql_cell_format(QL_CELL_INTEGER), "l");
  QL_CHECK_STR(ql_cell_format(QL_CELL_REAL), "g");
  QL_CHECK_STR(ql_cell_format(QL_CELL_TEXT), "u");
  QL_CHECK_STR(ql_cell_format(QL_CELL_BLOB), "z");
  QL_CHECK_STR(ql_cell_format(QL_CELL_NULL), "l");
  static const char *const declared[2] = {"i", "u"};
  struct ql_signature sig = {2, QL_IMMUTABLE, declared};
  QL_CHECK_STR(ql_signature_arg_format(&sig, 2, 1, "g"), "u");
  QL_CHECK_STR(ql_signature_arg_format(&sig, 3, 1, "g"), "g"); /* another arity: the value's own */
  struct ql_signature any = {-1, QL_IMMUTABLE, NULL};
  QL_CHECK_STR(ql_signature_arg_format(&any, 2, 0, "z"), "z");
  QL_CHECK(ql_args_kind_fits(QL_CELL_INTEGER, "g"));
  QL_CHECK(ql_args_kind_fits(QL_CELL_REAL, "l"));
  QL_CHECK(ql_args_kind_fits(QL_CELL_TEXT, "z"));
  QL_CHECK(!ql_args_kind_fits(QL_CELL_TEXT, "l"));
  QL_CHECK(!ql_args_kind_fits(QL_CELL_BLOB, "u"));
  QL_CHECK(!ql_args_kind_fits(QL_CELL_INTEGER, "u"));
  QL_CHECK(ql_args_kind_fits(QL_CELL_NULL, "b"));
  QL_CHECK(!ql_args_format_supported("tsu:"));
  QL_CHECK(!ql_args_kind_fits(QL_CELL_NULL, "+l"));
}

static void test_build(void) {
  /* 3 rows x 4 arguments: int32, float64, utf8, bool */
  static const char *const formats[4] = {"i", "g", "u", "b"};
  struct ql_cell cells[12] = {integer(7),  integer(2), text("ab"), integer(1),
                              null_cell(), real(0.5),  null_cell(), integer(0),
                              real(-3.0),  null_cell(), text(""),  real(2.0)};
  struct ArrowSchema schema;
  struct ArrowArray array;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_args_build(formats, 4, cells, 3, &schema, &array, &err), err);
  QL_CHECK_INT(array.length, 3);
  QL_CHECK_INT(array.n_children, 4);
  QL_CHECK_STR(schema.children[0]->format, "i");
  QL_CHECK_STR(schema.children[3]->name, "arg3");
  const struct ArrowArray *i = array.children[0], *g = array.children[1], *u = array.children[2], *b = array.children[3];
  QL_CHECK_INT(((const int32_t *)i->buffers[1])[0], 7);
  QL_CHECK_INT(((const int32_t *)i->buffers[1])[2], -3);
  QL_CHECK(ql_array_is_valid(i, 0) && !ql_array_is_valid(i, 1) && ql_array_is_valid(i, 2));
  QL_CHECK_INT(i->null_count, 1);
  QL_CHECK(((const double *)g->buffers[1])[0] == 2.0 && ((const double *)g->buffers[1])[1] == 0.5);
  QL_CHECK(!ql_array_is_valid(g, 2));
  const int32_t *off = u->buffers[1];
  QL_CHECK_INT(off[0], 0);
  QL_CHECK_INT(off[1], 2);
  QL_CHECK_INT(off[2], 2);
  QL_CHECK_INT(off[3], 2);
  QL_CHECK(memcmp(u->buffers[2], "ab", 2) == 0);
  QL_CHECK(ql_array_is_valid(u, 0) && !ql_array_is_valid(u, 1) && ql_array_is_valid(u, 2));
  const uint8_t *bits = b->buffers[1];
  QL_CHECK_INT(bits[0] & 7, 5); /* true, false, true */
  ql_schema_release(&schema);
  ql_array_release(&array);

  /* zero rows */
  QL_CHECK_OK(ql_args_build(formats, 4, NULL, 0, &schema, &array, &err), err);
  QL_CHECK_INT(array.length, 0);
  ql_schema_release(&schema);
  ql_array_release(&array);
}

static void expect(const char *format, struct ql_cell c, int status, const char *message) {
  struct ArrowSchema schema;
  struct ArrowArray array;
  struct ql_error err = {0};
  const char *formats[1] = {format};
  QL_CHECK_INT(ql_args_build(formats, 1, &c, 1, &schema, &array, &err), status);
  QL_CHECK_STR(ql_error_message(&err), message);
  QL_CHECK(schema.release == NULL && array.release == NULL);
  ql_error_release(&err);
}

static void test_errors(void) {
  expect("l", text("x"), QL_EINVAL, "argument 1: 'x' is not a number (the function takes l)");
  expect("l", real(2.5), QL_EINVAL, "argument 1: 2.5 is not an integer (the function takes l)");
  expect("c", integer(128), QL_EINVAL, "argument 1: 128 is out of range (the function takes c)");
  expect("S", integer(-1), QL_EINVAL, "argument 1: -1 is out of range (the function takes S)");
  expect("u", integer(3), QL_EINVAL, "argument 1: an integer is not text (the function takes u)");
  struct ql_cell blob = {QL_CELL_BLOB, 0, 0, 0, "\x01", 1};
  expect("g", blob, QL_EINVAL, "argument 1: a blob is not a number (the function takes g)");
  expect("tdD", integer(1), QL_ENOTSUP, "argument 1: type 'tdD' cannot be passed from the host's values");
  /* in range at the edges */
  struct ArrowSchema schema;
  struct ArrowArray array;
  struct ql_error err = {0};
  static const char *const f[2] = {"c", "S"};
  struct ql_cell edge[2] = {integer(-128), integer(65535)};
  QL_CHECK_OK(ql_args_build(f, 2, edge, 1, &schema, &array, &err), err);
  QL_CHECK_INT(((const int8_t *)array.children[0]->buffers[1])[0], -128);
  QL_CHECK_INT(((const uint16_t *)array.children[1]->buffers[1])[0], 65535);
  ql_schema_release(&schema);
  ql_array_release(&array);
}

int main(void) {
  test_formats();
  test_build();
  test_errors();
  QL_TEST_END();
}
