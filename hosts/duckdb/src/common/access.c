/* SPDX-License-Identifier: Apache-2.0 */
/* What DuckDB's settings let qlink load and read, shared by both builds (no
 * DuckDB call: v1/bind.c and v2/bind.c read the settings, see qd_settings).
 *
 * - lock_configuration true: the plugin directory list is sealed (no
 *   qlink_allow), as DuckDB refuses SET then.
 * - enable_external_access false: no plugin loads (DuckDB refuses LOAD
 *   then), qlink_allow is refused, a spec's `path` option must name a file
 *   inside allowed_directories / allowed_paths (a URL other than memory://
 *   is refused), and the session's file:// object store (what plugins such
 *   as qlink_zarr read through) serves only those files.
 *
 * DuckDB cannot undo either switch while the database runs, so each is a
 * latch here: seen once, kept. The allowed lists are frozen by DuckDB while
 * external access is off, so they are copied once, when the latch closes. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/db.h"
#include "qlink/lib/host.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/plugin_dirs.h"
#include "qlink/lib/status.h"

/* ---- text */

char *qd_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (!out) return NULL;
  va_start(ap, fmt);
  vsnprintf(out, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return out;
}

const char *qd_text_or_oom(const char *s) { return s ? s : "qlink: out of memory formatting an error message"; }

/* ---- the latches */

void qd_settings_free(struct qd_settings *s) {
  for (int64_t i = 0; i < s->n_dirs; i++) free(s->dirs[i]);
  for (int64_t i = 0; i < s->n_paths; i++) free(s->paths[i]);
  free(s->dirs);
  free(s->paths);
  free(s->memory_limit);
  memset(s, 0, sizeof(*s));
}

int qd_settings_add(char ***list, int64_t *n, const char *text) {
  char **grown = realloc(*list, sizeof(**list) * (size_t)(*n + 1));
  if (!grown) return -1;
  *list = grown;
  if (!(grown[*n] = strdup(text))) return -1;
  (*n)++;
  return 0;
}

/* An allowed entry as the checks compare it: resolved when it exists (so a
 * symlinked directory matches its files' real paths), without a trailing
 * '/' (the root stays "/"). */
static char *qd_entry(const char *text) {
  char *real = realpath(text, NULL);
  char *e = real ? real : strdup(text);
  size_t n = e ? strlen(e) : 0;
  while (n > 1 && e[n - 1] == '/') e[--n] = '\0';
  return e;
}

void qd_apply_settings(struct qd_db *db, int64_t threads, const char *memory_limit) {
  if (threads > 0) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)threads);
    ql_ref_host_config_set(db->host, QL_CONFIG_TARGET_PARTITIONS, buf, NULL);
  }
  double n = 0;
  char unit[16] = "";
  if (memory_limit && sscanf(memory_limit, "%lf %15s", &n, unit) >= 1) {
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB"};
    static const double mult[] = {1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0, 1e3, 1e6, 1e9, 1e12};
    double m = 1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
      if (strcmp(unit, units[i]) == 0) m = mult[i];
    }
    ql_ref_memory_pool_set_limit(ql_ref_host_memory_pool(db->host), (int64_t)(n * m), NULL);
  }
}

int qd_follow(struct qd_db *db, struct qd_settings *s, struct ql_error *err) {
  if (s->locked < 0 || s->external < 0) {
    return ql_error_set(err, QL_EINTERNAL,
                        "DuckDB did not give its settings lock_configuration and enable_external_access, which decide "
                        "what qlink may load: refused");
  }
  qd_apply_settings(db, s->threads, s->memory_limit);
  if (s->locked && !atomic_load(&db->locked)) {
    ql_plugin_dirs_seal(db->dirs);
    atomic_store(&db->locked, 1);
  }
  if (!s->external && !atomic_load(&db->no_external)) {
    pthread_mutex_lock(&db->mutex);
    if (!atomic_load(&db->no_external)) {
      int64_t n = s->n_dirs + s->n_paths, k = 0;
      char **allowed = calloc((size_t)(n ? n : 1), sizeof(*allowed));
      for (int64_t i = 0; allowed && i < n; i++) {
        allowed[k] = qd_entry(i < s->n_dirs ? s->dirs[i] : s->paths[i - s->n_dirs]);
        if (allowed[k]) k++;
      }
      /* Published before the latch: readers that see it see the lists. On
       * no memory the lists stay empty, which allows nothing. */
      db->allowed = allowed;
      db->n_allowed_dirs = allowed && k == n ? s->n_dirs : 0;
      db->n_allowed = allowed && k == n ? n : 0;
      ql_plugin_dirs_seal(db->dirs);
      atomic_store(&db->no_external, 1);
    }
    pthread_mutex_unlock(&db->mutex);
  }
  return QL_OK;
}

/* ---- paths */

/* Is absolute `path` inside allowed_directories or one of allowed_paths?
 * Resolved first when it exists (a symlink out of an allowed directory is
 * refused); DuckDB's entries are compared at a '/' boundary. */
