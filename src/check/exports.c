/* SPDX-License-Identifier: Apache-2.0 */
/* Symbol hygiene: a plugin exports qlink_plugin_init and nothing else.
 *
 * Reads the file's dynamic symbol table (ELF64, the System V gABI and
 * <elf.h>) instead of probing with dlsym, so every exported symbol is seen,
 * whatever its name. An exported symbol is a defined (st_shndx != SHN_UNDEF)
 * function, object, TLS or IFUNC symbol with GLOBAL, WEAK or UNIQUE binding
 * and default or protected visibility, as `nm -D --defined-only` lists it.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"

/* Linker-made symbols every shared library may carry. */
static int is_linker_symbol(const char *name) {
  static const char *const k_names[] = {"_init", "_fini", "_edata", "_end", "__bss_start", NULL};
  for (int i = 0; k_names[i]; i++) {
    if (strcmp(name, k_names[i]) == 0) return 1;
  }
  return 0;
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *data = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
      data = malloc((size_t)n);
      if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
      }
      *size = (size_t)n;
    }
  }
  fclose(f);
  return data;
}

static int in_bounds(size_t size, uint64_t offset, uint64_t length) {
  return offset <= size && length <= size - offset;
}

static int exported(const Elf64_Sym *sym) {
  int type = ELF64_ST_TYPE(sym->st_info), bind = ELF64_ST_BIND(sym->st_info);
  int vis = ELF64_ST_VISIBILITY(sym->st_other);
  if (sym->st_shndx == SHN_UNDEF) return 0;
  if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) return 0;
  if (vis != STV_DEFAULT && vis != STV_PROTECTED) return 0;
  return type == STT_FUNC || type == STT_OBJECT || type == STT_TLS || type == STT_GNU_IFUNC || type == STT_COMMON;
}

/* Walk .dynsym; report extras and return whether the entry point is there.
 * Structs are copied out with memcpy: offsets in a file need not be aligned. */
static int scan_dynsym(struct ql_checker *ck, const unsigned char *d, const Elf64_Shdr *symtab,
                       const Elf64_Shdr *strtab) {
  int found = 0;
  uint64_t n = symtab->sh_entsize ? symtab->sh_size / symtab->sh_entsize : 0;
  const char *names = (const char *)d + strtab->sh_offset;
  for (uint64_t i = 1; i < n; i++) {
    Elf64_Sym sym;
    memcpy(&sym, d + symtab->sh_offset + i * symtab->sh_entsize, sizeof sym);
    if (!exported(&sym) || sym.st_name >= strtab->sh_size) continue;
    const char *name = names + sym.st_name;
    if (memchr(name, '\0', strtab->sh_size - sym.st_name) == NULL) continue;
    if (strcmp(name, QL_PLUGIN_ENTRY_POINT) == 0) {
      found = 1;
    } else if (!is_linker_symbol(name)) {
      ql_check_violation(ck, "exports.extra_symbol", "%s exports '%s'; a plugin exports only %s", ck->path, name,
                         QL_PLUGIN_ENTRY_POINT);
    }
  }
  return found;
}

void ql_check_exports_image(struct ql_checker *ck, const unsigned char *d, size_t size, const char *path) {
  Elf64_Ehdr eh;
  if (size < sizeof eh) {
    ql_check_violation(ck, "exports.elf", "%s is too short for an ELF file", path);
    return;
  }
  memcpy(&eh, d, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || !in_bounds(size, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr))) {
    ql_check_violation(ck, "exports.elf", "%s is not a 64-bit ELF shared library with section headers", path);
    return;
  }
  int found = 0, have_dynsym = 0;
  for (int i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh, strtab;
    memcpy(&sh, d + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_DYNSYM || sh.sh_link >= eh.e_shnum) continue;
    memcpy(&strtab, d + eh.e_shoff + (size_t)sh.sh_link * sizeof strtab, sizeof strtab);
    if (!in_bounds(size, sh.sh_offset, sh.sh_size) || !in_bounds(size, strtab.sh_offset, strtab.sh_size) ||
        (sh.sh_entsize != 0 && sh.sh_entsize < sizeof(Elf64_Sym))) {
      ql_check_violation(ck, "exports.elf", "%s has a malformed dynamic symbol table", path);
      break;
    }
    have_dynsym = 1;
    found |= scan_dynsym(ck, d, &sh, &strtab);
  }
  if (!have_dynsym || !found) {
    ql_check_violation(ck, "exports.entry_point", "%s does not export %s", path, QL_PLUGIN_ENTRY_POINT);
  }
}

void ql_check_exports(struct ql_checker *ck, const char *path) {
  ql_check_note(ck, "exported symbols of %s", path);
  size_t size = 0;
  unsigned char *d = read_file(path, &size);
  if (d == NULL) {
    ql_check_violation(ck, "exports.elf", "cannot read %s", path);
    return;
  }
  ql_check_exports_image(ck, d, size, path);
  free(d);
}
