/* The allowed-directories rule (qlink/lib/plugin_path.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qlink/lib/plugin_path.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static void touch(const char *path) {
  FILE *f = fopen(path, "w");
  if (f) fclose(f);
}

int main(void) {
  char root[] = "/tmp/ql_plugin_path_XXXXXX";
  QL_CHECK(mkdtemp(root) != NULL);
  char a[512], b[512], in_a[600], in_b[600], link[600], sub[600], dotdot[800], sealed_msg[700];
  snprintf(a, sizeof a, "%s/a", root);
  snprintf(b, sizeof b, "%s/b", root);
  mkdir(a, 0700);
  mkdir(b, 0700);
  snprintf(in_a, sizeof in_a, "%s/one.so", a);
  snprintf(in_b, sizeof in_b, "%s/two.so", b);
  touch(in_a);
  touch(in_b);
  snprintf(link, sizeof link, "%s/out.so", a);
  QL_CHECK_INT(symlink(in_b, link), 0);
  snprintf(sub, sizeof sub, "%s/sub", a);
  mkdir(sub, 0700);
  snprintf(dotdot, sizeof dotdot, "%s/sub/../../b/two.so", a);

  struct ql_plugin_path *p = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_plugin_path_new(&p, &err), err);
  char *out = NULL;
  /* nothing allowed: every name refused */
  QL_CHECK_INT(ql_plugin_path_resolve(p, "one", &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "allowed directories (QLINK_PLUGIN_PATH or qlink_allow): none") != NULL);
  ql_error_release(&err);
  /* a list with an empty entry */
  char list[1100];
  snprintf(list, sizeof list, "%s::%s/sub", a, a);
  QL_CHECK_OK(ql_plugin_path_allow_list(p, list, &err), err);
  QL_CHECK_INT(ql_plugin_path_count(p), 2);
  QL_CHECK_INT(ql_plugin_path_allow(p, "/nonexistent/dir", &err), QL_ENOTFOUND);
  ql_error_release(&err);
  QL_CHECK_INT(ql_plugin_path_allow(p, in_a, &err), QL_EINVAL); /* a file, not a directory */
  ql_error_release(&err);
  /* by name, with and without .so */
  QL_CHECK_OK(ql_plugin_path_resolve(p, "one", &out, &err), err);
  char *real_a = realpath(in_a, NULL);
  QL_CHECK_STR(out, real_a);
  free(out);
  QL_CHECK_OK(ql_plugin_path_resolve(p, "one.so", &out, &err), err);
  QL_CHECK_STR(out, real_a);
  free(out);
  QL_CHECK_OK(ql_plugin_path_resolve(p, in_a, &out, &err), err);
  QL_CHECK_STR(out, real_a);
  free(out);
  free(real_a);
  /* outside, symlink out (by name and by path), .. */
  QL_CHECK_INT(ql_plugin_path_resolve(p, in_b, &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "outside them") != NULL);
  ql_error_release(&err);
  QL_CHECK_INT(ql_plugin_path_resolve(p, "out", &out, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "is a link out of its directory") != NULL);
  ql_error_release(&err);
  QL_CHECK_INT(ql_plugin_path_resolve(p, link, &out, &err), QL_EINVAL);
  ql_error_release(&err);
  QL_CHECK_INT(ql_plugin_path_resolve(p, dotdot, &out, &err), QL_EINVAL);
  ql_error_release(&err);
  QL_CHECK_INT(ql_plugin_path_resolve(p, "missing", &out, &err), QL_ENOTFOUND);
  ql_error_release(&err);
  QL_CHECK_INT(ql_plugin_path_resolve(p, "", &out, &err), QL_EINVAL);
  ql_error_release(&err);
  /* sealed: no widening */
  ql_plugin_path_seal(p);
  QL_CHECK(ql_plugin_path_sealed(p));
  QL_CHECK_INT(ql_plugin_path_allow(p, b, &err), QL_ESTATE);
  snprintf(sealed_msg, sizeof sealed_msg, "the plugin directories are sealed: '%s' cannot be allowed now", b);
  QL_CHECK(strncmp(ql_error_message(&err), sealed_msg, strlen(sealed_msg)) == 0);
  ql_error_release(&err);
  QL_CHECK_INT(ql_plugin_path_count(p), 2);
  ql_plugin_path_free(p);

  unlink(link);
  unlink(in_a);
  unlink(in_b);
  rmdir(sub);
  rmdir(a);
  rmdir(b);
  rmdir(root);
  QL_TEST_END();
}
