/* qlink_zarr: metadata JSON as Python's json module writes it (bare NaN,
 * Infinity, -Infinity), with exact values. */
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

int main(void) {
  test_tokens_become_strings();
  test_plain_json_unchanged();
  test_lookalikes_stay_errors();
  QL_TEST_END();
}
