/* The qlink DuckDB extension (stable C extension API, V1, target 1.5.6):
 * qlink_scan('PLUGIN/PROVIDER?k=v&...') runs one table provider of a qlink
 * plugin inside DuckDB.
 *
 * bind: parse the spec (ql_table_spec_parse), resolve the plugin through
 * the allowed directories (qlink/lib/plugin_dirs.h), open the provider,
 * map its schema (types.c) and set the cardinality from its statistics.
 * init: plan the scan once with the projection DuckDB pushed down; max
 * threads = partition count. Each DuckDB thread takes whole partitions
 * (an atomic counter) and copies their record batches into DuckDB
 * vectors, validity included. Every call into the plugin is bracketed by
 * its executor hooks; its errors carry its message and the spec.
 */
#include "ext_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/plugin_dirs.h"
#include "qlink/lib/status.h"
#include "types.h"
#include "vectors.h"

/* ---- per-database state: the reference host's services, allowed
 * directories and the loaded plugins (never unloaded while DuckDB lives:
 * registered objects may still point into them). */

int qd_plugin_get(struct qd_db *db, const char *name_or_path, const struct ql_plugin **out,
                         struct ql_error *err) {
  pthread_mutex_lock(&db->mutex);
  for (struct qd_plugin *p = db->plugins; p; p = p->next) {
    if (strcmp(p->loaded->plugin.name, name_or_path) == 0) {
      *out = &p->loaded->plugin;
      pthread_mutex_unlock(&db->mutex);
      return QL_OK;
    }
  }
  char *real = NULL;
  int rc = ql_plugin_dirs_resolve(db->dirs, name_or_path, &real, err);
  for (struct qd_plugin *p = db->plugins; rc == QL_OK && p; p = p->next) {
    if (strcmp(p->real_path, real) == 0) {
      *out = &p->loaded->plugin;
      free(real);
      pthread_mutex_unlock(&db->mutex);
      return QL_OK;
    }
  }
  struct ql_loaded_plugin *lp = NULL;
  if (rc == QL_OK) rc = ql_plugin_load(real, &lp, err);
  struct qd_plugin *p = rc == QL_OK ? calloc(1, sizeof(*p)) : NULL;
  if (rc == QL_OK && !p) rc = ql_error_set(err, QL_ENOMEM, "out of memory loading plugin %s", real);
  if (rc == QL_OK) {
    *p = (struct qd_plugin){lp, real, db->plugins};
    db->plugins = p;
    ql_plugin_dirs_seal(db->dirs); /* code from the list ran: no widening later */
    *out = &lp->plugin;
  } else {
    ql_plugin_unload(lp);
    free(real);
  }
  pthread_mutex_unlock(&db->mutex);
  return rc;
}

/* ---- qlink_scan */

void qd_bind_free(void *data) {
  struct qd_bind *b = data;
  if (!b) return;
  if (b->provider.release) {
    void *tok = ql_plugin_enter(b->plugin);
    b->provider.release(&b->provider);
    ql_plugin_leave(b->plugin, tok);
  }
  ql_schema_release(&b->schema);
  free(b->types);
  free(b->label);
  free(b);
}

void qd_follow_settings(struct qd_db *db, duckdb_client_context ctx) {
  if (!ctx) return;
  duckdb_config_option_scope scope;
  duckdb_value v = duckdb_client_context_get_config_option(ctx, "threads", &scope);
  if (v) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)duckdb_get_int64(v));
    ql_ref_host_config_set(db->host, QL_CONFIG_TARGET_PARTITIONS, buf, NULL);
    duckdb_destroy_value(&v);
  }
  v = duckdb_client_context_get_config_option(ctx, "memory_limit", &scope);
  if (v) {
    char *text = duckdb_get_varchar(v);
    double n = 0;
    char unit[16] = "";
    if (text && sscanf(text, "%lf %15s", &n, unit) >= 1) {
      static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB"};
      static const double mult[] = {1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0, 1e3, 1e6, 1e9, 1e12};
      double m = 1;
      for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(unit, units[i]) == 0) m = mult[i];
      }
      ql_ref_memory_pool_set_limit(ql_ref_host_memory_pool(db->host), (int64_t)(n * m), NULL);
    }
    duckdb_free(text);
    duckdb_destroy_value(&v);
  }
}

