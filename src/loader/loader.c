/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin loader: dlopen, find the one entry point, negotiate the ABI
 * version newest first, and check the descriptor before any other call
 * into the plugin. Errors the plugin fills are released (through the
 * plugin's own release) before the library is closed. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/text.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"

/* "0.1" for QL_ABI_VERSION_0_1. */
static void ql_version_string(uint32_t v, char *buf, size_t cap) {
  snprintf(buf, cap, "%u.%u", (unsigned)QL_ABI_VERSION_MAJOR(v), (unsigned)QL_ABI_VERSION_MINOR(v));
}

/* "0.2, 0.1" (malloc'd, NULL when out of memory): each version is at most
 * 23 bytes ("65535.65535" and more), so the size is known up front. */
static char *ql_versions_string(const uint32_t *versions, int32_t n) {
  size_t cap = (size_t)(n > 0 ? n : 0) * 26 + 1, used = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  buf[0] = '\0';
  for (int32_t i = 0; i < n; i++) {
    char one[24];
    ql_version_string(versions[i], one, sizeof(one));
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", one);
  }
  return buf;
}

/* sizeof(struct ql_plugin) at each version these headers know; 0 if unknown. */
static size_t ql_plugin_size_for(uint32_t version) {
  return version == QL_ABI_VERSION_0_1 ? sizeof(struct ql_plugin) : 0;
}

/* A copy of the plugin's message, then its error released (while its code is still mapped). */
static char *ql_take_plugin_message(struct ql_error *perr) {
  char *message = NULL;
  if (perr->release) {
    message = ql_strdup(perr->message ? perr->message : "");
    perr->release(perr);
  }
  return message ? message : ql_strdup("(no message)");
}

static int ql_item_name_ok(const char *name) {
  if (!name || !name[0]) return 0;
  for (const char *p = name; *p; p++) {
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
  }
  return 1;
}

/* Is the open member serving items of `kind` set? */
static int ql_item_has_opener(const struct ql_plugin *p, int32_t kind) {
  switch (kind) {
    case QL_ITEM_TABLE_PROVIDER:
      return p->table_provider_open != NULL;
    case QL_ITEM_SCHEMA_PROVIDER:
      return p->schema_provider_open != NULL;
    case QL_ITEM_SCALAR_FUNCTION:
      return p->scalar_function_open != NULL;
    case QL_ITEM_AGGREGATE_FUNCTION:
      return p->aggregate_function_open != NULL;
    case QL_ITEM_WINDOW_FUNCTION:
      return p->window_function_open != NULL;
    case QL_ITEM_TABLE_FUNCTION:
      return p->table_function_open != NULL;
    case QL_ITEM_PLANNER:
      return p->planner_open != NULL;
    case QL_ITEM_OBJECT_STORE:
      return p->object_store_open != NULL;
    default:
      return 0;
  }
}

static int ql_check_items(const struct ql_plugin *p, const char *path, struct ql_error *error) {
  if (p->n_items < 0 || (p->n_items > 0 && !p->items)) {
    return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: n_items is %d with items %s", path,
                        (int)p->n_items, p->items ? "set" : "NULL");
  }
  for (int32_t i = 0; i < p->n_items; i++) {
    const struct ql_item_info *item = &p->items[i];
    if (!ql_item_name_ok(item->name)) {
      return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: item %d has name '%s' (need [a-z0-9_]+)",
                          path, (int)i, item->name ? item->name : "(null)");
    }
    if (!ql_item_has_opener(p, item->kind)) {
      return ql_error_set(error, QL_EINTERNAL,
                          "plugin '%s' breaks the ABI: item '%s' has kind %d but the plugin has no opener for it",
                          path, item->name, (int)item->kind);
    }
    if (item->n_options < 0 || (item->n_options > 0 && !item->options)) {
      return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: item '%s' lists %d options without an array",
                          path, item->name, (int)item->n_options);
    }
    for (int32_t o = 0; o < item->n_options; o++) {
      if (!item->options[o].name || !item->options[o].name[0]) {
        return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: option %d of item '%s' has no name",
                            path, (int)o, item->name);
      }
    }
    for (int32_t j = 0; j < i; j++) {
      if (p->items[j].kind == item->kind && strcmp(p->items[j].name, item->name) == 0) {
        return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: two items of kind %d named '%s'", path,
                            (int)item->kind, item->name);
      }
    }
  }
  return QL_OK;
}

