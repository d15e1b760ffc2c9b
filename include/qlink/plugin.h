/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: the plugin descriptor and its one entry point (docs/abi.md R4,
 * R9, R12, section 3.9).
 *
 * A plugin is a shared library exporting exactly one symbol:
 *
 *   int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);
 *
 * The host asks for the newest ABI version it speaks. A plugin that cannot
 * serve that exact version returns QL_EVERSION (message naming the versions
 * it serves) and the host retries with older versions it also speaks, newest
 * first. On QL_OK the plugin has filled `out` for `abi_version`:
 * out->magic == QL_PLUGIN_MAGIC, out->abi_version == abi_version, and
 * out->struct_size the sizeof(struct ql_plugin) of that version. The loader
 * checks these before any other call into the plugin.
 *
 * `qlink_plugin_init` may be called more than once (each call fills an
 * independent descriptor); it is thread-safe.
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_PLUGIN_H
#define QLINK_PLUGIN_H

#include "qlink/function.h"
#include "qlink/planner.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QL_PLUGIN_MAGIC 0x4B4E4C51u /* "QLNK" little-endian */
#define QL_PLUGIN_ENTRY_POINT "qlink_plugin_init"

/* Kinds of objects a plugin offers. */
enum ql_item_kind {
  QL_ITEM_TABLE_PROVIDER = 1,
  QL_ITEM_SCHEMA_PROVIDER = 2,
  QL_ITEM_SCALAR_FUNCTION = 3,
  QL_ITEM_AGGREGATE_FUNCTION = 4,
  QL_ITEM_WINDOW_FUNCTION = 5,
  QL_ITEM_TABLE_FUNCTION = 6,
  QL_ITEM_PLANNER = 7,
  QL_ITEM_OBJECT_STORE = 8
};

/* One entry of the plugin's catalogue. Static, owned by the plugin. */
struct ql_item_info {
  int32_t kind; /* enum ql_item_kind */
  int32_t n_options;
  const char *name;        /* unique per kind within the plugin; [a-z0-9_]+ */
  const char *description; /* one line */
  const struct ql_option_info *options; /* accepted options (table/schema providers, object stores) */
};

/* The plugin descriptor. Filled by qlink_plugin_init; owned by the host,
 * which calls `release` last (after releasing every object obtained from
 * it and every error it filled), then may unload the library.
 *
 * Every `open` member is thread-safe and returns QL_ENOTFOUND for a name
 * the catalogue does not list, and QL_EINVAL naming the option for an
 * unknown or malformed option. An `open` member may be NULL only when the
 * catalogue lists no item of its kind; the host then answers QL_ENOTFOUND
 * itself.
 */
struct ql_plugin {
  uint32_t struct_size;
  uint32_t magic;       /* QL_PLUGIN_MAGIC */
  uint32_t abi_version; /* the version this descriptor was filled for */
  int32_t n_items;
  const char *name;     /* e.g. "qlink_zarr"; also the `library` of its function ids */
  const char *version;  /* the plugin's own version, e.g. "0.1.0" */
  const char *description;
  const struct ql_item_info *items;

  /* Executor hooks (gap G4), both NULL or both set. The host calls enter
   * before every call into any object of this plugin (including each stream
   * get_next and each planner call) and leave after it, on the same thread;
   * `token` carries what enter saved. */
  void *(*executor_enter)(const struct ql_plugin *self);
  void (*executor_leave)(const struct ql_plugin *self, void *token);

  int (*table_provider_open)(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                             const struct ql_session *session, struct ql_table_provider *out,
                             struct ql_error *error);
  int (*schema_provider_open)(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                              const struct ql_session *session, struct ql_schema_provider *out,
                              struct ql_error *error);
  int (*scalar_function_open)(const struct ql_plugin *self, const char *name, struct ql_scalar_function *out,
                              struct ql_error *error);
  int (*aggregate_function_open)(const struct ql_plugin *self, const char *name,
                                 struct ql_aggregate_function *out, struct ql_error *error);
  int (*window_function_open)(const struct ql_plugin *self, const char *name, struct ql_window_function *out,
                              struct ql_error *error);
  int (*table_function_open)(const struct ql_plugin *self, const char *name, struct ql_table_function *out,
                             struct ql_error *error);
  int (*planner_open)(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                      struct ql_planner *out, struct ql_error *error);
  /* An object store for `url` the host can register in its registry. */
  int (*object_store_open)(const struct ql_plugin *self, const char *name, const char *url,
                           const struct ql_options *options, struct ql_object_store *out, struct ql_error *error);

  void (*release)(struct ql_plugin *self);
  void *private_data;
};

/* The entry point's type, for dlsym. */
typedef int (*ql_plugin_init_fn)(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

/* Declares the entry point with default visibility in a plugin built with
 * -fvisibility=hidden:  QL_PLUGIN_EXPORT int qlink_plugin_init(...) { ... } */
#if defined(_WIN32)
#define QL_PLUGIN_EXPORT __declspec(dllexport)
#else
#define QL_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif

#endif /* QLINK_PLUGIN_H */
