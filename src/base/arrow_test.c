/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/base/arrow.c. Run under ASan and valgrind, they also check
 * that every release frees exactly what was built. */
#include "qlink/lib/arrow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "ql_test.h"

static struct ArrowArray make_int64(int64_t n, int64_t first, int with_null_at_1) {
  int64_t *data = malloc((size_t)n * sizeof(int64_t));
  for (int64_t i = 0; i < n; i++) data[i] = first + i;
  uint8_t *validity = NULL;
  if (with_null_at_1) {
    validity = malloc((size_t)(n + 7) / 8);
    memset(validity, 0xFF, (size_t)(n + 7) / 8);
    validity[0] &= (uint8_t)~2u;
  }
  struct ArrowArray a;
  struct ql_error error = {0};
  QL_CHECK_OK(ql_array_init_fixed(&a, n, -1, validity, data, &error), error);
  return a;
}

static void test_schema_basic(void) {
  struct ql_error error = {0};
  struct ArrowSchema s;
  QL_CHECK_OK(ql_schema_init_struct(&s, "", 3, &error), error);
  QL_CHECK_STR(s.format, "+s");
  QL_CHECK_INT(s.n_children, 3);
  QL_CHECK(s.children[0]->release == NULL);
  QL_CHECK_OK(ql_schema_init(s.children[0], "l", "x", ARROW_FLAG_NULLABLE, &error), error);
  QL_CHECK_OK(ql_schema_init(s.children[1], "u", "name", 0, &error), error);
  QL_CHECK_OK(ql_schema_init(s.children[2], "tsu:UTC", "time", ARROW_FLAG_NULLABLE, &error), error);
  QL_CHECK_INT(ql_schema_find(&s, "name"), 1);
  QL_CHECK_INT(ql_schema_find(&s, "time"), 2);
  QL_CHECK_INT(ql_schema_find(&s, "nope"), -1);

  const char *keys[] = {"units", "long_name"};
  const char *values[] = {"K", "air temperature"};
  QL_CHECK_OK(ql_schema_set_metadata(s.children[0], 2, keys, values, &error), error);
  /* Arrow's encoding: int32 count, then length-prefixed keys and values. */
  int32_t count;
  memcpy(&count, s.children[0]->metadata, 4);
  QL_CHECK_INT(count, 2);
  char *v = NULL;
  QL_CHECK_INT(ql_schema_metadata_get(s.children[0], "long_name", &v), QL_OK);
  QL_CHECK_STR(v, "air temperature");
  free(v);
  QL_CHECK_INT(ql_schema_metadata_get(s.children[0], "units", &v), QL_OK);
  QL_CHECK_STR(v, "K");
  free(v);
  QL_CHECK_INT(ql_schema_metadata_get(s.children[0], "missing", &v), QL_ENOTFOUND);
  QL_CHECK(v == NULL);
  QL_CHECK_INT(ql_schema_metadata_get(s.children[1], "units", &v), QL_ENOTFOUND);

  /* Deep copy, then the original is released: the copy stands alone. */
  struct ArrowSchema copy;
  QL_CHECK_OK(ql_schema_copy(&s, &copy, &error), error);
  int32_t idx[2] = {2, 0};
  struct ArrowSchema proj;
  QL_CHECK_OK(ql_schema_project(&s, idx, 2, &proj, &error), error);
  ql_schema_release(&s);
  QL_CHECK(s.release == NULL);
  ql_schema_release(&s); /* released: no-op */

  QL_CHECK_INT(copy.n_children, 3);
  QL_CHECK_STR(copy.children[2]->format, "tsu:UTC");
  QL_CHECK_STR(copy.children[2]->name, "time");
  QL_CHECK_INT(copy.children[0]->flags, ARROW_FLAG_NULLABLE);
  QL_CHECK_INT(ql_schema_metadata_get(copy.children[0], "units", &v), QL_OK);
  QL_CHECK_STR(v, "K");
  free(v);
  QL_CHECK_INT(proj.n_children, 2);
  QL_CHECK_STR(proj.children[0]->name, "time");
  QL_CHECK_STR(proj.children[1]->name, "x");

  int32_t bad[1] = {5};
  struct ArrowSchema bad_proj;
  QL_CHECK_INT(ql_schema_project(&copy, bad, 1, &bad_proj, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "ql_schema_project: index 5 out of range (schema has 3 fields)");
  QL_CHECK(bad_proj.release == NULL);
  ql_error_release(&error);
  QL_CHECK_INT(ql_schema_project(copy.children[0], idx, 1, &bad_proj, &error), QL_EINVAL);
  ql_error_release(&error);

  /* Clearing metadata. */
  QL_CHECK_OK(ql_schema_set_metadata(copy.children[0], 0, NULL, NULL, &error), error);
  QL_CHECK(copy.children[0]->metadata == NULL);

  ql_schema_release(&copy);
  ql_schema_release(&proj);
}

static void test_schema_dictionary_copy(void) {
  struct ql_error error = {0};
  struct ArrowSchema s;
  QL_CHECK_OK(ql_schema_init(&s, "i", "category", 0, &error), error);
  s.dictionary = calloc(1, sizeof(struct ArrowSchema));
  QL_CHECK_OK(ql_schema_init(s.dictionary, "u", NULL, 0, &error), error);
  struct ArrowSchema copy;
  QL_CHECK_OK(ql_schema_copy(&s, &copy, &error), error);
  QL_CHECK(copy.dictionary != NULL && copy.dictionary != s.dictionary);
  QL_CHECK_STR(copy.dictionary->format, "u");
  QL_CHECK(copy.dictionary->name == NULL);
  ql_schema_release(&s);
  ql_schema_release(&copy);

  struct ArrowSchema released = {0};
  QL_CHECK_INT(ql_schema_copy(&released, &copy, &error), QL_EINVAL);
  QL_CHECK(copy.release == NULL);
  ql_error_release(&error);
}

static void test_byte_width(void) {
  QL_CHECK_INT(ql_format_byte_width("l"), 8);
  QL_CHECK_INT(ql_format_byte_width("b"), 0);
  QL_CHECK_INT(ql_format_byte_width("c"), 1);
  QL_CHECK_INT(ql_format_byte_width("S"), 2);
  QL_CHECK_INT(ql_format_byte_width("e"), 2);
  QL_CHECK_INT(ql_format_byte_width("f"), 4);
  QL_CHECK_INT(ql_format_byte_width("g"), 8);
  QL_CHECK_INT(ql_format_byte_width("w:16"), 16);
  QL_CHECK_INT(ql_format_byte_width("w:0"), -1);
  QL_CHECK_INT(ql_format_byte_width("d:12,2"), 16);
  QL_CHECK_INT(ql_format_byte_width("d:40,2,256"), 32);
  QL_CHECK_INT(ql_format_byte_width("tdD"), 4);
  QL_CHECK_INT(ql_format_byte_width("tdm"), 8);
  QL_CHECK_INT(ql_format_byte_width("tts"), 4);
  QL_CHECK_INT(ql_format_byte_width("ttn"), 8);
  QL_CHECK_INT(ql_format_byte_width("tsu:UTC"), 8);
  QL_CHECK_INT(ql_format_byte_width("tss:"), 8);
  QL_CHECK_INT(ql_format_byte_width("tDn"), 8);
  QL_CHECK_INT(ql_format_byte_width("tin"), 16);
  QL_CHECK_INT(ql_format_byte_width("u"), -1);
  QL_CHECK_INT(ql_format_byte_width("+s"), -1);
  QL_CHECK_INT(ql_format_byte_width(""), -1);
  QL_CHECK_INT(ql_format_byte_width(NULL), -1);
}

static void test_arrays(void) {
  struct ql_error error = {0};
  struct ArrowArray a = make_int64(10, 100, 1);
  QL_CHECK_INT(a.length, 10);
  QL_CHECK_INT(a.null_count, 1); /* computed from the validity bitmap */
  QL_CHECK_INT(a.n_buffers, 2);
  QL_CHECK_INT(((const int64_t *)a.buffers[1])[9], 109);
  QL_CHECK_INT(ql_array_is_valid(&a, 0), 1);
  QL_CHECK_INT(ql_array_is_valid(&a, 1), 0);
  QL_CHECK_INT(ql_array_is_valid(&a, 9), 1);
  a.offset = 1; /* honours the offset */
  QL_CHECK_INT(ql_array_is_valid(&a, 0), 0);
  QL_CHECK_INT(ql_array_is_valid(&a, 1), 1);

  struct ArrowArray moved;
  ql_array_move(&a, &moved);
  QL_CHECK(a.release == NULL);
  QL_CHECK(moved.release != NULL);
  ql_array_release(&a); /* released: no-op */
  ql_array_release(&moved);
  QL_CHECK(moved.release == NULL);

  /* No validity: no nulls. */
  struct ArrowArray b = make_int64(3, 0, 0);
  QL_CHECK_INT(b.null_count, 0);
  QL_CHECK_INT(ql_array_is_valid(&b, 2), 1);

  /* utf8 ["ab", null, "cde"] */
  int32_t *offsets = malloc(4 * sizeof(int32_t));
  offsets[0] = 0, offsets[1] = 2, offsets[2] = 2, offsets[3] = 5;
  char *chars = malloc(5);
  memcpy(chars, "abcde", 5);
  uint8_t *validity = malloc(1);
  validity[0] = 0x5;
  struct ArrowArray s;
  QL_CHECK_OK(ql_array_init_binary(&s, 3, -1, validity, offsets, chars, &error), error);
  QL_CHECK_INT(s.null_count, 1);
  QL_CHECK_INT(s.n_buffers, 3);
  QL_CHECK_INT(ql_array_is_valid(&s, 1), 0);
  QL_CHECK(memcmp((const char *)s.buffers[2] + 2, "cde", 3) == 0);

  /* Struct of two children moved in. */
  struct ArrowArray st;
  QL_CHECK_OK(ql_array_init_struct(&st, 3, 2, &error), error);
  QL_CHECK_INT(st.n_buffers, 1);
  QL_CHECK(st.buffers[0] == NULL);
  QL_CHECK(st.children[0]->release == NULL);
  ql_array_move(&b, st.children[0]);
  ql_array_move(&s, st.children[1]);
  QL_CHECK_INT(st.children[1]->length, 3);
  ql_array_release(&st); /* frees the children too */

  QL_CHECK_INT(ql_array_init_fixed(&a, -1, 0, NULL, malloc(8), &error), QL_EINVAL);
  QL_CHECK(a.release == NULL);
  ql_error_release(&error);
}

static void test_nulls(void) {
  struct ql_error error = {0};
  const char *formats[] = {"l", "b", "u", "U", "d:10,3", "n"};
  for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
    struct ArrowArray a;
    QL_CHECK_OK(ql_array_init_nulls(&a, formats[f], 11, &error), error);
    QL_CHECK_INT(a.length, 11);
    QL_CHECK_INT(a.null_count, 11);
    for (int64_t i = 0; i < 11; i++) QL_CHECK_INT(ql_array_is_valid(&a, i), 0);
    ql_array_release(&a);
  }
  struct ArrowArray u;
  QL_CHECK_OK(ql_array_init_nulls(&u, "u", 2, &error), error);
  QL_CHECK_INT(u.n_buffers, 3);
  QL_CHECK_INT(((const int32_t *)u.buffers[1])[2], 0);
  ql_array_release(&u);
  struct ArrowArray l;
  QL_CHECK_INT(ql_array_init_nulls(&l, "+l", 2, &error), QL_ENOTSUP);
  QL_CHECK_STR(error.message, "ql_array_init_nulls: format '+l' is not fixed-width or binary");
  QL_CHECK(l.release == NULL);
  ql_error_release(&error);
}

