/* SPDX-License-Identifier: Apache-2.0 */
/* The allowed plugin directories and the path rule (qlink/lib/plugin_dirs.h):
 * every directory is held resolved (realpath), and a candidate is accepted
 * when its realpath starts with one of them followed by '/'. */
#include "qlink/lib/plugin_dirs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/text.h"
#include "qlink/lib/status.h"

struct ql_plugin_dirs {
  pthread_mutex_t mutex;
  char **dirs; /* resolved, without trailing '/' (except "/" itself) */
  int64_t count, cap;
  int sealed;
};

int ql_plugin_dirs_new(struct ql_plugin_dirs **out, struct ql_error *error) {
  *out = calloc(1, sizeof(**out));
  if (!*out) return ql_error_set(error, QL_ENOMEM, "out of memory creating the plugin directory list");
  if (pthread_mutex_init(&(*out)->mutex, NULL) != 0) {
    free(*out);
    *out = NULL;
    return ql_error_set(error, QL_EINTERNAL, "pthread_mutex_init failed for the plugin directory list");
  }
  return QL_OK;
}

void ql_plugin_dirs_free(struct ql_plugin_dirs *dirs) {
  if (!dirs) return;
  for (int64_t i = 0; i < dirs->count; i++) free(dirs->dirs[i]);
  free(dirs->dirs);
  pthread_mutex_destroy(&dirs->mutex);
  free(dirs);
}

int ql_plugin_dirs_add(struct ql_plugin_dirs *dirs, const char *dir, struct ql_error *error) {
  if (!dir || !dir[0]) return ql_error_set(error, QL_EINVAL, "plugin directory: empty path");
  char *real = realpath(dir, NULL);
  if (!real) {
    return ql_error_set(error, errno == ENOENT ? QL_ENOTFOUND : QL_EINVAL, "plugin directory '%s': %s", dir,
                        strerror(errno));
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    int rc = ql_error_set(error, QL_EINVAL, "plugin directory '%s' is not a directory", dir);
    free(real);
    return rc;
  }
  pthread_mutex_lock(&dirs->mutex);
  int rc = QL_OK;
  if (dirs->sealed) {
    rc = ql_error_set(error, QL_ESTATE,
                      "plugin directory '%s': the allowed directories are fixed once a plugin was loaded or the "
                      "configuration locked", dir);
  } else {
    int listed = 0;
    for (int64_t i = 0; i < dirs->count && !listed; i++) listed = strcmp(dirs->dirs[i], real) == 0;
    if (!listed) {
      if (dirs->count == dirs->cap) {
        int64_t cap = dirs->cap ? dirs->cap * 2 : 4;
        char **grown = realloc(dirs->dirs, (size_t)cap * sizeof(*grown));
        if (!grown) {
          rc = ql_error_set(error, QL_ENOMEM, "out of memory adding plugin directory '%s'", dir);
        } else {
          dirs->dirs = grown;
          dirs->cap = cap;
        }
      }
      if (rc == QL_OK) {
        dirs->dirs[dirs->count++] = real;
        real = NULL;
      }
    }
  }
  pthread_mutex_unlock(&dirs->mutex);
  free(real);
  return rc;
}

int ql_plugin_dirs_add_list(struct ql_plugin_dirs *dirs, const char *list, const char *what,
                            struct ql_error *error) {
  if (!list) return QL_OK;
  const char *p = list;
  while (*p) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0) {
      char *dir = ql_strndup(p, n);
      if (!dir) return ql_error_set(error, QL_ENOMEM, "out of memory reading %s", what);
      int rc = ql_plugin_dirs_add(dirs, dir, error);
      free(dir);
      if (rc != QL_OK) return ql_error_prefix(error, "%s", what);
    }
    p += n;
    if (*p == ':') p++;
  }
  return QL_OK;
}

void ql_plugin_dirs_seal(struct ql_plugin_dirs *dirs) {
  pthread_mutex_lock(&dirs->mutex);
  dirs->sealed = 1;
  pthread_mutex_unlock(&dirs->mutex);
}

