/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/loader/plugin_dirs.c: the path rule every SQL-facing host uses. */
#include "qlink/lib/plugin_dirs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static char root[256];

static void touch(const char *rel, const char *text) {
  char path[PATH_MAX + 256];
  snprintf(path, sizeof(path), "%s/%s", root, rel);
  FILE *f = fopen(path, "w");
  QL_CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static char *at(const char *rel) {
  static char path[4][PATH_MAX + 256];
  static int next = 0;
  char *p = path[next++ % 4];
  snprintf(p, sizeof(path[0]), "%s/%s", root, rel);
  return p;
}

static void test_rule(void) {
  struct ql_error err = {0};
  struct ql_plugin_dirs *d = NULL;
  QL_CHECK_OK(ql_plugin_dirs_new(&d, &err), err);
  char *out = NULL;

  /* Nothing allowed yet: every load is refused. */
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("ok/p.so"), &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "no plugin directory is allowed; set QLINK_PLUGIN_PATH") != NULL);

  QL_CHECK_OK(ql_plugin_dirs_add_list(d, at("ok"), "QLINK_PLUGIN_PATH", &err), err);
  QL_CHECK_OK(ql_plugin_dirs_add(d, at("ok/../ok/"), &err), err); /* the same directory once resolved */
  QL_CHECK_INT(ql_plugin_dirs_count(d), 1);
  char real_ok[PATH_MAX];
  QL_CHECK(realpath(at("ok"), real_ok) != NULL);
  QL_CHECK_STR(ql_plugin_dirs_get(d, 0), real_ok);

  /* A path inside, and a name looked up as NAME.so. */
  char want[PATH_MAX + 8];
  snprintf(want, sizeof(want), "%s/p.so", real_ok);
  QL_CHECK_OK(ql_plugin_dirs_resolve(d, at("ok/p.so"), &out, &err), err);
  QL_CHECK_STR(out, want);
  free(out);
  QL_CHECK_OK(ql_plugin_dirs_resolve(d, "p", &out, &err), err);
  QL_CHECK_STR(out, want);
  free(out);
  /* A symlink inside pointing inside is fine; its target is what loads. */
  QL_CHECK_OK(ql_plugin_dirs_resolve(d, at("ok/alias.so"), &out, &err), err);
  QL_CHECK_STR(out, want);
  free(out);

  /* Outside, a symlink out, "..": refused naming the rule. */
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("outside.so"), &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "outside the allowed plugin directories") != NULL);
  QL_CHECK(out == NULL);
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("ok/escape.so"), &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "outside.so, outside the allowed plugin directories") != NULL);
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, "escape", &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "plugin 'escape' resolves to") != NULL);
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("ok/../outside.so"), &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "symlinks and '..' resolved") != NULL);
  /* A directory whose name starts like the allowed one is not inside it. */
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("ok2/q.so"), &out, &err), QL_EINVAL);
  /* Missing files, names in no directory, directories. */
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("ok/missing.so"), &out, &err), QL_ENOTFOUND);
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, "missing", &out, &err), QL_ENOTFOUND);
  QL_CHECK(strstr(ql_error_message(&err), "plugin 'missing' is in no allowed plugin directory") != NULL);
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("ok/sub"), &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "is not a regular file") != NULL);
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, "..", &out, &err), QL_EINVAL);

  /* A non-plugin file inside passes the rule and the loader refuses it. */
  QL_CHECK_OK(ql_plugin_dirs_resolve(d, "notes.txt", &out, &err), err);
  struct ql_loaded_plugin *lp = NULL;
  QL_CHECK_INT(ql_plugin_load(out, &lp, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "is not a qlink plugin") != NULL);
  free(out);

  /* Sealed: no widening. */
  ql_plugin_dirs_seal(d);
  QL_CHECK(ql_plugin_dirs_sealed(d));
  QL_CHECK_INT(ql_plugin_dirs_add(d, root, &err), QL_ESTATE);
  QL_CHECK(strstr(ql_error_message(&err), "the allowed directories are fixed") != NULL);
  QL_CHECK_INT(ql_plugin_dirs_count(d), 1);
  ql_plugin_dirs_free(d);

  /* Bad directories and lists. */
  QL_CHECK_OK(ql_plugin_dirs_new(&d, &err), err);
  QL_CHECK_INT(ql_plugin_dirs_add(d, at("nowhere"), &err), QL_ENOTFOUND);
  QL_CHECK_INT(ql_plugin_dirs_add(d, at("outside.so"), &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "is not a directory") != NULL);
  char list[3 * PATH_MAX];
  snprintf(list, sizeof(list), "::%s:%s", at("ok"), at("nowhere"));
  QL_CHECK_INT(ql_plugin_dirs_add_list(d, list, "QLINK_PLUGIN_PATH", &err), QL_ENOTFOUND);
  QL_CHECK(strncmp(ql_error_message(&err), "QLINK_PLUGIN_PATH: plugin directory '", 37) == 0);
  QL_CHECK_INT(ql_plugin_dirs_count(d), 1);
  QL_CHECK_OK(ql_plugin_dirs_add_list(d, NULL, "QLINK_PLUGIN_PATH", &err), err);
  ql_plugin_dirs_free(d);
  ql_error_release(&err);
}