/* Check what qlink_plugin_init filled for `version` (magic, ABI version,
 * struct_size, name, version, release, executor hooks, catalogue) before
 * anything else is called; the first rule broken fails the load.
 * qlink-check's ql_check_negotiation_and_descriptor (src/check/descriptor.c)
 * reports every rule broken instead. */
static int ql_validate_filled_descriptor(const struct ql_plugin *p, uint32_t version, const char *path,
                                         struct ql_error *error) {
  char v[24];
  ql_version_string(version, v, sizeof(v));
  if (p->magic != QL_PLUGIN_MAGIC) {
    return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: magic is 0x%08x, expected 0x%08x", path,
                        (unsigned)p->magic, (unsigned)QL_PLUGIN_MAGIC);
  }
  if (p->abi_version != version) {
    char got[24];
    ql_version_string(p->abi_version, got, sizeof(got));
    return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: asked for version %s, it filled version %s",
                        path, v, got);
  }
  size_t expected = ql_plugin_size_for(version);
  if (expected ? p->struct_size != expected : p->struct_size < sizeof(struct ql_plugin)) {
    return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: struct_size %u for version %s, expected %zu",
                        path, (unsigned)p->struct_size, v, expected ? expected : sizeof(struct ql_plugin));
  }
  if (!p->name || !p->name[0]) return ql_error_set(error, QL_EINTERNAL, "plugin '%s' breaks the ABI: no name", path);
  if (!p->version) return ql_error_set(error, QL_EINTERNAL, "plugin '%s' (%s) breaks the ABI: no version", path, p->name);
  if (!p->release) return ql_error_set(error, QL_EINTERNAL, "plugin '%s' (%s) breaks the ABI: release is NULL", path, p->name);
  if ((p->executor_enter == NULL) != (p->executor_leave == NULL)) {
    return ql_error_set(error, QL_EINTERNAL,
                        "plugin '%s' (%s) breaks the ABI: executor_enter and executor_leave must both be set or both NULL",
                        path, p->name);
  }
  return ql_check_items(p, path, error);
}

/* dlopen failed: tell a missing file from something that is not a shared library. */
static int ql_dlopen_error(const char *path, struct ql_error *error) {
  const char *why = dlerror();
  why = why ? why : "unknown dlopen error";
  struct stat st;
  int missing = strchr(path, '/') ? (stat(path, &st) != 0 && errno == ENOENT) : (strstr(why, "No such file") != NULL);
  if (missing) return ql_error_set(error, QL_ENOTFOUND, "cannot load plugin '%s': %s", path, why);
  return ql_error_set(error, QL_EINVAL, "%s is not a qlink plugin: %s", path, why);
}

/* Call the entry point for each version until one is served. */
static int ql_negotiate(ql_plugin_init_fn init, const char *path, const uint32_t *versions, int32_t n_versions,
                        struct ql_plugin *out, uint32_t *chosen, struct ql_error *error) {
  char *refusal = NULL; /* the plugin's last QL_EVERSION message */
  for (int32_t i = 0; i < n_versions; i++) {
    struct ql_error perr = {0};
    memset(out, 0, sizeof(*out));
    int rc = init(versions[i], out, &perr);
    char v[24];
    ql_version_string(versions[i], v, sizeof(v));
    if (rc == QL_OK) {
      if (perr.release) perr.release(&perr); /* an error filled on success is dropped */
      free(refusal);
      *chosen = versions[i];
      return QL_OK;
    }
    char *message = ql_take_plugin_message(&perr);
    if (rc == QL_EVERSION) {
      free(refusal);
      refusal = message;
      continue;
    }
    free(refusal);
    if (rc < 0 || rc >= QL_ESTATUS_COUNT_) {
      rc = ql_error_set(error, QL_EINTERNAL, "plugin '%s' returned invalid status %d from %s (ABI %s): %s", path, rc,
                        QL_PLUGIN_ENTRY_POINT, v, message ? message : "");
    } else {
      rc = ql_error_set(error, rc, "plugin '%s' failed to initialise (ABI %s): %s: %s", path, v, ql_status_name(rc),
                        message ? message : "");
    }
    free(message);
    return rc;
  }
  char *ours = ql_versions_string(versions, n_versions);
  int rc = ql_error_set(error, QL_EVERSION,
                        "plugin '%s' serves none of the ABI versions this host speaks (%s); the plugin said: %s", path,
                        ours ? ours : "(out of memory listing them)", refusal ? refusal : "(no message)");
  free(ours);
  free(refusal);
  return rc;
}

