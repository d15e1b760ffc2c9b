#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make lint`: the style checks `make test` runs first.
# - C: clang-format-14 (.clang-format) on every C file a change adds, and on
#   the lines it changes in the others (the older tree is not reformatted).
#   A change is everything since LINT_BASE (default: where HEAD left the
#   main branch, or HEAD), committed or not.
# - Rust: cargo fmt --check (rustfmt.toml) over the workspace's packages,
#   and over plugins/rust (a workspace of its own) whole; cargo clippy with
#   warnings as errors over both workspaces, every target, in the release
#   profile and features the build uses (so DataFusion is checked once, not
#   rebuilt). One lint is allowed: not_unsafe_ptr_arg_deref, since
#   functions over the C ABI take its raw pointers by contract (NULL or
#   valid for the call, docs/abi.md) rather than as unsafe fns.
# - Python: ruff check (ruff.toml; ruff pinned in scripts/requirements.txt).
# - Every C, header, Rust, Python and shell source carries an SPDX line.
# Exits non-zero naming each file that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# The build's one target directory (Makefile), so clippy reuses its DataFusion.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}

CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
RUFF=${RUFF:-.venv/bin/ruff}
# Packages and paths not checked yet (their code is being edited elsewhere).
SKIP_PATHS=${LINT_SKIP_PATHS:-}
FMT_PACKAGES=${LINT_FMT_PACKAGES:-qlink-sys qlink-convert qlink-datafusion qlink-datafusion-tests qlink-bench-datafusion qlink-bench-fold qlink-bench-ffi-ref qlink-capsule qlink-session qlink-cli qlink-python}

base=${LINT_BASE:-}
if [[ -z "$base" ]]; then
  base=$(git merge-base HEAD main 2>/dev/null || git rev-parse HEAD)
fi
failed=0
fail() {
  echo "lint: $*" >&2
  failed=1
}
skipped() {
  local p
  for p in $SKIP_PATHS; do [[ "$1" == "$p"* ]] && return 0; done
  return 1
}

# C: whole files that the change adds, changed lines elsewhere.
added=$( (git diff --name-only --diff-filter=A "$base" -- '*.c' '*.h'; git ls-files -o --exclude-standard -- '*.c' '*.h') | sort -u)
for f in $added; do
  [[ -f "$f" ]] || continue
  "$CLANG_FORMAT" --dry-run --Werror "$f" || fail "$f: not formatted ($CLANG_FORMAT -i $f)"
done
diff=$(git diff -U0 --no-color --diff-filter=M "$base" -- '*.c' '*.h' \
  | "clang-format-diff-${CLANG_FORMAT##*-}" -p1 -binary "$CLANG_FORMAT" || true)
if [[ -n "$diff" ]]; then
  echo "$diff" >&2
  fail "changed C lines are not formatted (the diff above)"
fi

# Rust.
args=()
for p in $FMT_PACKAGES; do args+=(-p "$p"); done
cargo fmt --check "${args[@]}" >/dev/null || fail "Rust is not formatted (cargo fmt ${args[*]})"
# plugins/rust: a workspace of its own, every package checked.
(cd plugins/rust && cargo fmt --check >/dev/null) || fail "plugins/rust is not formatted (cd plugins/rust && cargo fmt)"
CLIPPY=(clippy --release --locked --all-targets --quiet -- -D warnings -A clippy::not_unsafe_ptr_arg_deref)
cargo "${CLIPPY[0]}" --workspace --exclude qlink-python "${CLIPPY[@]:1}" || fail "cargo clippy found the problems above"
(cd plugins/rust && cargo "${CLIPPY[@]}") || fail "cargo clippy found the problems above (plugins/rust)"

# Python.
"$RUFF" check --quiet . || fail "ruff check found the problems above"

# SPDX lines.
while IFS= read -r f; do
  skipped "$f" && continue
  [[ -f "$f" ]] || continue
  head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || fail "$f: no SPDX-License-Identifier line"
done < <(git ls-files -co --exclude-standard -- '*.c' '*.h' '*.rs' '*.py' '*.sh' .ci/run)

if ((failed)); then exit 1; fi
echo "lint: C (lines changed since $(git rev-parse --short "$base")), Rust, Python and SPDX lines clean"