static void test_stream(void) {
  struct ql_error error = {0};
  struct ArrowSchema schema;
  QL_CHECK_OK(ql_schema_init(&schema, "l", "x", 0, &error), error);
  struct ArrowArray arrays[3] = {make_int64(2, 0, 0), make_int64(3, 10, 0), make_int64(4, 20, 1)};
  struct ArrowArrayStream stream;
  QL_CHECK_OK(ql_stream_from_arrays(&schema, arrays, 3, &stream, &error), error);
  QL_CHECK(schema.release == NULL);
  QL_CHECK(arrays[0].release == NULL && arrays[2].release == NULL);
  QL_CHECK(stream.get_last_error(&stream) == NULL);

  struct ArrowSchema got;
  QL_CHECK_INT(stream.get_schema(&stream, &got), 0);
  QL_CHECK_STR(got.format, "l");
  QL_CHECK_STR(got.name, "x");
  ql_schema_release(&got);

  struct ArrowArray batch;
  QL_CHECK_INT(stream.get_next(&stream, &batch), 0);
  QL_CHECK_INT(batch.length, 2);
  ql_array_release(&batch);
  QL_CHECK_INT(stream.get_next(&stream, &batch), 0);
  QL_CHECK_INT(batch.length, 3);
  QL_CHECK_INT(((const int64_t *)batch.buffers[1])[0], 10);
  ql_array_release(&batch);
  /* Release with one batch still unread: the stream frees it. */
  stream.release(&stream);
  QL_CHECK(stream.release == NULL);

  /* End of stream: status 0 and a released array, repeatedly. */
  QL_CHECK_OK(ql_schema_init(&schema, "l", "x", 0, &error), error);
  arrays[0] = make_int64(1, 5, 0);
  QL_CHECK_OK(ql_stream_from_arrays(&schema, arrays, 1, &stream, &error), error);
  QL_CHECK_INT(stream.get_next(&stream, &batch), 0);
  QL_CHECK_INT(batch.length, 1);
  ql_array_release(&batch);
  for (int i = 0; i < 2; i++) {
    memset(&batch, 0xAB, sizeof(batch));
    QL_CHECK_INT(stream.get_next(&stream, &batch), 0);
    QL_CHECK(batch.release == NULL);
  }
  QL_CHECK(stream.get_last_error(&stream) == NULL);
  stream.release(&stream);

  /* Empty stream. */
  QL_CHECK_OK(ql_schema_init(&schema, "u", "s", 0, &error), error);
  QL_CHECK_OK(ql_stream_from_arrays(&schema, NULL, 0, &stream, &error), error);
  QL_CHECK_INT(stream.get_next(&stream, &batch), 0);
  QL_CHECK(batch.release == NULL);
  stream.release(&stream);

  /* A released schema is refused and the arrays are released, not leaked. */
  struct ArrowSchema released = {0};
  arrays[0] = make_int64(1, 5, 0);
  QL_CHECK_INT(ql_stream_from_arrays(&released, arrays, 1, &stream, &error), QL_EINVAL);
  QL_CHECK(arrays[0].release == NULL);
  QL_CHECK(stream.release == NULL);
  ql_error_release(&error);
}