/* DuckDB's threads and memory_limit become the host's settings. */
static void qd_follow_bind_settings(struct qd_db *db, duckdb_bind_info info) {
  duckdb_client_context ctx = NULL;
  duckdb_table_function_get_client_context(info, &ctx);
  qd_follow_settings(db, ctx);
  if (ctx) duckdb_destroy_client_context(&ctx);
}

int qd_bind_provider(duckdb_bind_info info, struct qd_bind *b, struct ql_error *err) {
  void *tok = ql_plugin_enter(b->plugin);
  int rc = b->provider.get_schema(&b->provider, &b->schema, err);
  ql_plugin_leave(b->plugin, tok);
  if (rc == QL_OK) {
    b->n_columns = b->schema.n_children;
    b->types = calloc((size_t)(b->n_columns ? b->n_columns : 1), sizeof(*b->types));
    if (!b->types) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
  }
  for (int64_t i = 0; rc == QL_OK && i < b->n_columns; i++) {
    char why[256];
    const struct ArrowSchema *c = b->schema.children[i];
    if (qd_type_parse(c->format, &b->types[i], why, sizeof(why)) != 0) {
      rc = ql_error_set(err, QL_ENOTSUP, "column '%s': %s", c->name, why);
      break;
    }
    duckdb_logical_type lt = qd_logical_type(&b->types[i]);
    duckdb_bind_add_result_column(info, c->name, lt);
    duckdb_destroy_logical_type(&lt);
  }
  if (rc == QL_OK && b->provider.get_statistics) {
    struct ql_statistics st = {0};
    st.struct_size = sizeof(st);
    tok = ql_plugin_enter(b->plugin);
    if (b->provider.get_statistics(&b->provider, &st, NULL) == QL_OK) {
      if (st.num_rows_precision != QL_PRECISION_ABSENT && st.num_rows >= 0) {
        duckdb_bind_set_cardinality(info, (idx_t)st.num_rows, st.num_rows_precision == QL_PRECISION_EXACT);
      }
      if (st.release) st.release(&st);
    }
    ql_plugin_leave(b->plugin, tok);
  }
  return rc;
}

