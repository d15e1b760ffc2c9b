# SPDX-License-Identifier: Apache-2.0
"""check_wheel.py WHEEL PACKAGE_DIR: what scripts/wheel.sh asserts of the
repaired wheel before it goes to dist/.

- it ships the PyO3 module, the four plugins, both DuckDB extension builds
  and the SQLite extension;
- every ELF file in it finds each library it needs (DT_NEEDED) either in
  its wheel's policy's system libraries (the manylinux tag's lib_whitelist,
  read from auditwheel's policy file, and the dynamic loader) or in a
  directory of its own RPATH/RUNPATH ($ORIGIN expanded) inside the wheel:
  auditwheel's repair reaches every ELF file that needs a library it
  vendors, plugins included, and this proves it for each one;
- the DuckDB extensions are byte for byte those of PACKAGE_DIR (DuckDB reads
  the metadata footer at the end of the file: a patched file would not load).

Needs pyelftools (auditwheel's dependency). Prints one line per ELF file
with what it needs from the wheel; exits 1 naming each failure.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import zipfile
from importlib import resources
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

SHIPPED = ["qlink/_qlink.abi3.so", "qlink/plugins/qlink_sample.so", "qlink/plugins/qlink_zarr.so",
           "qlink/plugins/qlink_fold.so", "qlink/plugins/qlink_ndarray.so",
           "qlink/hosts/duckdb/qlink.duckdb_extension", "qlink/hosts/duckdb/qlink_v2.duckdb_extension",
           "qlink/hosts/sqlite/qlink.so"]
LOADERS = {"ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}


def system_libraries(wheel: str) -> tuple[str, set[str]]:
    """The wheel's platform tag and its policy's system libraries."""
    m = re.search(r"-(manylinux_\d+_\d+)_[a-z0-9_]+\.whl$", wheel)
    if not m:
        raise SystemExit(f"check_wheel: {wheel} has no manylinux_X_Y platform tag")
    policies = json.loads((resources.files("auditwheel.policy") / "manylinux-policy.json").read_text())
    policy = next((p for p in policies if p["name"] == m.group(1)), None)
    if policy is None:
        raise SystemExit(f"check_wheel: auditwheel knows no policy {m.group(1)}")
    return m.group(1), set(policy["lib_whitelist"])


def dynamic(path: Path) -> tuple[list[str], list[str]]:
    """(DT_NEEDED, RPATH and RUNPATH directories) of the ELF file at path."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        needed, dirs = [], []
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                        value = tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath
                        dirs += [d for d in value.split(":") if d]
        return needed, dirs


def main() -> int:
    wheel, package_dir = sys.argv[1], Path(sys.argv[2])
    tag, system = system_libraries(wheel)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        zipfile.ZipFile(wheel).extractall(root)
        for rel in SHIPPED:
            if not (root / rel).is_file():
                failures.append(f"{rel} is not in the wheel")
        for name in ("qlink.duckdb_extension", "qlink_v2.duckdb_extension"):
            ours, shipped = package_dir / "hosts" / "duckdb" / name, root / "qlink" / "hosts" / "duckdb" / name
            if shipped.is_file() and shipped.read_bytes() != ours.read_bytes():
                failures.append(f"{name} in the wheel differs from {ours} (was it patched?)")
        elves = sorted(p for p in root.rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x7fELF")
        for path in elves:
            needed, dirs = dynamic(path)
            found = []
            for lib in needed:
                if lib in system or lib in LOADERS:
                    continue
                places = [Path(d.replace("$ORIGIN", str(path.parent))).resolve() / lib for d in dirs]
                hit = next((p for p in places if p.is_file() and p.is_relative_to(root)), None)
                if hit is None:
                    failures.append(f"{path.relative_to(root)} needs {lib}, which is neither a {tag} system library "
                                    f"nor in the wheel on its RPATH ({':'.join(dirs) or 'none'})")
                else:
                    found.append(str(hit.relative_to(root)))
            print(f"check_wheel: {path.relative_to(root)}: {', '.join(found) if found else 'system libraries only'}")
    for f in failures:
        print(f"check_wheel: {f}", file=sys.stderr)
    if not failures:
        print(f"check_wheel: {len(elves)} ELF files, each finds its libraries ({tag})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