/* Messages carry every allowed directory in full, however many; a name
 * too long for the system is an error naming the limit, not "absent". */
static void test_no_truncation(void) {
  struct ql_error err = {0};
  struct ql_plugin_dirs *d = NULL;
  QL_CHECK_OK(ql_plugin_dirs_new(&d, &err), err);
  char sub[PATH_MAX];
  size_t total = 0;
  for (int i = 0; i < 40; i++) {
    snprintf(sub, sizeof sub, "ok/many_%02d_with_a_rather_long_directory_name_to_fill_a_message", i);
    QL_CHECK(mkdir(at(sub), 0700) == 0);
    QL_CHECK_OK(ql_plugin_dirs_add(d, at(sub), &err), err);
    total += strlen(ql_plugin_dirs_get(d, i)) + 1;
  }
  char *text = ql_plugin_dirs_text(d);
  QL_CHECK(text != NULL && strlen(text) == total - 1 && total > 2048);
  char *out = NULL;
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, at("outside.so"), &out, &err), QL_EINVAL);
  QL_CHECK(text && strstr(ql_error_message(&err), text) != NULL); /* the whole list, the 40th directory too */
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, "absent", &out, &err), QL_ENOTFOUND);
  QL_CHECK(text && strstr(ql_error_message(&err), text) != NULL);
  free(text);

  char name[NAME_MAX + 8];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  QL_CHECK_INT(ql_plugin_dirs_resolve(d, name, &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "is longer than the system allows (a path of at most 4095 bytes, a name of "
                                          "at most 255)") != NULL);
  QL_CHECK(out == NULL);

  int listed = -1;
  QL_CHECK_OK(ql_plugin_dirs_listed(d, at("ok/many_07_with_a_rather_long_directory_name_to_fill_a_message/"), &listed, &err), err);
  QL_CHECK_INT(listed, 1);
  QL_CHECK_OK(ql_plugin_dirs_listed(d, at("ok"), &listed, &err), err);
  QL_CHECK_INT(listed, 0);
  QL_CHECK_INT(ql_plugin_dirs_listed(d, at("nowhere"), &listed, &err), QL_ENOTFOUND);
  QL_CHECK(strstr(ql_error_message(&err), "nowhere': No such file or directory") != NULL);
  QL_CHECK_INT(ql_plugin_dirs_listed(d, "", &listed, &err), QL_EINVAL);
  ql_plugin_dirs_free(d);

  QL_CHECK_OK(ql_plugin_dirs_new(&d, &err), err);
  text = ql_plugin_dirs_text(d);
  QL_CHECK_STR(text, "");
  free(text);
  ql_plugin_dirs_free(d);
  for (int i = 0; i < 40; i++) {
    snprintf(sub, sizeof sub, "ok/many_%02d_with_a_rather_long_directory_name_to_fill_a_message", i);
    rmdir(at(sub));
  }
  ql_error_release(&err);
}

int main(void) {
  snprintf(root, sizeof(root), "%s", "/tmp/ql_plugin_dirs_XXXXXX");
  QL_CHECK(mkdtemp(root) != NULL);
  QL_CHECK(mkdir(at("ok"), 0700) == 0);
  QL_CHECK(mkdir(at("ok2"), 0700) == 0);
  QL_CHECK(mkdir(at("ok/sub"), 0700) == 0);
  touch("ok/p.so", "x");
  touch("ok2/q.so", "x");
  touch("ok/notes.txt", "not a shared library\n");
  touch("outside.so", "x");
  QL_CHECK(symlink(at("outside.so"), at("ok/escape.so")) == 0);
  QL_CHECK(symlink("p.so", at("ok/alias.so")) == 0);
  test_rule();
  test_no_truncation();
  const char *rels[] = {"ok/alias.so", "ok/escape.so", "outside.so", "ok/notes.txt", "ok2/q.so", "ok/p.so"};
  for (size_t i = 0; i < sizeof(rels) / sizeof(rels[0]); i++) unlink(at(rels[i]));
  rmdir(at("ok/sub"));
  rmdir(at("ok2"));
  rmdir(at("ok"));
  rmdir(root);
  QL_TEST_END();
}