static void qd_scan_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  struct ql_error err = {0};
  char msg[1024];
  struct qd_bind *b = calloc(1, sizeof(*b));
  duckdb_value arg = duckdb_bind_get_parameter(info, 0);
  char *spec = arg ? duckdb_get_varchar(arg) : NULL;
  if (arg) duckdb_destroy_value(&arg);
  size_t label_cap = spec ? strlen(spec) + 16 : 0;
  if (b && spec) b->label = malloc(label_cap);
  if (!b || !spec || !b->label) {
    duckdb_bind_set_error(info, "qlink_scan: out of memory");
    free(b);
    duckdb_free(spec);
    return;
  }
  b->db = db;
  snprintf(b->label, label_cap, "qlink_scan('%s')", spec);
  qd_follow_bind_settings(db, info);
  struct ql_table_spec ts = {0};
  int rc = ql_table_spec_parse(spec, &ts, &err);
  duckdb_free(spec);
  if (rc == QL_OK) rc = qd_plugin_get(db, ts.plugin, &b->plugin, &err);
  duckdb_value tv = duckdb_bind_get_named_parameter(info, "table");
  char *table = tv ? duckdb_get_varchar(tv) : NULL;
  if (tv) duckdb_destroy_value(&tv);
  if (rc == QL_OK && table) {
    /* qlink_scan('PLUGIN/SCHEMA_PROVIDER?...', table := 'NAME'): one table of a schema provider (qlink_attach's views). */
    if (!b->plugin->schema_provider_open) {
      rc = ql_error_set(&err, QL_ENOTFOUND, "plugin %s has no schema provider '%s'", b->plugin->name, ts.provider);
    } else {
      struct ql_schema_provider sp = {0};
      void *tok = ql_plugin_enter(b->plugin);
      rc = b->plugin->schema_provider_open(b->plugin, ts.provider, &ts.options, ql_ref_host_session(db->host), &sp,
                                           &err);
      if (rc == QL_OK) {
        rc = sp.table(&sp, table, &b->provider, &err);
        sp.release(&sp);
      }
      ql_plugin_leave(b->plugin, tok);
    }
  } else if (rc == QL_OK) {
    if (!b->plugin->table_provider_open) {
      rc = ql_error_set(&err, QL_ENOTFOUND, "plugin %s has no table provider '%s'", b->plugin->name, ts.provider);
    } else {
      void *tok = ql_plugin_enter(b->plugin);
      rc = b->plugin->table_provider_open(b->plugin, ts.provider, &ts.options, ql_ref_host_session(db->host),
                                           &b->provider, &err);
      ql_plugin_leave(b->plugin, tok);
    }
  }
  ql_table_spec_free(&ts);
  duckdb_free(table);
  if (rc == QL_OK) rc = qd_bind_provider(info, b, &err);
  if (rc != QL_OK) {
    snprintf(msg, sizeof(msg), "%s: %s", b->label, ql_error_message(&err));
    ql_error_release(&err);
    duckdb_bind_set_error(info, msg);
    qd_bind_free(b);
    return;
  }
  duckdb_bind_set_bind_data(info, b, qd_bind_free);
}

struct qd_global {
  struct qd_bind *bind;
  struct ql_execution_plan plan;
  int64_t partitions;
  atomic_llong next;
  atomic_int cancelled;
  int32_t n_out;          /* output columns */
  int32_t *out_source;    /* per output column: index into the plan's schema, or -1 (row id) */
  int32_t *out_col;       /* per output column: its table column (for its type) */
};

static int qd_is_cancelled(const struct ql_task_context *self) {
  struct qd_global *g = self->private_data;
  return atomic_load(&g->cancelled);
}

static void qd_global_free(void *data) {
  struct qd_global *g = data;
  atomic_store(&g->cancelled, 1);
  if (g->plan.release) {
    void *tok = ql_plugin_enter(g->bind->plugin);
    g->plan.release(&g->plan);
    ql_plugin_leave(g->bind->plugin, tok);
  }
  free(g->out_source);
  free(g->out_col);
  free(g);
}

