/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: table providers, execution plans and schema providers
 * (docs/abi.md section 3.6; R10 for filter pushdown).
 *
 * The objects here follow the conventions every ABI object shares
 * (ownership, moves, thread-safety, outputs): see qlink/qlink.h and
 * docs/abi.md R1, R2.
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_TABLE_H
#define QLINK_TABLE_H

#include "qlink/plan.h"
#include "qlink/services.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------- execution plan */

enum ql_boundedness { QL_BOUNDED = 0, QL_UNBOUNDED = 1 };

/* One sort key of an output ordering. */
struct ql_sort_key {
  int32_t column; /* index into the plan's output schema */
  int32_t flags;  /* QL_SORT_DESC | QL_SORT_NULLS_FIRST (qlink/plan.h) */
};

/* Properties the host's optimizer needs (DataFusion's PlanProperties).
 * Filled by the plan; `ordering` is owned by the plan and valid while it lives. */
struct ql_plan_properties {
  uint32_t struct_size;
  int32_t boundedness; /* enum ql_boundedness */
  int64_t partition_count;
  int64_t n_ordering; /* 0: no known ordering within each partition */
  const struct ql_sort_key *ordering;
};

enum ql_metric_kind {
  QL_METRIC_COUNT = 1,   /* a count, e.g. output_rows */
  QL_METRIC_TIME_NS = 2, /* elapsed compute time, nanoseconds */
  QL_METRIC_BYTES = 3,   /* bytes, e.g. bytes_scanned */
  QL_METRIC_GAUGE = 4    /* a level, e.g. peak memory */
};

struct ql_metric {
  const char *name;  /* e.g. "output_rows", "elapsed_compute", "chunks_pruned" */
  int32_t kind;      /* enum ql_metric_kind */
  int32_t reserved_;
  int64_t partition; /* -1: whole plan */
  int64_t value;
};

/* A snapshot of a plan's metrics; owned by the caller, `release` frees it. */
struct ql_metrics {
  int64_t count;
  struct ql_metric *items;
  void (*release)(struct ql_metrics *self);
  void *private_data;
};

/* An execution plan (physical plan node), as a plugin or a host provides it.
 *
 * Thread-safety: every member is thread-safe; `execute` is called for each
 * partition, possibly all at once from different threads.
 * Lifetime: the plan must outlive the streams it produced only in the sense
 * that a stream keeps what it needs alive itself: a stream may be read after
 * its plan was released.
 */
struct ql_execution_plan {
  uint32_t struct_size;
  /* A short CamelCase name shown in EXPLAIN, e.g. "ZarrScanExec". Borrowed
   * for the plan's lifetime. */
  const char *(*name)(const struct ql_execution_plan *self);
  /* One line of detail for EXPLAIN, e.g. "store=... arrays=[t2m] chunks=12/40".
   * Borrowed for the plan's lifetime. */
  const char *(*display)(const struct ql_execution_plan *self);
  /* Output schema (a struct schema); `out` owned by the caller. */
  int (*get_schema)(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error);
  int (*get_properties)(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                        struct ql_error *error);
  /* Children the host may see, optimize and display (gap G3). */
  int64_t (*child_count)(const struct ql_execution_plan *self);
  /* Borrowed child `i` (0 <= i < child_count), valid while self lives. */
  const struct ql_execution_plan *(*child)(const struct ql_execution_plan *self, int64_t i);
  /* A copy of this plan over new children (the host's optimizer rewrote
   * them). `children` are moved into the callee (on success and failure).
   * QL_ENOTSUP if the plan cannot take new children. */
  int (*with_new_children)(const struct ql_execution_plan *self, struct ql_execution_plan *children,
                           int64_t n_children, struct ql_execution_plan *out, struct ql_error *error);
  /* Execute one partition (0 <= partition < partition_count) and return its
   * record batches as a stream. `ctx` stays valid until `out` is released.
   * The stream's get_next returns 0 with a released array (release == NULL)
   * at the end, and an errno-style code plus get_last_error() on failure. */
  int (*execute)(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                 struct ArrowArrayStream *out, struct ql_error *error);
  /* Statistics of one partition (or of the whole plan when partition == -1),
   * over the output schema. May be NULL: the host treats all as absent. */
  int (*get_statistics)(const struct ql_execution_plan *self, int64_t partition, struct ql_statistics *out,
                        struct ql_error *error);
  /* Metrics gathered so far (for EXPLAIN ANALYZE). May be NULL. */
  int (*get_metrics)(const struct ql_execution_plan *self, struct ql_metrics *out, struct ql_error *error);
  void (*release)(struct ql_execution_plan *self);
  void *private_data;
};