int ql_plugin_dirs_sealed(const struct ql_plugin_dirs *dirs) {
  struct ql_plugin_dirs *d = (struct ql_plugin_dirs *)dirs;
  pthread_mutex_lock(&d->mutex);
  int sealed = d->sealed;
  pthread_mutex_unlock(&d->mutex);
  return sealed;
}

int64_t ql_plugin_dirs_count(const struct ql_plugin_dirs *dirs) {
  struct ql_plugin_dirs *d = (struct ql_plugin_dirs *)dirs;
  pthread_mutex_lock(&d->mutex);
  int64_t n = d->count;
  pthread_mutex_unlock(&d->mutex);
  return n;
}

const char *ql_plugin_dirs_get(const struct ql_plugin_dirs *dirs, int64_t i) {
  struct ql_plugin_dirs *d = (struct ql_plugin_dirs *)dirs;
  pthread_mutex_lock(&d->mutex);
  const char *dir = i >= 0 && i < d->count ? d->dirs[i] : NULL;
  pthread_mutex_unlock(&d->mutex);
  return dir;
}

/* The allowed directory holding `real`, or NULL. */
static const char *containing_dir(struct ql_plugin_dirs *d, const char *real) {
  const char *found = NULL;
  pthread_mutex_lock(&d->mutex);
  for (int64_t i = 0; i < d->count && !found; i++) {
    size_t n = strlen(d->dirs[i]);
    int root = n == 1 && d->dirs[i][0] == '/';
    if (root || (strncmp(real, d->dirs[i], n) == 0 && real[n] == '/')) found = d->dirs[i];
  }
  pthread_mutex_unlock(&d->mutex);
  return found;
}

/* "DIR1:DIR2:...", every allowed directory in full (malloc'd; "" when none,
 * NULL when out of memory). */
static char *allowed_list(struct ql_plugin_dirs *d) {
  pthread_mutex_lock(&d->mutex);
  size_t size = 1;
  for (int64_t i = 0; i < d->count; i++) size += strlen(d->dirs[i]) + 1;
  char *list = malloc(size);
  if (list) {
    size_t used = 0;
    for (int64_t i = 0; i < d->count; i++) {
      if (i) list[used++] = ':';
      size_t n = strlen(d->dirs[i]);
      memcpy(list + used, d->dirs[i], n);
      used += n;
    }
    list[used] = '\0';
  }
  pthread_mutex_unlock(&d->mutex);
  return list;
}

/* Accept `candidate` if its realpath is a regular file inside an allowed directory. */
static int check_path(struct ql_plugin_dirs *d, const char *input, const char *candidate, char **out,
                      struct ql_error *error) {
  char *real = realpath(candidate, NULL);
  if (!real) {
    return ql_error_set(error, errno == ENOENT || errno == ENOTDIR ? QL_ENOTFOUND : QL_EINVAL,
                        "plugin '%s': %s", input, strerror(errno));
  }
  if (!containing_dir(d, real)) {
    char *dirs = allowed_list(d);
    int rc = ql_error_set(error, QL_EINVAL,
                          "plugin '%s' resolves to %s, outside the allowed plugin directories (%s): plugins load "
                          "only from " QL_PLUGIN_PATH_ENV " or qlink_allow directories, symlinks and '..' resolved",
                          input, real, dirs ? dirs : "(out of memory listing them)");
    free(dirs);
    free(real);
    return rc;
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
    int rc = ql_error_set(error, QL_EINVAL, "plugin '%s' (%s) is not a regular file", input, real);
    free(real);
    return rc;
  }
  *out = real;
  return QL_OK;
}

/* DIR/NAME.so or DIR/NAME when it exists: QL_OK with *found set (*path
 * malloc'd) or clear; an error when the joined path exceeds the system's
 * limits (the lookup could not be made, which is not "absent"). */
