/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: the plugin loader.
 *
 * Loads a plugin with dlopen(RTLD_NOW | RTLD_LOCAL), finds
 * `qlink_plugin_init`, negotiates the ABI version (newest first, falling
 * back), and checks the descriptor (magic, version, struct size, name, the
 * catalogue) before anything else is called.
 *
 * Thread-safety: loading and unloading distinct plugins is thread-safe.
 */
#ifndef QLINK_LIB_LOADER_H
#define QLINK_LIB_LOADER_H

#include "qlink/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_loaded_plugin {
  struct ql_plugin plugin; /* the descriptor; do not release it yourself */
  uint32_t abi_version;    /* the negotiated version */
  char *path;              /* as given */
  void *dl_handle;
};

/* Load with the versions this libqlink speaks (QL_ABI_VERSION down to 0.1).
 * Errors: QL_ENOTFOUND (no such file; message has dlerror), QL_EINVAL (not a
 * shared library, or no qlink_plugin_init: "PATH is not a qlink plugin: ..."),
 * QL_EVERSION (no common version; names both sides' versions), QL_EINTERNAL
 * (the descriptor breaks the rules, e.g. wrong magic or NULL release).
 * `*out` is owned by the caller: ql_plugin_unload. */
int ql_plugin_load(const char *path, struct ql_loaded_plugin **out, struct ql_error *error);
/* Same with an explicit list of versions, newest first. */
int ql_plugin_load_versions(const char *path, const uint32_t *versions, int32_t n_versions,
                            struct ql_loaded_plugin **out, struct ql_error *error);
/* Release the descriptor, dlclose, free. Release every object and error
 * obtained from the plugin first. NULL allowed. */
void ql_plugin_unload(struct ql_loaded_plugin *plugin);

/* The catalogue entry of `kind` named `name`, or NULL. */
const struct ql_item_info *ql_plugin_find_item(const struct ql_plugin *plugin, int32_t kind, const char *name);

/* Parse a table spec "PLUGIN/PROVIDER?key=value&key2=value2" (values
 * percent-decoded). Outputs are malloc'd; free with ql_table_spec_free.
 * PLUGIN may be a path: the split is at the last '/' before the first '?'.
 * Plugin, provider, keys and values are percent-decoded ('+' stays '+');
 * empty '&' segments are skipped; only the first '=' of an option splits.
 * QL_EINVAL naming the spec for: no '/', an empty plugin or provider, an
 * option without '=', an empty key, a repeated key (the first repeat in
 * spec order; found in O(n log n), so any number of options is fine), a bad
 * escape. On failure `out` is left empty (nothing to free). */
struct ql_table_spec {
  char *plugin;
  char *provider;
  struct ql_options options; /* keys/values arrays owned by the spec */
};
int ql_table_spec_parse(const char *spec, struct ql_table_spec *out, struct ql_error *error);
/* The same for a spec of `len` bytes that need not end in NUL (text a host
 * got with a length, e.g. SQLite's sqlite3_value_bytes): a NUL byte inside
 * it is QL_EINVAL naming its offset (ql_text_check_nul, qlink/lib/text.h)
 * instead of silently ending the spec there. */
int ql_table_spec_parse_n(const char *spec, size_t len, struct ql_table_spec *out, struct ql_error *error);
void ql_table_spec_free(struct ql_table_spec *spec);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_LOADER_H */
