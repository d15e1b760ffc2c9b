/* SPDX-License-Identifier: Apache-2.0 */
/* The SQL literal parser of qlink_call's module arguments (sql_literal.h):
 * every kind, its edges, every rejection with its reason, the literal
 * expressions it builds, and the message naming the argument. */
#include "sql_literal.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "ql_test.h"

static struct qls_sql_literal parse_ok(const char *text) {
  struct qls_sql_literal lit;
  const char *why = NULL;
  int rc = qls_sql_literal_parse(text, strlen(text), &lit, &why);
  if (rc != QL_OK) fprintf(stderr, "%s: %s\n", text, why ? why : "?");
  QL_CHECK_INT(rc, QL_OK);
  return lit;
}

static void check_int(const char *text, int64_t want) {
  struct qls_sql_literal lit = parse_ok(text);
  QL_CHECK_INT(lit.kind, QLS_LIT_INT);
  QL_CHECK(lit.i64 == want);
}

static void check_real(const char *text, double want) {
  struct qls_sql_literal lit = parse_ok(text);
  QL_CHECK_INT(lit.kind, QLS_LIT_REAL);
  QL_CHECK(memcmp(&lit.f64, &want, sizeof want) == 0); /* bit for bit */
}

static void check_text(const char *text, const char *want, size_t want_len) {
  struct qls_sql_literal lit = parse_ok(text);
  QL_CHECK_INT(lit.kind, QLS_LIT_TEXT);
  QL_CHECK(lit.text_len == want_len);
  QL_CHECK(lit.text && memcmp(lit.text, want, want_len) == 0 && lit.text[want_len] == '\0');
  qls_sql_literal_free(&lit);
  qls_sql_literal_free(&lit); /* safe twice */
}

static void check_bad(const char *text, size_t n, const char *want_why) {
  struct qls_sql_literal lit;
  const char *why = NULL;
  QL_CHECK_INT(qls_sql_literal_parse(text, n, &lit, &why), QL_EINVAL);
  QL_CHECK_STR(why, want_why);
  QL_CHECK(lit.text == NULL);
}
#define BAD(text, why) check_bad(text, strlen(text), why)

#define NOT_LITERAL "not a SQL literal: expected an integer, a real, a 'string', NULL, TRUE or FALSE"

static void test_integers(void) {
  check_int("0", 0);
  check_int("42", 42);
  check_int("007", 7);
  check_int("-5", -5);
  check_int("+5", 5);
  check_int("- 5", -5);
  check_int("-\t\n5", -5);
  check_int("9223372036854775807", INT64_MAX);
  check_int("-9223372036854775808", INT64_MIN);
  check_int("0x10", 16);
  check_int("0XfF", 255);
  check_int("-0x10", -16);
  check_int("0x7FFFFFFFFFFFFFFF", INT64_MAX);
  check_int("0xFFFFFFFFFFFFFFFF", -1); /* two's complement, as SQLite */
  check_int("0x8000000000000000", INT64_MIN);
  check_int("  12  ", 12);
  BAD("9223372036854775808", "an integer outside the int64 range");
  BAD("-9223372036854775809", "an integer outside the int64 range");
  BAD("99999999999999999999999", "an integer outside the int64 range");
  BAD("-0x8000000000000000", "an integer outside the int64 range");
  BAD("0x", "0x without hex digits");
  BAD("0x10000000000000000", "a hexadecimal integer of more than 16 digits");
  BAD("0x1G", "a hexadecimal integer with a character that is no hex digit");
  BAD("12abc", "a number followed by other characters");
  BAD("1_000", "a number followed by other characters");
  BAD("1 2", "text after the number (one literal per argument)");
  BAD("1+2", "text after the number (one literal per argument)");
  BAD("--5", NOT_LITERAL);
  BAD("- -5", NOT_LITERAL);
  BAD("-", NOT_LITERAL);
}