void qd_scan_init(duckdb_init_info info) {
  struct qd_bind *b = duckdb_init_get_bind_data(info);
  struct qd_global *g = calloc(1, sizeof(*g));
  idx_t n = duckdb_init_get_column_count(info);
  int32_t *proj = calloc(n ? n : 1, sizeof(*proj));
  if (g) g->out_source = calloc(n ? n : 1, sizeof(*g->out_source));
  if (g) g->out_col = calloc(n ? n : 1, sizeof(*g->out_col));
  if (!g || !proj || !g->out_source || !g->out_col) {
    duckdb_init_set_error(info, "qlink_scan: out of memory");
    free(proj);
    if (g) free(g->out_source), free(g->out_col);
    free(g);
    return;
  }
  g->bind = b;
  atomic_init(&g->next, 0);
  atomic_init(&g->cancelled, 0);
  int32_t n_proj = 0;
  for (idx_t i = 0; i < n; i++) {
    idx_t col = duckdb_init_get_column_index(info, i);
    if (col < (idx_t)b->n_columns) {
      g->out_col[i] = (int32_t)col;
      g->out_source[i] = n_proj;
      proj[n_proj++] = (int32_t)col;
    } else {
      g->out_source[i] = -1; /* DuckDB's row id: count(*) needs rows, not values */
    }
  }
  g->n_out = (int32_t)n;
  if (n_proj == 0 && b->n_columns > 0) proj[n_proj++] = 0; /* rows still need one column */
  struct ql_scan_args args = {sizeof(args), n_proj, proj, {0}, -1};
  struct ql_error err = {0};
  void *tok = ql_plugin_enter(b->plugin);
  int rc = b->provider.scan(&b->provider, ql_ref_host_session(b->db->host), &args, &g->plan, &err);
  struct ql_plan_properties props = {0};
  props.struct_size = sizeof(props);
  if (rc == QL_OK) rc = g->plan.get_properties(&g->plan, &props, &err);
  ql_plugin_leave(b->plugin, tok);
  free(proj);
  if (rc != QL_OK) {
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s: %s", b->label, ql_error_message(&err));
    ql_error_release(&err);
    duckdb_init_set_error(info, msg);
    qd_global_free(g);
    return;
  }
  g->partitions = props.partition_count;
  duckdb_init_set_max_threads(info, (idx_t)(props.partition_count > 0 ? props.partition_count : 1));
  duckdb_init_set_init_data(info, g, qd_global_free);
}

struct qd_local {
  struct qd_global *g;
  struct ql_task_context ctx;
  struct ArrowArrayStream stream;
  struct ArrowArray batch;
  int64_t offset; /* rows of `batch` already copied */
};

static void qd_local_close(struct qd_local *l) {
  if (!l->g) return;
  const struct ql_plugin *p = l->g->bind->plugin;
  void *tok = ql_plugin_enter(p);
  if (l->batch.release) l->batch.release(&l->batch);
  if (l->stream.release) l->stream.release(&l->stream);
  ql_plugin_leave(p, tok);
}

static void qd_local_free(void *data) {
  struct qd_local *l = data;
  qd_local_close(l);
  free(l);
}

void qd_scan_local_init(duckdb_init_info info) {
  struct qd_local *l = calloc(1, sizeof(*l));
  if (!l) {
    duckdb_init_set_error(info, "qlink_scan: out of memory");
    return;
  }
  duckdb_init_set_init_data(info, l, qd_local_free); /* the scan finds the global state on its first call */
}

static void qd_scan_fail(duckdb_function_info info, struct qd_local *l, const char *what) {
  char msg[1024];
  atomic_store(&l->g->cancelled, 1);
  snprintf(msg, sizeof(msg), "%s: %s", l->g->bind->label, what);
  duckdb_function_set_error(info, msg);
}