int ql_plugin_load_versions(const char *path, const uint32_t *versions, int32_t n_versions,
                            struct ql_loaded_plugin **out, struct ql_error *error) {
  *out = NULL;
  if (!path || !path[0]) return ql_error_set(error, QL_EINVAL, "plugin path is empty");
  if (!versions || n_versions < 1) return ql_error_set(error, QL_EINVAL, "no ABI versions to offer plugin '%s'", path);
  dlerror();
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) return ql_dlopen_error(path, error);
  ql_plugin_init_fn init;
  /* POSIX's sanctioned way to turn dlsym's void * into a function pointer. */
  *(void **)(&init) = dlsym(handle, QL_PLUGIN_ENTRY_POINT);
  if (!init) {
    dlclose(handle);
    return ql_error_set(error, QL_EINVAL, "%s is not a qlink plugin: no %s", path, QL_PLUGIN_ENTRY_POINT);
  }
  struct ql_plugin desc;
  uint32_t version = 0;
  int rc = ql_negotiate(init, path, versions, n_versions, &desc, &version, error);
  if (rc == QL_OK) {
    rc = ql_validate_filled_descriptor(&desc, version, path, error);
    /* A descriptor with the right magic was meant to be one: let it free itself. */
    if (rc != QL_OK && desc.magic == QL_PLUGIN_MAGIC && desc.release) desc.release(&desc);
  }
  struct ql_loaded_plugin *loaded = rc == QL_OK ? calloc(1, sizeof(*loaded)) : NULL;
  char *path_copy = loaded ? ql_strdup(path) : NULL;
  if (rc == QL_OK && (!loaded || !path_copy)) {
    free(loaded);
    desc.release(&desc);
    rc = ql_error_set(error, QL_ENOMEM, "out of memory loading plugin '%s'", path);
  }
  if (rc != QL_OK) {
    dlclose(handle);
    return rc;
  }
  loaded->plugin = desc;
  loaded->abi_version = version;
  loaded->path = path_copy;
  loaded->dl_handle = handle;
  *out = loaded;
  return QL_OK;
}

int ql_plugin_load(const char *path, struct ql_loaded_plugin **out, struct ql_error *error) {
  static const uint32_t versions[] = {QL_ABI_VERSION_0_1}; /* newest first as versions are added */
  return ql_plugin_load_versions(path, versions, (int32_t)(sizeof(versions) / sizeof(versions[0])), out, error);
}

void ql_plugin_unload(struct ql_loaded_plugin *plugin) {
  if (!plugin) return;
  if (plugin->plugin.release) plugin->plugin.release(&plugin->plugin);
  if (plugin->dl_handle) dlclose(plugin->dl_handle);
  free(plugin->path);
  free(plugin);
}

const struct ql_item_info *ql_plugin_find_item(const struct ql_plugin *plugin, int32_t kind, const char *name) {
  if (!plugin || !name || !plugin->items) return NULL;
  for (int32_t i = 0; i < plugin->n_items; i++) {
    const struct ql_item_info *item = &plugin->items[i];
    if (item->kind == kind && item->name && strcmp(item->name, name) == 0) return item;
  }
  return NULL;
}
