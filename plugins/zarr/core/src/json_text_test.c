/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: metadata JSON as Python's json module writes it (bare NaN,
 * Infinity, -Infinity; integers beyond int64), with exact values. */
#include <stdint.h>
#include <string.h>

#include "json_text.h"
#include "ql_test.h"

static json_t *parse(const char *text, json_error_t *jerr) { return zr_json_parse(text, strlen(text), jerr); }

static void test_tokens_become_strings(void) {
  json_error_t jerr;
  json_t *doc = parse("{\"a\": NaN, \"b\":-Infinity,\"c\": [Infinity, 1e-5, -2],\n \"d\": \"NaN Infinity\", "
                      "\"e\": \"q\\\"NaN\", \"f\": null}",
                      &jerr);
  QL_CHECK(doc != NULL);
  if (!doc) return;
  QL_CHECK_STR(json_string_value(json_object_get(doc, "a")), "NaN");
  QL_CHECK_STR(json_string_value(json_object_get(doc, "b")), "-Infinity");
  json_t *c = json_object_get(doc, "c");
  QL_CHECK_INT((long long)json_array_size(c), 3);
  QL_CHECK_STR(json_string_value(json_array_get(c, 0)), "Infinity");
  QL_CHECK(json_real_value(json_array_get(c, 1)) == 1e-5);
  QL_CHECK_INT(json_integer_value(json_array_get(c, 2)), -2);
  /* inside strings nothing changes, escaped quotes included */
  QL_CHECK_STR(json_string_value(json_object_get(doc, "d")), "NaN Infinity");
  QL_CHECK_STR(json_string_value(json_object_get(doc, "e")), "q\"NaN");
  QL_CHECK(json_is_null(json_object_get(doc, "f")));
  json_decref(doc);

  /* a bare token at the top level */
  doc = parse("NaN", &jerr);
  QL_CHECK(doc != NULL && json_is_string(doc) && strcmp(json_string_value(doc), "NaN") == 0);
  json_decref(doc);
}

static void test_plain_json_unchanged(void) {
  json_error_t jerr;
  json_t *doc = parse("{\"zarr_format\": 2, \"Nan\": \"Infinity\"}", &jerr);
  QL_CHECK(doc != NULL);
  QL_CHECK_INT(json_integer_value(json_object_get(doc, "zarr_format")), 2);
  QL_CHECK_STR(json_string_value(json_object_get(doc, "Nan")), "Infinity");
  json_decref(doc);
}

static void test_lookalikes_stay_errors(void) {
  json_error_t jerr;
  /* words that only start or end like a token are not tokens */
  QL_CHECK(parse("{\"a\": NaNx}", &jerr) == NULL);
  QL_CHECK(parse("{\"a\": Infinityy}", &jerr) == NULL);
  QL_CHECK(parse("{\"a\": xNaN}", &jerr) == NULL);
  QL_CHECK(parse("{\"a\": nan}", &jerr) == NULL);
  QL_CHECK(parse("{\"a\": +Infinity}", &jerr) == NULL);
  /* the error still gives the input's line */
  QL_CHECK(parse("{\"a\": NaN,\n\"b\": }", &jerr) == NULL);
  QL_CHECK_INT(jerr.line, 2);
  /* a string left open at the end */
  QL_CHECK(parse("{\"a\": \"NaN", &jerr) == NULL);
  QL_CHECK(parse("[NaN, \"\\", &jerr) == NULL);
}

/* Integers outside int64 (netCDF's uint64 fill 2^64 - 2) become strings of
 * their digits; the int64 extremes and non-integers stay numbers. */
static void test_big_integers_become_strings(void) {
  json_error_t jerr;
  json_t *doc = parse("{\"f\": 18446744073709551614, \"max\": 9223372036854775807, \"over\": 9223372036854775808,"
                      " \"min\": -9223372036854775808, \"under\": -9223372036854775809, \"real\": 18446744073709551614.0,"
                      " \"exp\": 12345678901234567890e0, \"s\": \"99999999999999999999\", \"l\": [1, 99999999999999999999]}",
                      &jerr);
  QL_CHECK(doc != NULL);
  if (!doc) return;
  QL_CHECK_STR(json_string_value(json_object_get(doc, "f")), "18446744073709551614");
  QL_CHECK(json_is_integer(json_object_get(doc, "max")) && json_integer_value(json_object_get(doc, "max")) == INT64_MAX);
  QL_CHECK_STR(json_string_value(json_object_get(doc, "over")), "9223372036854775808");
  QL_CHECK(json_is_integer(json_object_get(doc, "min")) && json_integer_value(json_object_get(doc, "min")) == INT64_MIN);
  QL_CHECK_STR(json_string_value(json_object_get(doc, "under")), "-9223372036854775809");
  QL_CHECK(json_is_real(json_object_get(doc, "real")) && json_real_value(json_object_get(doc, "real")) == 18446744073709551614.0);
  QL_CHECK(json_is_real(json_object_get(doc, "exp")));
  QL_CHECK_STR(json_string_value(json_object_get(doc, "s")), "99999999999999999999");
  QL_CHECK_STR(json_string_value(json_array_get(json_object_get(doc, "l"), 1)), "99999999999999999999");
  json_decref(doc);
  /* not a number token: part of a word, still an error */
  QL_CHECK(parse("[x18446744073709551614]", &jerr) == NULL);
  QL_CHECK(parse("[18446744073709551614x]", &jerr) == NULL);
}

int main(void) {
  test_tokens_become_strings();
  test_big_integers_become_strings();
  test_plain_json_unchanged();
  test_lookalikes_stay_errors();
  QL_TEST_END();
}