static int qd_path_allowed(const struct qd_db *db, const char *path) {
  char *real = realpath(path, NULL);
  const char *p = real ? real : path;
  int ok = 0;
  for (int64_t i = 0; !ok && i < db->n_allowed; i++) {
    const char *e = db->allowed[i];
    size_t n = strlen(e);
    if (i >= db->n_allowed_dirs) ok = strcmp(p, e) == 0;
    else ok = strncmp(p, e, n) == 0 && (p[n] == '/' || p[n] == '\0' || (n == 1 && e[0] == '/'));
  }
  free(real);
  return ok;
}

static int qd_refuse_read(const char *what, const char *path, struct ql_error *err) {
  return ql_error_set(err, QL_EINVAL,
                      "%s '%s' is refused: DuckDB's enable_external_access is false and it lies in none of "
                      "allowed_directories and allowed_paths",
                      what, path);
}

int qd_check_options(struct qd_db *db, const struct ql_options *options, struct ql_error *err) {
  if (!atomic_load(&db->no_external)) return QL_OK;
  for (int64_t i = 0; i < options->count; i++) {
    if (strcmp(options->keys[i], "path") != 0) continue;
    const char *v = options->values[i];
    char *store = NULL, *path = NULL;
    int rc = ql_url_split(v, &store, &path, err);
    if (rc == QL_OK && strcmp(store, "memory://") != 0) {
      if (strcmp(store, "file://") != 0) {
        rc = ql_error_set(err, QL_EINVAL,
                          "reading URL '%s' is refused: DuckDB's enable_external_access is false", v);
      } else {
        char *abs = qd_printf("/%s", path);
        rc = !abs                          ? ql_error_set(err, QL_ENOMEM, "out of memory")
             : qd_path_allowed(db, abs) ? QL_OK
                                           : qd_refuse_read("option path", v, err);
        free(abs);
      }
    }
    free(store);
    free(path);
    if (rc != QL_OK) return rc;
  }
  return QL_OK;
}

/* ---- the session's file:// store, guarded */

struct qd_guard {
  struct qd_db *db;
  struct ql_object_store inner;
};

static int qd_guard_check(const struct ql_object_store *self, const char *path, struct ql_error *err) {
  const struct qd_guard *g = self->private_data;
  if (!atomic_load(&g->db->no_external)) return QL_OK;
  char *abs = qd_printf("/%s", path ? path : "");
  int rc = !abs                             ? ql_error_set(err, QL_ENOMEM, "out of memory")
           : qd_path_allowed(g->db, abs) ? QL_OK
                                            : qd_refuse_read("reading file", abs, err);
  free(abs);
  return rc;
}

static int qd_guard_head(const struct ql_object_store *self, const char *path, struct ql_object_meta *out,
                         struct ql_error *err) {
  const struct qd_guard *g = self->private_data;
  int rc = qd_guard_check(self, path, err);
  return rc == QL_OK ? g->inner.head(&g->inner, path, out, err) : rc;
}

static int qd_guard_get_range(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                              struct ql_bytes *out, struct ql_error *err) {
  const struct qd_guard *g = self->private_data;
  int rc = qd_guard_check(self, path, err);
  return rc == QL_OK ? g->inner.get_range(&g->inner, path, offset, length, out, err) : rc;
}

static int qd_guard_read_into(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                              uint8_t *dst, int64_t *out_len, struct ql_error *err) {
  const struct qd_guard *g = self->private_data;
  *out_len = 0;
  int rc = qd_guard_check(self, path, err);
  return rc == QL_OK ? g->inner.read_into(&g->inner, path, offset, length, dst, out_len, err) : rc;
}

static int qd_guard_list(const struct ql_object_store *self, const char *prefix, struct ql_object_list *out,
                         struct ql_error *err) {
  const struct qd_guard *g = self->private_data;
  int rc = qd_guard_check(self, prefix, err);
  return rc == QL_OK ? g->inner.list(&g->inner, prefix, out, err) : rc;
}

static void qd_guard_release(struct ql_object_store *self) {
  struct qd_guard *g = self->private_data;
  if (g && g->inner.release) g->inner.release(&g->inner);
  free(g);
  self->release = NULL;
}

int qd_guard_files(struct qd_db *db, struct ql_error *err) {
  struct qd_guard *g = calloc(1, sizeof(*g));
  if (!g) return ql_error_set(err, QL_ENOMEM, "out of memory");
  g->db = db;
  int rc = ql_file_store_new(&g->inner, err);
  if (rc != QL_OK) {
    free(g);
    return rc;
  }
  struct ql_object_store store = {0};
  store.struct_size = sizeof(store);
  store.head = qd_guard_head;
  store.get_range = qd_guard_get_range;
  store.read_into = QL_HAS_MEMBER(&g->inner, struct ql_object_store, read_into) && g->inner.read_into
                        ? qd_guard_read_into
                        : NULL;
  store.list = qd_guard_list;
  store.release = qd_guard_release;
  store.private_data = g;
  return ql_ref_store_registry_register(ql_ref_host_stores(db->host), "file://", &store, err);
}