void qd_scan(duckdb_function_info info, duckdb_data_chunk output) {
  struct qd_local *l = duckdb_function_get_local_init_data(info);
  if (!l->g) l->g = duckdb_function_get_init_data(info);
  struct qd_global *g = l->g;
  const struct qd_bind *b = g->bind;
  const struct ql_plugin *p = b->plugin;
  idx_t cap = duckdb_vector_size(), filled = 0;
  while (filled == 0) {
    if (!l->batch.release || l->offset >= l->batch.length) {
      void *tok = ql_plugin_enter(p);
      if (l->batch.release) l->batch.release(&l->batch);
      l->offset = 0;
      while (!l->batch.release) {
        if (!l->stream.release) {
          long long part = atomic_fetch_add(&g->next, 1);
          if (part >= g->partitions || atomic_load(&g->cancelled)) break;
          struct ql_error err = {0};
          ql_ref_host_task_context(b->db->host, part, &l->ctx);
          l->ctx.is_cancelled = qd_is_cancelled;
          l->ctx.private_data = g;
          if (g->plan.execute(&g->plan, part, &l->ctx, &l->stream, &err) != QL_OK) {
            ql_plugin_leave(p, tok);
            qd_scan_fail(info, l, ql_error_message(&err));
            ql_error_release(&err);
            return;
          }
        }
        int code = l->stream.get_next(&l->stream, &l->batch);
        if (code != 0) {
          const char *m = l->stream.get_last_error ? l->stream.get_last_error(&l->stream) : NULL;
          char what[900];
          snprintf(what, sizeof(what), "%s", m ? m : strerror(code));
          ql_plugin_leave(p, tok);
          qd_scan_fail(info, l, what);
          return;
        }
        if (!l->batch.release) l->stream.release(&l->stream); /* end of this partition */
        else if (l->batch.length == 0) l->batch.release(&l->batch);
      }
      ql_plugin_leave(p, tok);
      if (!l->batch.release) break; /* every partition done */
    }
    idx_t n = (idx_t)(l->batch.length - l->offset);
    if (n > cap) n = cap;
    for (int32_t c = 0; c < g->n_out; c++) {
      duckdb_vector v = duckdb_data_chunk_get_vector(output, (idx_t)c);
      int32_t src = g->out_source[c];
      if (src < 0) {
        int64_t *ids = duckdb_vector_get_data(v);
        for (idx_t r = 0; r < n; r++) ids[r] = l->offset + (int64_t)r;
        continue;
      }
      qd_copy(&b->types[g->out_col[c]], l->batch.children[src], l->offset, n, v, 0);
    }
    l->offset += (int64_t)n;
    filled = n;
  }
  duckdb_data_chunk_set_size(output, filled);
}

/* ---- entry point */

DUCKDB_EXTENSION_API bool qlink_init_c_api(duckdb_extension_info info, struct duckdb_extension_access *access);

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access *access) {
  struct qd_db *db = calloc(1, sizeof(*db));
  struct ql_error err = {0};
  char msg[1024];
  if (!db) {
    access->set_error(info, "qlink: out of memory");
    return false;
  }
  pthread_mutex_init(&db->mutex, NULL);
  pthread_mutex_init(&db->ddl_mutex, NULL);
  int rc = ql_ref_host_new(NULL, &db->host, &err);
  if (rc == QL_OK) rc = ql_plugin_dirs_new(&db->dirs, &err);
  if (rc == QL_OK) rc = ql_plugin_dirs_add_list(db->dirs, getenv(QL_PLUGIN_PATH_ENV), QL_PLUGIN_PATH_ENV, &err);
  if (rc != QL_OK) {
    snprintf(msg, sizeof(msg), "qlink: %s", ql_error_message(&err));
    ql_error_release(&err);
    access->set_error(info, msg);
    return false; /* db stays allocated: DuckDB may still hold nothing of it, but freeing races nothing */
  }
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "qlink_scan");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_table_function_add_parameter(f, varchar);
  duckdb_table_function_add_named_parameter(f, "table", varchar);
  duckdb_destroy_logical_type(&varchar);
  duckdb_table_function_set_extra_info(f, db, NULL);
  duckdb_table_function_set_bind(f, qd_scan_bind);
  duckdb_table_function_set_init(f, qd_scan_init);
  duckdb_table_function_set_local_init(f, qd_scan_local_init);
  duckdb_table_function_set_function(f, qd_scan);
  duckdb_table_function_supports_projection_pushdown(f, true);
  duckdb_state st = duckdb_register_table_function(connection, f);
  duckdb_destroy_table_function(&f);
  if (st != DuckDBSuccess || qd_register_catalog(connection, db) != 0 || qd_register_functions(connection, db) != 0) {
    access->set_error(info, "qlink: registering the qlink functions failed");
    return false;
  }
  /* A connection of its own for qlink_attach's DDL (held while DuckDB lives). */
  duckdb_database *database = access->get_database(info);
  if (!database || duckdb_connect(*database, &db->ddl) != DuckDBSuccess) {
    access->set_error(info, "qlink: cannot open a connection for qlink_attach");
    return false;
  }
  return true;
}