static int lookup_name(const char *dir, const char *name, const char *suffix, char **path, int *found,
                       struct ql_error *error) {
  *found = 0;
  size_t n = strlen(dir) + 1 + strlen(name) + strlen(suffix) + 1;
  *path = malloc(n);
  if (!*path) return ql_error_set(error, QL_ENOMEM, "out of memory looking up plugin '%s'", name);
  snprintf(*path, n, "%s/%s%s", dir, name, suffix);
  struct stat st;
  if (stat(*path, &st) == 0) {
    *found = 1;
    return QL_OK;
  }
  int e = errno, rc = QL_OK;
  if (e == ENAMETOOLONG) {
    rc = ql_error_set(error, QL_EINVAL,
                      "plugin '%s': %s is longer than the system allows (a path of at most %d bytes, a name of at "
                      "most %d)", name, *path, PATH_MAX - 1, NAME_MAX);
  } else if (e != ENOENT && e != ENOTDIR) {
    rc = ql_error_set(error, QL_EINVAL, "plugin '%s': %s: %s", name, *path, strerror(e));
  }
  free(*path);
  *path = NULL;
  return rc;
}

int ql_plugin_dirs_resolve(const struct ql_plugin_dirs *dirs, const char *name_or_path, char **out,
                           struct ql_error *error) {
  struct ql_plugin_dirs *d = (struct ql_plugin_dirs *)dirs;
  *out = NULL;
  if (!name_or_path || !name_or_path[0]) return ql_error_set(error, QL_EINVAL, "plugin: empty name or path");
  if (ql_plugin_dirs_count(d) == 0) {
    return ql_error_set(error, QL_EINVAL,
                        "plugin '%s': no plugin directory is allowed; set " QL_PLUGIN_PATH_ENV
                        " or call qlink_allow('DIR') before loading plugins",
                        name_or_path);
  }
  if (strchr(name_or_path, '/')) return check_path(d, name_or_path, name_or_path, out, error);
  if (strcmp(name_or_path, "..") == 0 || strcmp(name_or_path, ".") == 0) {
    return ql_error_set(error, QL_EINVAL, "plugin '%s' is no plugin name", name_or_path);
  }
  for (int64_t i = 0; i < ql_plugin_dirs_count(d); i++) {
    const char *dir = ql_plugin_dirs_get(d, i);
    const char *suffixes[] = {".so", ""};
    for (int s = 0; s < 2; s++) {
      char *path = NULL;
      int found = 0;
      QL_RETURN_NOT_OK(lookup_name(dir, name_or_path, suffixes[s], &path, &found, error));
      if (found) {
        int rc = check_path(d, name_or_path, path, out, error);
        free(path);
        return rc;
      }
    }
  }
  char *listed = allowed_list(d);
  int rc = ql_error_set(error, QL_ENOTFOUND, "plugin '%s' is in no allowed plugin directory (%s)", name_or_path,
                        listed ? listed : "(out of memory listing them)");
  free(listed);
  return rc;
}

int ql_plugin_dirs_listed(const struct ql_plugin_dirs *dirs, const char *dir, int *listed, struct ql_error *error) {
  struct ql_plugin_dirs *d = (struct ql_plugin_dirs *)dirs;
  *listed = 0;
  if (!dir || !dir[0]) return ql_error_set(error, QL_EINVAL, "plugin directory: empty path");
  char *real = realpath(dir, NULL);
  if (!real) {
    return ql_error_set(error, errno == ENOENT ? QL_ENOTFOUND : QL_EINVAL, "plugin directory '%s': %s", dir,
                        strerror(errno));
  }
  pthread_mutex_lock(&d->mutex);
  for (int64_t i = 0; i < d->count && !*listed; i++) *listed = strcmp(d->dirs[i], real) == 0;
  pthread_mutex_unlock(&d->mutex);
  free(real);
  return QL_OK;
}

char *ql_plugin_dirs_text(const struct ql_plugin_dirs *dirs) { return allowed_list((struct ql_plugin_dirs *)dirs); }
