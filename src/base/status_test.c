/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/base/status.c. */
#include "qlink/lib/status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"

static int fails_with_einval(struct ql_error *error, const char *what) {
  return ql_error_set(error, QL_EINVAL, "bad option '%s'", what);
}

/* A "foreign" error as another library would fill it. */
static void foreign_release(struct ql_error *self) {
  free(self->message);
  self->message = NULL;
  self->release = NULL;
}

static void test_names(void) {
  QL_CHECK_STR(ql_status_name(QL_OK), "QL_OK");
  QL_CHECK_STR(ql_status_name(QL_EINVAL), "QL_EINVAL");
  QL_CHECK_STR(ql_status_name(QL_EOVERFLOW), "QL_EOVERFLOW");
  QL_CHECK_STR(ql_status_name(QL_ESTATUS_COUNT_), "QL_UNKNOWN_STATUS");
  QL_CHECK_STR(ql_status_name(-1), "QL_UNKNOWN_STATUS");
  QL_CHECK_STR(ql_status_sqlstate(QL_OK), "00000");
  QL_CHECK_STR(ql_status_sqlstate(QL_EINVAL), "22023");
  QL_CHECK_STR(ql_status_sqlstate(QL_ENOTFOUND), "42704");
  QL_CHECK_STR(ql_status_sqlstate(QL_ENOTSUP), "0A000");
  QL_CHECK_STR(ql_status_sqlstate(QL_ENOMEM), "53200");
  QL_CHECK_STR(ql_status_sqlstate(QL_ERESOURCES), "53000");
  QL_CHECK_STR(ql_status_sqlstate(QL_EIO), "58030");
  QL_CHECK_STR(ql_status_sqlstate(QL_EDATA), "22000");
  QL_CHECK_STR(ql_status_sqlstate(QL_EVERSION), "0A000");
  QL_CHECK_STR(ql_status_sqlstate(QL_ECANCELLED), "57014");
  QL_CHECK_STR(ql_status_sqlstate(QL_ESTATE), "55000");
  QL_CHECK_STR(ql_status_sqlstate(QL_EINTERNAL), "XX000");
  QL_CHECK_STR(ql_status_sqlstate(QL_EOVERFLOW), "22003");
  QL_CHECK_STR(ql_status_sqlstate(99), "XX000");
}

static void test_errno(void) {
  QL_CHECK_INT(ql_status_to_errno(QL_OK), 0);
  QL_CHECK_INT(ql_status_to_errno(QL_EINVAL), EINVAL);
  QL_CHECK_INT(ql_status_to_errno(QL_ENOMEM), ENOMEM);
  QL_CHECK_INT(ql_status_to_errno(QL_EIO), EIO);
  QL_CHECK_INT(ql_status_to_errno(QL_ENOTFOUND), ENOENT);
  /* Every status round-trips through its errno code. */
  for (int s = 0; s < QL_ESTATUS_COUNT_; s++) QL_CHECK_INT(ql_status_from_errno(ql_status_to_errno(s)), s);
  QL_CHECK_INT(ql_status_from_errno(ERANGE), QL_EOVERFLOW);
  QL_CHECK_INT(ql_status_from_errno(12345), QL_EINTERNAL);
}

static void test_set_and_release(void) {
  struct ql_error error = {0};
  QL_CHECK_INT(fails_with_einval(&error, "pth"), QL_EINVAL);
  QL_CHECK(error.release != NULL);
  QL_CHECK_INT(error.status, QL_EINVAL);
  QL_CHECK_STR(error.sqlstate, "22023");
  QL_CHECK_INT(error.struct_size, sizeof(struct ql_error));
  QL_CHECK_STR(error.message, "bad option 'pth'");
  QL_CHECK_STR(ql_error_message(&error), "bad option 'pth'");

  /* Setting again releases the first message (no leak under ASan/valgrind). */
  QL_CHECK_INT(ql_error_set(&error, QL_ENOTFOUND, "no table %d", 7), QL_ENOTFOUND);
  QL_CHECK_STR(error.message, "no table 7");
  QL_CHECK_STR(error.sqlstate, "42704");

  ql_error_release(&error);
  QL_CHECK(error.release == NULL);
  QL_CHECK(error.message == NULL);
  QL_CHECK_STR(ql_error_message(&error), "");
  ql_error_release(&error); /* released: no-op */
  ql_error_release(NULL);
  QL_CHECK_STR(ql_error_message(NULL), "");
  /* NULL error: only the status comes back. */
  QL_CHECK_INT(ql_error_set(NULL, QL_EIO, "x"), QL_EIO);
}

static void test_long_message_not_truncated(void) {
  char big[5000];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  struct ql_error error = {0};
  ql_error_set(&error, QL_EDATA, "%s|end", big);
  QL_CHECK_INT(strlen(error.message), 4999 + 4);
  QL_CHECK(strcmp(error.message + 4999, "|end") == 0);
  ql_error_release(&error);
}

static void test_one_line(void) {
  struct ql_error error = {0};
  ql_error_set(&error, QL_EINTERNAL, "line1\nline2\r\n");
  QL_CHECK_STR(error.message, "line1 line2  ");
  ql_error_release(&error);
}

static void test_prefix(void) {
  struct ql_error error = {0};
  QL_CHECK_INT(ql_error_prefix(&error, "ctx"), QL_EINTERNAL); /* unset */
  QL_CHECK(error.release == NULL);
  QL_CHECK_INT(ql_error_prefix(NULL, "ctx"), QL_EINTERNAL);

  ql_error_set(&error, QL_EIO, "read failed");
  QL_CHECK_INT(ql_error_prefix(&error, "opening %s", "x.zarr"), QL_EIO);
  QL_CHECK_STR(error.message, "opening x.zarr: read failed");
  QL_CHECK_INT(error.status, QL_EIO);
  QL_CHECK_STR(error.sqlstate, "58030");
  ql_error_release(&error);

  /* A foreign error keeps its own SQLSTATE; its message is freed through its release. */
  struct ql_error foreign = {0};
  foreign.struct_size = sizeof(foreign);
  foreign.status = QL_EDATA;
  memcpy(foreign.sqlstate, "22P02", 6);
  foreign.message = malloc(8);
  memcpy(foreign.message, "corrupt", 8);
  foreign.release = foreign_release;
  QL_CHECK_INT(ql_error_prefix(&foreign, "chunk %d", 3), QL_EDATA);
  QL_CHECK_STR(foreign.message, "chunk 3: corrupt");
  QL_CHECK_STR(foreign.sqlstate, "22P02");
  QL_CHECK(foreign.release != foreign_release);
  ql_error_release(&foreign);
  QL_CHECK(foreign.release == NULL);
}

static void test_move(void) {
  struct ql_error a = {0}, b = {0};
  ql_error_set(&a, QL_ENOTSUP, "first");
  ql_error_set(&b, QL_EINVAL, "second");
  ql_error_move(&b, &a); /* releases b's old message */
  QL_CHECK(a.release == NULL);
  QL_CHECK(b.release != NULL);
  QL_CHECK_STR(b.message, "first");
  QL_CHECK_INT(b.status, QL_ENOTSUP);
  ql_error_move(&b, &b); /* self-move: no change */
  QL_CHECK_STR(b.message, "first");
  ql_error_release(&b);
}

int main(void) {
  test_names();
  test_errno();
  test_set_and_release();
  test_long_message_not_truncated();
  test_one_line();
  test_prefix();
  test_move();
  QL_TEST_END();
}