/* View arrays: inline (<= 12 bytes) and out-of-line strings, the offset
 * applied, and views naming data the array does not have refused. */
static void test_views(void) {
  struct ql_error error = {0};
  uint8_t views[4][16];
  memset(views, 0, sizeof views);
  const char *data0 = "xxa string longer than twelve";
  int32_t len = 5, idx = 0, off = 2;
  memcpy(views[0], &len, 4);
  memcpy(views[0] + 4, "short", 5);
  len = 27;
  memcpy(views[1], &len, 4);
  memcpy(views[1] + 4, "a st", 4);
  memcpy(views[1] + 8, &idx, 4);
  memcpy(views[1] + 12, &off, 4);
  idx = 1; /* a data buffer the array lacks */
  memcpy(views[2], &len, 4);
  memcpy(views[2] + 8, &idx, 4);
  idx = 0, off = 10; /* bytes beyond the buffer's size */
  memcpy(views[3], &len, 4);
  memcpy(views[3] + 8, &idx, 4);
  memcpy(views[3] + 12, &off, 4);
  int64_t sizes[1] = {29};
  const void *buffers[4] = {NULL, views, data0, sizes};
  struct ArrowArray a = {.length = 4, .n_buffers = 4, .buffers = buffers};
  const uint8_t *got;
  int64_t n;
  QL_CHECK_OK(ql_array_view_at(&a, 0, &got, &n, &error), error);
  QL_CHECK_INT(n, 5);
  QL_CHECK(memcmp(got, "short", 5) == 0);
  QL_CHECK_OK(ql_array_view_at(&a, 1, &got, &n, &error), error);
  QL_CHECK_INT(n, 27);
  QL_CHECK(memcmp(got, "a string longer than twelve", 27) == 0);
  QL_CHECK_INT(ql_array_view_at(&a, 2, &got, &n, &error), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&error),
               "view array: row 2 names bytes [0, 0 + 27) of data buffer 1, which the "
               "array does not have (data buffers: 1)");
  ql_error_release(&error);
  QL_CHECK_INT(ql_array_view_at(&a, 3, &got, &n, &error), QL_EDATA);
  ql_error_release(&error);
  a.offset = 1; /* row 0 is the array's second view */
  QL_CHECK_OK(ql_array_view_at(&a, 0, &got, &n, &error), error);
  QL_CHECK_INT(n, 27);
  a.n_buffers = 2;
  QL_CHECK_INT(ql_array_view_at(&a, 0, &got, &n, &error), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&error), "view array: 2 buffers, it needs at least 3 (validity, views, data sizes)");
  ql_error_release(&error);
}

int main(void) {
  test_schema_basic();
  test_schema_dictionary_copy();
  test_byte_width();
  test_arrays();
  test_nulls();
  test_stream();
  test_views();
  QL_TEST_END();
}
