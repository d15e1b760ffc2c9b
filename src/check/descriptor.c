/* SPDX-License-Identifier: Apache-2.0 */
/* Version negotiation and the plugin descriptor, checked through dlopen
 * before the loader sees the plugin: the loader rejects a bad descriptor,
 * and the kit wants to say exactly which rule it breaks. */
#include <dlfcn.h>
#include <string.h>

#include "checker.h"

/* An unknown version must be refused with QL_EVERSION, not served. */
static void check_refuses(struct ql_checker *ck, ql_plugin_init_fn init, uint32_t version) {
  struct ql_plugin d;
  memset(&d, 0, sizeof d);
  struct ql_error err = {0};
  int rc = init(version, &d, &err);
  if (rc == QL_OK) {
    ql_check_violation(ck, "negotiate.unknown_version",
                       "qlink_plugin_init accepted ABI version %u.%u, which it cannot know; expected QL_EVERSION",
                       QL_ABI_VERSION_MAJOR(version), QL_ABI_VERSION_MINOR(version));
    if (d.release) d.release(&d);
  } else if (rc != QL_EVERSION) {
    ql_check_violation(ck, "negotiate.unknown_version", "qlink_plugin_init(%u.%u) returned %s, expected QL_EVERSION",
                       QL_ABI_VERSION_MAJOR(version), QL_ABI_VERSION_MINOR(version), ql_status_name(rc));
  } else if (err.release == NULL) {
    ql_check_violation(ck, "negotiate.message", "QL_EVERSION without an error message naming the versions served");
  }
  ql_check_error(ck, &err, rc, "qlink_plugin_init");
}

static int valid_name(const char *s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++) {
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
  }
  return 1;
}

static const void *opener_for(const struct ql_plugin *d, int32_t kind) {
  switch (kind) {
    case QL_ITEM_TABLE_PROVIDER: return (const void *)d->table_provider_open;
    case QL_ITEM_SCHEMA_PROVIDER: return (const void *)d->schema_provider_open;
    case QL_ITEM_SCALAR_FUNCTION: return (const void *)d->scalar_function_open;
    case QL_ITEM_AGGREGATE_FUNCTION: return (const void *)d->aggregate_function_open;
    case QL_ITEM_WINDOW_FUNCTION: return (const void *)d->window_function_open;
    case QL_ITEM_TABLE_FUNCTION: return (const void *)d->table_function_open;
    case QL_ITEM_PLANNER: return (const void *)d->planner_open;
    case QL_ITEM_OBJECT_STORE: return (const void *)d->object_store_open;
    default: return NULL;
  }
}

static void check_catalogue(struct ql_checker *ck, const struct ql_plugin *d) {
  if (d->n_items < 0 || (d->n_items > 0 && d->items == NULL)) {
    ql_check_violation(ck, "catalogue.items", "n_items = %d with items %s", d->n_items, d->items ? "set" : "NULL");
    return;
  }
  for (int32_t i = 0; i < d->n_items; i++) {
    const struct ql_item_info *it = &d->items[i];
    if (!valid_name(it->name)) {
      ql_check_violation(ck, "catalogue.name", "item %d has name '%s'; names are [a-z0-9_]+", i,
                         it->name ? it->name : "(null)");
      continue;
    }
    if (it->kind < QL_ITEM_TABLE_PROVIDER || it->kind > QL_ITEM_OBJECT_STORE) {
      ql_check_violation(ck, "catalogue.kind", "item '%s' has unknown kind %d", it->name, it->kind);
      continue;
    }
    if (opener_for(d, it->kind) == NULL) {
      ql_check_violation(ck, "catalogue.opener", "item '%s' is listed but the descriptor's opener for its kind is NULL",
                         it->name);
    }
    if (it->n_options < 0 || (it->n_options > 0 && it->options == NULL)) {
      ql_check_violation(ck, "catalogue.options", "item '%s' lists %d options without an array", it->name,
                         it->n_options);
    }
    for (int32_t j = 0; j < i; j++) {
      if (d->items[j].kind == it->kind && d->items[j].name && strcmp(d->items[j].name, it->name) == 0) {
        ql_check_violation(ck, "catalogue.name", "two items of kind %d are named '%s'", it->kind, it->name);
      }
    }
  }
}

