/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/loader/loader.c.
 *
 * Error paths use files that are not plugins (a missing path, a text file,
 * libm). Negotiation and descriptor checks use tiny plugins this test
 * compiles at run time with the system C compiler (`cc`, or $CC) from the
 * source below, one shared library per MODE. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static const char plugin_source[] =
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include \"qlink/plugin.h\"\n"
    "QL_PLUGIN_EXPORT int qlt_init_calls = 0;\n"
    "static void rel_err(struct ql_error *e) { free(e->message); e->message = NULL; e->release = NULL; }\n"
    "static int set_err(struct ql_error *e, int st, const char *m) {\n"
    "  if (!e) return st;\n"
    "  size_t n = strlen(m) + 1;\n"
    "  e->struct_size = sizeof *e; e->status = st; memcpy(e->sqlstate, \"XX000\", 6);\n"
    "  e->message = malloc(n); memcpy(e->message, m, n); e->release = rel_err;\n"
    "  return st;\n"
    "}\n"
    "static int open_tp(const struct ql_plugin *self, const char *name, const struct ql_options *o,\n"
    "                   const struct ql_session *s, struct ql_table_provider *out, struct ql_error *e) {\n"
    "  (void)self; (void)name; (void)o; (void)s; (void)out;\n"
    "  return set_err(e, QL_ENOTFOUND, \"no table here\");\n"
    "}\n"
    "static void release_plugin(struct ql_plugin *p) { p->release = NULL; }\n"
    "static const struct ql_option_info opts[] = {{\"path\", \"where\", NULL, 1, 0}};\n"
    "static const struct ql_item_info items[] = {{QL_ITEM_TABLE_PROVIDER, 1, \"store\", \"a store\", opts}};\n"
    "static const struct ql_item_info bad_items[] = {{QL_ITEM_TABLE_PROVIDER, 0, \"Bad-Name\", \"x\", NULL}};\n"
    "static const struct ql_item_info orphan_items[] = {{QL_ITEM_PLANNER, 0, \"p\", \"x\", NULL}};\n"
    "QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t v, struct ql_plugin *out, struct ql_error *e) {\n"
    "  qlt_init_calls++;\n"
    "  if (MODE == 4) { set_err(e, 0, \"garbage\"); return 777; }\n"
    "  if (MODE == 5) return set_err(e, QL_EIO, \"cannot read /etc/qlt.conf\");\n"
    "  uint32_t served = MODE == 2 ? QL_ABI_VERSION_MAKE(0, 2) : QL_ABI_VERSION_0_1;\n"
    "  if (v != served) return set_err(e, QL_EVERSION, MODE == 2 ? \"serves 0.2 only\" : \"serves 0.1 only\");\n"
    "  memset(out, 0, sizeof *out);\n"
    "  out->struct_size = MODE == 8 ? 16 : sizeof *out;\n"
    "  out->magic = MODE == 3 ? 0xDEADBEEFu : QL_PLUGIN_MAGIC;\n"
    "  out->abi_version = v;\n"
    "  out->name = \"qlink_test\"; out->version = \"1.2.3\"; out->description = \"test plugin\";\n"
    "  out->n_items = 1;\n"
    "  out->items = MODE == 7 ? bad_items : (MODE == 9 ? orphan_items : items);\n"
    "  out->table_provider_open = open_tp;\n"
    "  out->release = MODE == 6 ? NULL : release_plugin;\n"
    "  return QL_OK;\n"
    "}\n";

enum { GOOD = 1, NEWER_ONLY = 2, BAD_MAGIC = 3, GARBAGE_STATUS = 4, INIT_FAILS = 5, NO_RELEASE = 6, BAD_ITEM = 7,
       BAD_SIZE = 8, NO_OPENER = 9, N_MODES = 10 };

static char dir[] = "/tmp/ql_loader_test_XXXXXX";
static char plugin_path[N_MODES][300];

/* The source tree: $QL_SOURCE_DIR (set by ctest), else derived from this
 * file's path as the compiler saw it (CMake passes absolute paths), so the
 * test also runs outside ctest (scripts/valgrind.sh). */
static void source_dir(char *buf, size_t cap) {
  const char *env = getenv("QL_SOURCE_DIR");
  if (env && env[0]) {
    snprintf(buf, cap, "%s", env);
    return;
  }
  snprintf(buf, cap, "%s", __FILE__);
  char *tail = strstr(buf, "/src/");
  if (tail) {
    *tail = '\0';
  } else {
    snprintf(buf, cap, ".");
  }
}

