/* The allowed-directories rule for plugins named from SQL (plugin_path.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/text.h"
#include "qlink/lib/plugin_path.h"
#include "qlink/lib/status.h"

struct ql_plugin_path {
  int sealed;
  int n;
  char **dirs; /* realpath'd, no trailing '/' (except "/") */
};

int ql_plugin_path_new(struct ql_plugin_path **out, struct ql_error *error) {
  *out = calloc(1, sizeof **out);
  return *out ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
}

void ql_plugin_path_free(struct ql_plugin_path *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) free(p->dirs[i]);
  free(p->dirs);
  free(p);
}

void ql_plugin_path_seal(struct ql_plugin_path *p) { p->sealed = 1; }
int ql_plugin_path_sealed(const struct ql_plugin_path *p) { return p->sealed; }
int ql_plugin_path_count(const struct ql_plugin_path *p) { return p->n; }
const char *ql_plugin_path_dir(const struct ql_plugin_path *p, int i) { return i >= 0 && i < p->n ? p->dirs[i] : NULL; }

int ql_plugin_path_allow(struct ql_plugin_path *p, const char *dir, struct ql_error *error) {
  if (p->sealed)
    return ql_error_set(error, QL_ESTATE, "the plugin directories are sealed: '%s' cannot be allowed now (allow "
                        "directories before running other SQL)", dir ? dir : "");
  if (!dir || !dir[0]) return ql_error_set(error, QL_EINVAL, "an empty plugin directory cannot be allowed");
  char *real = realpath(dir, NULL);
  if (!real) return ql_error_set(error, QL_ENOTFOUND, "plugin directory '%s': %s", dir, strerror(errno));
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    free(real);
    return ql_error_set(error, QL_EINVAL, "plugin directory '%s' is not a directory", dir);
  }
  for (int i = 0; i < p->n; i++) {
    if (strcmp(p->dirs[i], real) == 0) {
      free(real);
      return QL_OK;
    }
  }
  char **dirs = realloc(p->dirs, sizeof *dirs * (size_t)(p->n + 1));
  if (!dirs) {
    free(real);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  p->dirs = dirs;
  p->dirs[p->n++] = real;
  return QL_OK;
}

int ql_plugin_path_allow_list(struct ql_plugin_path *p, const char *list, struct ql_error *error) {
  if (!list) return QL_OK;
  for (const char *s = list; *s;) {
    const char *e = strchr(s, ':');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n > 0) {
      char *dir = ql_strndup(s, n);
      if (!dir) return ql_error_set(error, QL_ENOMEM, "out of memory");
      int rc = ql_plugin_path_allow(p, dir, error);
      free(dir);
      if (rc != QL_OK) return rc;
    }
    s += n;
    if (*s == ':') s++;
  }
  return QL_OK;
}

/* "/a, /b" or "none" into buf. */
static void dirs_text(const struct ql_plugin_path *p, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  if (p->n == 0) snprintf(buf, cap, "none");
  for (int i = 0; i < p->n && used < cap; i++) used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", p->dirs[i]);
}

static int inside(const char *dir, const char *file) {
  size_t n = strlen(dir);
  if (strcmp(dir, "/") == 0) return file[0] == '/';
  return strncmp(dir, file, n) == 0 && file[n] == '/';
}

static int refuse(const struct ql_plugin_path *p, const char *name, const char *why, struct ql_error *error) {
  char dirs[1024];
  dirs_text(p, dirs, sizeof dirs);
  return ql_error_set(error, QL_EINVAL,
                      "plugin '%s' %s: plugins load only from the allowed directories (" QL_PLUGIN_PATH_ENV
                      " or qlink_allow): %s",
                      name, why, dirs);
}

int ql_plugin_path_resolve(const struct ql_plugin_path *p, const char *name, char **out, struct ql_error *error) {
  if (!name || !name[0]) return ql_error_set(error, QL_EINVAL, "an empty plugin name");
  if (p->n == 0) return refuse(p, name, "cannot be loaded", error);
  if (strchr(name, '/') == NULL) {
    for (int i = 0; i < p->n; i++) {
      for (int suffix = 0; suffix < 2; suffix++) {
        char cand[PATH_MAX];
        int len = snprintf(cand, sizeof cand, "%s/%s%s", p->dirs[i], name, suffix ? ".so" : "");
        if (len < 0 || (size_t)len >= sizeof cand) continue;
        char *real = realpath(cand, NULL);
        if (!real) continue;
        if (!inside(p->dirs[i], real)) { /* a symlink leading out of the directory */
          int rc = refuse(p, name, "is a link out of its directory", error);
          free(real);
          return rc;
        }
        *out = real;
        return QL_OK;
      }
    }
    char dirs[1024];
    dirs_text(p, dirs, sizeof dirs);
    return ql_error_set(error, QL_ENOTFOUND, "no plugin '%s' (or '%s.so') in the allowed directories: %s", name, name,
                        dirs);
  }
  char *real = realpath(name, NULL);
  if (!real) return ql_error_set(error, QL_ENOTFOUND, "plugin '%s': %s", name, strerror(errno));
  for (int i = 0; i < p->n; i++) {
    if (inside(p->dirs[i], real)) {
      *out = real;
      return QL_OK;
    }
  }
  char why[PATH_MAX + 32];
  snprintf(why, sizeof why, "resolves to '%s', outside them", real);
  free(real);
  return refuse(p, name, why, error);
}