static void check_fields(struct ql_checker *ck, const struct ql_plugin *d) {
  if (d->magic != QL_PLUGIN_MAGIC) {
    ql_check_violation(ck, "descriptor.magic", "magic is 0x%08X, expected 0x%08X (QL_PLUGIN_MAGIC)", d->magic,
                       QL_PLUGIN_MAGIC);
  }
  if (d->abi_version != QL_ABI_VERSION) {
    ql_check_violation(ck, "descriptor.abi_version", "descriptor says ABI %u.%u after init(%u.%u)",
                       QL_ABI_VERSION_MAJOR(d->abi_version), QL_ABI_VERSION_MINOR(d->abi_version),
                       QL_ABI_VERSION_MAJOR(QL_ABI_VERSION), QL_ABI_VERSION_MINOR(QL_ABI_VERSION));
  }
  if (d->struct_size != sizeof *d) {
    ql_check_violation(ck, "descriptor.struct_size", "struct_size %u, expected %zu for this ABI version",
                       d->struct_size, sizeof *d);
  }
  if (!valid_name(d->name)) {
    ql_check_violation(ck, "descriptor.name", "name '%s' is not [a-z0-9_]+", d->name ? d->name : "(null)");
  }
  if (d->version == NULL || d->version[0] == '\0') ql_check_violation(ck, "descriptor.version", "no plugin version");
  if ((d->executor_enter == NULL) != (d->executor_leave == NULL)) {
    ql_check_violation(ck, "hooks.pairing", "executor_enter is %s but executor_leave is %s; both or neither",
                       d->executor_enter ? "set" : "NULL", d->executor_leave ? "set" : "NULL");
  }
  check_catalogue(ck, d);
}

int ql_check_negotiation_and_descriptor(struct ql_checker *ck, const char *path) {
  ql_check_note(ck, "negotiation and descriptor");
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    ql_check_violation(ck, "load.dlopen", "%s", dlerror());
    return -1;
  }
  ql_plugin_init_fn init;
  *(void **)&init = dlsym(dl, QL_PLUGIN_ENTRY_POINT);
  if (init == NULL) {
    ql_check_violation(ck, "entry_point.missing", "%s has no %s", path, QL_PLUGIN_ENTRY_POINT);
    dlclose(dl);
    return -1;
  }
  check_refuses(ck, init, QL_ABI_VERSION_MAKE(QL_ABI_VERSION_MAJOR(QL_ABI_VERSION) + 1, 0));
  check_refuses(ck, init, QL_ABI_VERSION_MAKE(QL_ABI_VERSION_MAJOR(QL_ABI_VERSION), 0xFFFFu));
  struct ql_plugin d;
  memset(&d, 0, sizeof d);
  struct ql_error err = {0};
  int rc = init(QL_ABI_VERSION, &d, &err);
  if (rc != QL_OK) {
    ql_check_violation(ck, "negotiate.current_version", "qlink_plugin_init(%u.%u) returned %s: %s",
                       QL_ABI_VERSION_MAJOR(QL_ABI_VERSION), QL_ABI_VERSION_MINOR(QL_ABI_VERSION), ql_status_name(rc),
                       err.release && err.message ? err.message : "(no message)");
    ql_check_error(ck, &err, rc, "qlink_plugin_init");
    dlclose(dl);
    return -1;
  }
  check_fields(ck, &d);
  if (d.release == NULL) {
    ql_check_violation(ck, "descriptor.release", "the descriptor's release is NULL");
  } else {
    d.release(&d);
    if (d.release != NULL) ql_check_violation(ck, "release.plugin", "the descriptor's release left release set");
  }
  dlclose(dl);
  return 0;
}