static int build_plugins(void) {
  if (!mkdtemp(dir)) return 0;
  char src_path[300];
  snprintf(src_path, sizeof(src_path), "%s/plugin.c", dir);
  FILE *f = fopen(src_path, "w");
  if (!f) return 0;
  fputs(plugin_source, f);
  fclose(f);
  char src_dir[1024];
  source_dir(src_dir, sizeof(src_dir));
  const char *cc = getenv("CC");
  for (int mode = 1; mode < N_MODES; mode++) {
    snprintf(plugin_path[mode], sizeof(plugin_path[mode]), "%s/p%d.so", dir, mode);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%s -std=c11 -Wall -Werror -shared -fPIC -DMODE=%d -I'%s/include' -o '%s' '%s'",
             cc && cc[0] ? cc : "cc", mode, src_dir, plugin_path[mode], src_path);
    if (system(cmd) != 0) {
      fprintf(stderr, "could not build a test plugin (needs cc and the source tree): %s\n", cmd);
      return 0;
    }
  }
  return 1;
}

static void remove_plugins(void) {
  char path[300];
  for (int mode = 1; mode < N_MODES; mode++) unlink(plugin_path[mode]);
  snprintf(path, sizeof(path), "%s/plugin.c", dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/not_a_library.so", dir);
  unlink(path);
  rmdir(dir);
}

static void test_not_plugins(void) {
  struct ql_error error = {0};
  struct ql_loaded_plugin *p = (struct ql_loaded_plugin *)1;
  QL_CHECK_INT(ql_plugin_load("/nonexistent/qlink_nope.so", &p, &error), QL_ENOTFOUND);
  QL_CHECK(p == NULL);
  QL_CHECK(strstr(error.message, "cannot load plugin '/nonexistent/qlink_nope.so': ") == error.message);
  QL_CHECK(strstr(error.message, "No such file or directory") != NULL); /* dlerror's words */
  QL_CHECK_STR(error.sqlstate, "42704");

  char text_path[300];
  snprintf(text_path, sizeof(text_path), "%s/not_a_library.so", dir);
  FILE *f = fopen(text_path, "w");
  QL_CHECK(f != NULL);
  if (f) {
    fputs("this is not an ELF file\n", f);
    fclose(f);
  }
  QL_CHECK_INT(ql_plugin_load(text_path, &p, &error), QL_EINVAL);
  char expected[400];
  snprintf(expected, sizeof(expected), "%s is not a qlink plugin: ", text_path);
  QL_CHECK(strncmp(error.message, expected, strlen(expected)) == 0);

  /* A real shared library without the entry point. */
  QL_CHECK_INT(ql_plugin_load("libm.so.6", &p, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "libm.so.6 is not a qlink plugin: no qlink_plugin_init");
  QL_CHECK(p == NULL);

  QL_CHECK_INT(ql_plugin_load("", &p, &error), QL_EINVAL);
  QL_CHECK_INT(ql_plugin_load_versions("libm.so.6", NULL, 0, &p, &error), QL_EINVAL);
  QL_CHECK(ql_plugin_find_item(NULL, QL_ITEM_TABLE_PROVIDER, "x") == NULL);
  ql_plugin_unload(NULL);
  ql_error_release(&error);
}

static void test_good_plugin(void) {
  struct ql_error error = {0};
  struct ql_loaded_plugin *p = NULL;
  QL_CHECK_OK(ql_plugin_load(plugin_path[GOOD], &p, &error), error);
  if (!p) return;
  QL_CHECK_INT(p->abi_version, QL_ABI_VERSION_0_1);
  QL_CHECK_STR(p->path, plugin_path[GOOD]);
  QL_CHECK_STR(p->plugin.name, "qlink_test");
  QL_CHECK_STR(p->plugin.version, "1.2.3");
  QL_CHECK_INT(p->plugin.n_items, 1);
  const struct ql_item_info *item = ql_plugin_find_item(&p->plugin, QL_ITEM_TABLE_PROVIDER, "store");
  QL_CHECK(item != NULL);
  if (item) QL_CHECK_STR(item->options[0].name, "path");
  QL_CHECK(ql_plugin_find_item(&p->plugin, QL_ITEM_SCALAR_FUNCTION, "store") == NULL);
  QL_CHECK(ql_plugin_find_item(&p->plugin, QL_ITEM_TABLE_PROVIDER, "other") == NULL);
  int *calls = dlsym(p->dl_handle, "qlt_init_calls");
  QL_CHECK(calls != NULL);
  if (calls) QL_CHECK_INT(*calls, 1);

  /* A call into the plugin; its error is released before the unload. */
  struct ql_table_provider tp;
  QL_CHECK_INT(p->plugin.table_provider_open(&p->plugin, "x", NULL, NULL, &tp, &error), QL_ENOTFOUND);
  QL_CHECK_STR(error.message, "no table here");
  ql_error_release(&error);
  ql_plugin_unload(p);

  /* Negotiation falls back from a version the plugin refuses. */
  const uint32_t versions[] = {QL_ABI_VERSION_MAKE(0, 3), QL_ABI_VERSION_MAKE(0, 2), QL_ABI_VERSION_0_1};
  QL_CHECK_OK(ql_plugin_load_versions(plugin_path[GOOD], versions, 3, &p, &error), error);
  if (!p) return;
  QL_CHECK_INT(p->abi_version, QL_ABI_VERSION_0_1);
  calls = dlsym(p->dl_handle, "qlt_init_calls");
  if (calls) QL_CHECK_INT(*calls, 3); /* 0.3 and 0.2 refused, 0.1 served */
  ql_plugin_unload(p);
}

static void expect_failure(int mode, const uint32_t *versions, int32_t n, int status, const char *message_tail) {
  struct ql_error error = {0};
  struct ql_loaded_plugin *p = (struct ql_loaded_plugin *)1;
  int rc = versions ? ql_plugin_load_versions(plugin_path[mode], versions, n, &p, &error)
                    : ql_plugin_load(plugin_path[mode], &p, &error);
  QL_CHECK_INT(rc, status);
  QL_CHECK(p == NULL);
  char expected[800];
  snprintf(expected, sizeof(expected), "plugin '%s' %s", plugin_path[mode], message_tail);
  QL_CHECK_STR(error.message, expected);
  ql_error_release(&error);
}

static void test_bad_plugins(void) {
  expect_failure(NEWER_ONLY, NULL, 0, QL_EVERSION,
                 "serves none of the ABI versions this host speaks (0.1); the plugin said: serves 0.2 only");
  const uint32_t v2[] = {QL_ABI_VERSION_MAKE(0, 2), QL_ABI_VERSION_0_1};
  {
    /* Offered 0.2 first, the 0.2-only plugin loads at 0.2. */
    struct ql_error error = {0};
    struct ql_loaded_plugin *p = NULL;
    QL_CHECK_OK(ql_plugin_load_versions(plugin_path[NEWER_ONLY], v2, 2, &p, &error), error);
    if (p) QL_CHECK_INT(p->abi_version, QL_ABI_VERSION_MAKE(0, 2));
    ql_plugin_unload(p);
  }
  expect_failure(BAD_MAGIC, NULL, 0, QL_EINTERNAL, "breaks the ABI: magic is 0xdeadbeef, expected 0x4b4e4c51");
  expect_failure(GARBAGE_STATUS, NULL, 0, QL_EINTERNAL,
                 "returned invalid status 777 from qlink_plugin_init (ABI 0.1): garbage");
  expect_failure(INIT_FAILS, NULL, 0, QL_EIO,
                 "failed to initialise (ABI 0.1): QL_EIO: cannot read /etc/qlt.conf");
  expect_failure(NO_RELEASE, NULL, 0, QL_EINTERNAL, "(qlink_test) breaks the ABI: release is NULL");
  expect_failure(BAD_ITEM, NULL, 0, QL_EINTERNAL, "breaks the ABI: item 0 has name 'Bad-Name' (need [a-z0-9_]+)");
  char size_tail[120];
  snprintf(size_tail, sizeof(size_tail), "breaks the ABI: struct_size 16 for version 0.1, expected %zu",
           sizeof(struct ql_plugin));
  expect_failure(BAD_SIZE, NULL, 0, QL_EINTERNAL, size_tail);
  expect_failure(NO_OPENER, NULL, 0, QL_EINTERNAL,
                 "breaks the ABI: item 'p' has kind 7 but the plugin has no opener for it");
}

int main(void) {
  int built = build_plugins();
  QL_CHECK(built);
  test_not_plugins();
  if (built) {
    test_good_plugin();
    test_bad_plugins();
  }
  remove_plugins();
  QL_TEST_END();
}