static void test_reals(void) {
  check_real("1.5", 1.5);
  check_real("-2.25", -2.25);
  check_real(".5", 0.5);
  check_real("5.", 5.0);
  check_real("1e3", 1000.0);
  check_real("1E-3", 0.001);
  check_real("2.5e+2", 250.0);
  check_real("0.1", 0.1);
  check_real("-0.0", -0.0);
  check_real("1.7976931348623157e308", 1.7976931348623157e308);
  check_real("4.9406564584124654e-324", 4.9406564584124654e-324); /* the smallest subnormal */
  check_real("1e-400", 0.0);                                      /* underflows to zero, as SQLite */
  check_real("9223372036854775808.0", 9223372036854775808.0);
  /* a locale with a decimal comma does not change how '.' reads */
  if (setlocale(LC_NUMERIC, "de_DE.UTF-8")) {
    check_real("3.25", 3.25);
    setlocale(LC_NUMERIC, "C");
  }
  BAD("1e", "a real whose exponent has no digits");
  BAD("1e+", "a real whose exponent has no digits");
  BAD("1.5.2", "a number followed by other characters");
  BAD("1e999", "a real outside the float64 range");
  BAD("-1e999", "a real outside the float64 range");
  BAD(".", NOT_LITERAL);
  BAD(".e5", NOT_LITERAL);
  BAD("1.5 x", "text after the number (one literal per argument)");
  BAD("Infinity", NOT_LITERAL);
  BAD("NaN", NOT_LITERAL);
}

static void test_strings(void) {
  check_text("'abc'", "abc", 3);
  check_text("''", "", 0);
  check_text("'it''s'", "it's", 4);
  check_text("''''", "'", 1);
  check_text("'a,b (c)'", "a,b (c)", 7);
  check_text("'caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80'", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14);
  check_text("'line\nbreak'", "line\nbreak", 10);
  check_text("'\"quoted\"'", "\"quoted\"", 8);
  BAD("'abc", "a string without its closing quote");
  BAD("'it''s", "a string without its closing quote");
  BAD("'", "a string without its closing quote");
  BAD("'a' 'b'", "text after the string's closing quote (adjacent strings are not concatenated)");
  BAD("'a'||'b'", "text after the string's closing quote (adjacent strings are not concatenated)");
  BAD("'\xff'", "a string that is not valid UTF-8");
  BAD("'\xc0\xaf'", "a string that is not valid UTF-8");         /* overlong '/' */
  BAD("'\xed\xa0\x80'", "a string that is not valid UTF-8");     /* a surrogate */
  BAD("'\xf4\x90\x80\x80'", "a string that is not valid UTF-8"); /* above U+10FFFF */
  BAD("'\xe2\x82'", "a string that is not valid UTF-8");         /* cut short */
  check_bad("'a\0b'", 5, "a NUL byte in the argument");
  BAD("\"abc\"", "a quoted identifier, not a string: strings take single quotes");
  BAD("`abc`", "a quoted identifier, not a string: strings take single quotes");
  BAD("[abc]", "a quoted identifier, not a string: strings take single quotes");
  BAD("x'00ff'", "a blob, which is not among the literals accepted: expected an integer, a real, a 'string', NULL, "
                 "TRUE or FALSE");
}

static void test_keywords(void) {
  const char *nulls[] = {"NULL", "null", "Null", " nUlL "};
  for (size_t i = 0; i < 4; i++) {
    struct qls_sql_literal lit = parse_ok(nulls[i]);
    QL_CHECK_INT(lit.kind, QLS_LIT_NULL);
  }
  const char *bools[] = {"TRUE", "true", "FALSE", "False"};
  for (size_t i = 0; i < 4; i++) {
    struct qls_sql_literal lit = parse_ok(bools[i]);
    QL_CHECK_INT(lit.kind, QLS_LIT_BOOL);
    QL_CHECK_INT(lit.i64, i < 2 ? 1 : 0);
  }
  BAD("NULLS", NOT_LITERAL);
  BAD("NOT NULL", NOT_LITERAL);
  BAD("abc", NOT_LITERAL);
  BAD("x", NOT_LITERAL);
  BAD("(1)", NOT_LITERAL);
  BAD("?", NOT_LITERAL);
  BAD(":name", NOT_LITERAL);
  BAD("CURRENT_DATE", NOT_LITERAL);
  BAD("- 'a'", NOT_LITERAL);
  BAD("", "an empty argument: expected an integer, a real, a 'string', NULL, TRUE or FALSE");
  BAD("   ", "an empty argument: expected an integer, a real, a 'string', NULL, TRUE or FALSE");
}

