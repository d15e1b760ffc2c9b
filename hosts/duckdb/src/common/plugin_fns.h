/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host: a plugin's functions as DuckDB functions, the part both
 * builds share (plugin_fns.c): qlink_load's walk over a plugin's catalogue,
 * opening scalar and aggregate functions with their DuckDB types, the
 * argument checks, a scalar call and the aggregate states over DuckDB
 * vectors, and a plugin table function bound into a qlink_scan bind.
 * v1/functions.c and v2/functions.c are the glue: how DuckDB calls these,
 * and how each build makes the functions exist. */
#ifndef QLINK_DUCKDB_PLUGIN_FNS_H
#define QLINK_DUCKDB_PLUGIN_FNS_H

#include "common/db.h"
#include "common/scan.h"
#include "common/types.h"
#include "qlink/lib/ir.h"

struct qd_rows;

#define QD_MAX_ARGS 64
#define QD_TF_MAX_ARGS 8

/* One scalar or aggregate function of a plugin with its DuckDB types.
 * Owned by DuckDB once registered (V1: the function's extra info; V2: a
 * call site's bind data); freed with qd_fn_free. Read-only after open:
 * shared by every thread. */
struct qd_fn {
  const struct ql_plugin *plugin;
  char *label;     /* "PLUGIN.NAME", malloc'd */
  int32_t kind;    /* QL_ITEM_SCALAR_FUNCTION or QL_ITEM_AGGREGATE_FUNCTION */
  int32_t n_args;
  const char *formats[QD_MAX_ARGS]; /* the signature's, owned by the function object */
  int32_t volatile_;                /* scalar: the plugin declares it volatile */
  struct ql_scalar_function scalar;
  struct ql_aggregate_function aggregate;
  struct ArrowSchema args_schema; /* struct of the declared formats */
  struct qd_type ret;
};

/* Open item `it` (a scalar or aggregate function of `p`) and settle its
 * DuckDB types: refused (QL_ENOTSUP, the reason in err) when it declares
 * no argument formats, more than QD_MAX_ARGS, a format DuckDB values cannot
 * fill, or a return type with no DuckDB mapping. */
int qd_fn_open(const struct ql_plugin *p, const struct ql_item_info *it, struct qd_fn **out, struct ql_error *err);
void qd_fn_free(void *fn);
/* The plugin function `name` of plugin `plugin` (a scalar or aggregate per
 * `kind`), loaded through the allowed directories; errors name it. */
int qd_fn_find(struct qd_db *db, const char *plugin, const char *name, int32_t kind, struct qd_fn **out,
               struct ql_error *err);
/* Can argument `a` (0-based) of DuckDB type `type` (a V1 type id) reach
 * `f`? 0; else -1 with "PLUGIN.NAME: argument 1 is VARCHAR, the function
 * takes BIGINT (Arrow 'l')" in *msg (malloc'd; NULL without memory). */
int qd_fn_check_arg(const struct qd_fn *f, int32_t a, int32_t type, char **msg);
/* "PLUGIN.NAME: <err's message>", malloc'd (NULL without memory); releases err. */
char *qd_fn_message(const struct qd_fn *f, struct ql_error *err);

/* A scalar call: the `n` rows of the f->n_args vectors `args` into
 * `result`. The plugin's error in err. */
int qd_fn_scalar(const struct qd_fn *f, const qd_vector *args, idx_t n, qd_vector result, struct ql_error *err);

/* One aggregate state, in memory DuckDB allocates (qd_agg_state_size
 * bytes): the plugin's accumulator, made at the first row. */
size_t qd_agg_state_size(void);
void qd_agg_init(void *state, const struct qd_fn *f);
/* Row r of the vectors `args` into states[r], for r < n: each state gets
 * its rows as one batch. */
int qd_agg_update(const struct qd_fn *f, const qd_vector *args, idx_t n, void *const *states, struct ql_error *err);
/* sources[i] merged into targets[i]. */
int qd_agg_combine(const struct qd_fn *f, void *const *sources, void *const *targets, idx_t count,
                   struct ql_error *err);
/* states[i] evaluated into row offset + i of `result`. */
int qd_agg_finalize(const struct qd_fn *f, void *const *states, idx_t count, qd_vector result, idx_t offset,
                    struct ql_error *err);
void qd_agg_destroy(void *const *states, idx_t count);

/* A constant argument of a plugin table function, read from DuckDB: its
 * type (a V1 type id) and, per qd_cell_kind_of(type), its value. */
struct qd_const {
  int32_t type;
  int32_t is_null;
  int64_t i;      /* integers, BOOLEAN */
  uint64_t u;     /* UBIGINT */
  double f;       /* FLOAT, DOUBLE, DECIMAL */
  const char *text; /* VARCHAR (NUL-terminated, borrowed) */
};
/* Call table function `name` of plugin `plugin` with the `n` constants
 * `args` (as literals) into a new qlink_scan bind labelled "PLUGIN.NAME"
 * with b->plugin and b->provider set; the caller binds its schema as
 * qlink_scan does. *out is set whenever memory allows, also on failure
 * (its label prefixes the error; free it with qd_bind_free). */
int qd_tf_open(struct qd_db *db, const char *plugin, const char *name, const struct qd_const *args, idx_t n,
               struct qd_bind **out, struct ql_error *err);

/* ---- qlink_load */

/* How a build makes one function exist (V1 registers it, V2 adds its
 * CREATE MACRO to the PRAGMA's query): QL_OK, or the reason in err. */
typedef int (*qd_load_fn)(void *ctx, struct qd_db *db, const struct ql_plugin *p, const struct ql_item_info *it,
                          struct ql_error *err);
/* qlink_load's work: every function of `plugin` (or only the one named
 * `only`, which then fails with its refusal), one row (name, kind, status)
 * each into r (3 columns): "loaded" (`load` succeeded), "already loaded"
 * (this database loaded it before) or "refused: <why>". With `mark`, what
 * loads is marked loaded here; without, the caller marks it once it exists
 * (qd_load_mark). Errors come without the "qlink_load('PLUGIN')" prefix.
 * Thread-safe. */
int qd_load_plugin(struct qd_db *db, const char *plugin, const char *only, int mark, qd_load_fn load, void *ctx,
                   struct qd_rows *r, struct ql_error *err);
/* Mark "PLUGIN.NAME" loaded in this database. */
void qd_load_mark(struct qd_db *db, const char *label);

#endif /* QLINK_DUCKDB_PLUGIN_FNS_H */