/* --------------------------------------------------------- table provider */

enum ql_table_type { QL_TABLE_BASE = 1, QL_TABLE_VIEW = 2, QL_TABLE_TEMPORARY = 3 };

/* Per-filter answer to the pushdown handshake (SQLite's xBestIndex,
 * DataFusion's TableProviderFilterPushDown). */
enum ql_filter_pushdown {
  QL_PUSHDOWN_UNSUPPORTED = 0, /* the scan ignores it: the host filters */
  QL_PUSHDOWN_INEXACT = 1,     /* the scan uses it to prune; the host filters again */
  QL_PUSHDOWN_EXACT = 2        /* the scan returns only rows that pass: the host does not re-check */
};

/* What a scan is asked for. Borrowed for the duration of `scan`. */
struct ql_scan_args {
  uint32_t struct_size;
  /* Columns to produce, as indices into the table's schema, in this order;
   * n_projection == -1 means every column. */
  int32_t n_projection;
  const int32_t *projection;
  /* Filters to apply (those answered EXACT must be applied exactly; the
   * others may be used to prune). Column expressions index the full schema. */
  struct ql_expr_list filters;
  /* At most this many rows are needed (-1: no limit). Only set when no filter
   * answered other than EXACT is present. */
  int64_t limit;
};

/* A table provider: a named table a plugin offers.
 * Thread-safety: every member is thread-safe. */
struct ql_table_provider {
  uint32_t struct_size;
  int32_t table_type; /* enum ql_table_type */
  int32_t reserved_;
  /* The table's schema (a struct schema); `out` owned by the caller. */
  int (*get_schema)(const struct ql_table_provider *self, struct ArrowSchema *out, struct ql_error *error);
  /* Table-level statistics over the full schema. May be NULL (all absent). */
  int (*get_statistics)(const struct ql_table_provider *self, struct ql_statistics *out, struct ql_error *error);
  /* Answer, for each filter, how the scan will treat it: answers[i] receives
   * an enum ql_filter_pushdown. May be NULL: every filter is UNSUPPORTED. */
  int (*supports_filters)(const struct ql_table_provider *self, const struct ql_expr_list *filters,
                          int32_t *answers, struct ql_error *error);
  /* Plan a scan. `session` is borrowed for the call. `out` owned by the caller. */
  int (*scan)(const struct ql_table_provider *self, const struct ql_session *session,
              const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error);
  void (*release)(struct ql_table_provider *self);
  void *private_data;
};

/* A schema provider: a set of tables a plugin discovers at once (all the
 * tables of a Zarr store, say). Thread-safe. */
struct ql_schema_provider {
  uint32_t struct_size;
  int32_t reserved_;
  int64_t (*table_count)(const struct ql_schema_provider *self);
  /* Borrowed name of table `i`, valid while self lives. */
  const char *(*table_name)(const struct ql_schema_provider *self, int64_t i);
  /* Open table `name`; `out` owned by the caller. QL_ENOTFOUND if absent. */
  int (*table)(const struct ql_schema_provider *self, const char *name, struct ql_table_provider *out,
               struct ql_error *error);
  void (*release)(struct ql_schema_provider *self);
  void *private_data;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_TABLE_H */
