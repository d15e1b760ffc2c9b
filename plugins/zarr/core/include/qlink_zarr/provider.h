/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: a zr_dataset's tables as qlink table providers, the dataset
 * as a schema provider. Shared by every plugin over the XQL table model
 * (qlink_zarr's stores, qlink_ndarray's arrays in memory).
 *
 * Providers hold a reference to the dataset (model.h) and are immutable:
 * any thread may call them. Filters on dimension columns are answered
 * EXACT (filters.h), everything else UNSUPPORTED; statistics as scan.h's.
 */
#ifndef QLINK_ZARR_PROVIDER_H
#define QLINK_ZARR_PROVIDER_H

#include "qlink/plugin.h"
#include "qlink/table.h"
#include "qlink_zarr/model.h"

/* Table `table` of `ds` as a table provider (takes a reference to ds). */
int zr_table_provider_new(struct zr_dataset *ds, int32_t table, struct ql_table_provider *out, struct ql_error *error);
/* The table named `want` (NULL: the only or largest), else QL_ENOTFOUND
 * naming the dataset (ds->label) and listing its tables. */
int zr_table_provider_find(struct zr_dataset *ds, const char *want, struct ql_table_provider *out,
                           struct ql_error *error);
/* Every table of `ds` as a schema provider; takes over the caller's
 * reference to ds (released with the provider). */
void zr_schema_provider_new(struct zr_dataset *ds, struct ql_schema_provider *out);
/* The session's "qlink.execution.target_partitions"; 0 when not said. */
int64_t zr_target_partitions(const struct ql_session *session);
/* The `block_rows` option (`text` NULL: ZR_DEFAULT_BLOCK_ROWS): a positive
 * integer up to ZR_MAX_BLOCK_ROWS, else QL_EINVAL naming `what`. */
int zr_parse_block_rows(const char *text, const char *what, int64_t *out, struct ql_error *error);

/* The `nan_fill` option (enum zr_nan_fill; model.h): `text` NULL gives
 * `dflt`; "null" gives `null_is`, "nan" ZR_NAN_FILL_NAN, "all"
 * ZR_NAN_FILL_ALL when `allow_all`; anything else is QL_EINVAL naming
 * `what` and the values `accepted` lists. */
int zr_parse_nan_fill(const char *text, const char *what, int32_t dflt, int32_t null_is, int allow_all,
                      const char *accepted, int32_t *out, struct ql_error *error);

/* qlink_plugin_init of a plugin that offers table and schema providers
 * only. `own` holds the plugin's own members: name, version, description,
 * n_items, items, table_provider_open, schema_provider_open and
 * private_data (its other members are not read; it must outlive the
 * descriptor, as its strings and items do). *out becomes a descriptor for
 * `abi_version` with those members; its scalar, aggregate, window and
 * table functions, planners and object stores each answer QL_ENOTFOUND
 * naming the plugin and the item asked for; its release only marks it
 * released. Returns QL_OK; QL_EVERSION (naming own->name and the version
 * asked for) unless abi_version is QL_ABI_VERSION_0_1; QL_EINVAL when out
 * is NULL. */
int zr_plugin_fill(uint32_t abi_version, const struct ql_plugin *own, struct ql_plugin *out, struct ql_error *error);

#endif /* QLINK_ZARR_PROVIDER_H */
