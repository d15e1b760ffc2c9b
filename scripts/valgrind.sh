#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every ctest test of a (non-sanitizer) build under valgrind's memcheck,
# with the environment ctest would give it; any definite or indirect leak, or
# memory error, fails the run.
set -euo pipefail
build=${1:?usage: valgrind.sh BUILD_DIR}
cd "$build"
mapfile -t cmds < <(ctest --show-only=json-v1 | python3 -c '
import json, sys, shlex
for t in json.load(sys.stdin)["tests"]:
    if "command" not in t:
        print("MISSING " + t["name"]); continue
    env = []
    for p in t.get("properties", []):
        if p["name"] == "ENVIRONMENT":
            env = p["value"]
    wd = next((p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"), ".")
    print("cd " + shlex.quote(wd) + " && env " + " ".join(shlex.quote(e) for e in env) + " valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 " + shlex.join(t["command"]))')
pass=0; fail=0
log=$(mktemp)
for cmd in "${cmds[@]}"; do
  if [[ $cmd == MISSING* ]]; then
    fail=$((fail + 1)); echo "valgrind: test ${cmd#MISSING } was not built"; continue
  fi
  if (eval "$cmd") >"$log" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "valgrind: FAILED: $cmd"; tail -40 "$log"
  fi
done
rm -f "$log"
echo "valgrind: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