/* The expressions the parser builds: one literal each, of the right format. */
static void test_expressions(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  const char *args[] = {"7", "-0.5", "'it''s'", "NULL", "TRUE", "false"};
  ql_expr_id ids[6];
  for (int i = 0; i < 6; i++) QL_CHECK_OK(qls_sql_literal_arg(b, "qlink_call", i + 3, args[i], &ids[i], &err), err);
  struct ql_plan_view view;
  memset(&view, 0, sizeof view);
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &view, &err), err);
  QL_CHECK_OK(ql_ir_validate_exprs(&view, ids, 6, &err), err);
  const char *formats[] = {"l", "g", "u", "n", "b", "b"};
  for (int i = 0; i < 6; i++) {
    const struct ql_expr *e = &view.exprs[ids[i]];
    QL_CHECK_INT(e->kind, QL_EXPR_LITERAL);
    QL_CHECK_STR(e->literal.format, formats[i]);
    QL_CHECK_INT(e->literal.is_null, i == 3);
  }
  QL_CHECK(view.exprs[ids[0]].literal.value.i64 == 7);
  QL_CHECK(view.exprs[ids[1]].literal.value.f64 == -0.5);
  QL_CHECK(view.exprs[ids[2]].literal.value.bytes.size == 4);
  QL_CHECK(memcmp(view.exprs[ids[2]].literal.value.bytes.data, "it's", 4) == 0);
  QL_CHECK(view.exprs[ids[4]].literal.value.i64 == 1);
  QL_CHECK(view.exprs[ids[5]].literal.value.i64 == 0);
  char *text = NULL;
  QL_CHECK_OK(ql_ir_expr_to_string(&view, ids[2], &text, &err), err);
  free(text);
  view.release(&view);

  /* the message names the argument's position and text */
  ql_expr_id id = -1;
  QL_CHECK_INT(qls_sql_literal_arg(b, "qlink_call", 4, "1 + 1", &id, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "qlink_call argument 4 `1 + 1`: text after the number (one literal per argument)");
  char longer[200];
  memset(longer, 'a', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  longer[0] = '\'';
  QL_CHECK_INT(qls_sql_literal_arg(b, "qlink_call", 3, longer, &id, &err), QL_EINVAL);
  char want[300];
  snprintf(want, sizeof want, "qlink_call argument 3 `%.64s...`: a string without its closing quote", longer);
  QL_CHECK_STR(ql_error_message(&err), want);
  /* a cut inside a UTF-8 character backs off to its start */
  char utf[200];
  strcpy(utf, "'");
  for (int i = 0; i < 40; i++) strcat(utf, "\xc3\xa9");
  strcat(utf, " x");
  QL_CHECK_INT(qls_sql_literal_arg(b, "qlink_call", 5, utf, &id, &err), QL_EINVAL);
  const char *m = ql_error_message(&err);
  QL_CHECK(strncmp(m, "qlink_call argument 5 `'\xc3\xa9", 26) == 0);
  const char *dots = strstr(m, "...`");
  QL_CHECK(dots != NULL && dots - (m + 23) == 63); /* 1 quote + 31 two-byte characters */
  ql_error_release(&err);
  ql_ir_builder_free(b);
}

int main(void) {
  test_integers();
  test_reals();
  test_strings();
  test_keywords();
  test_expressions();
  QL_TEST_END();
}
