#!/usr/bin/env bash
# Runs every ctest test of a (non-sanitizer) build under valgrind's memcheck;
# any definite or indirect leak, or memory error, fails the run.
set -euo pipefail
build=${1:?usage: valgrind.sh BUILD_DIR}
cd "$build"
mapfile -t cmds < <(ctest --show-only=json-v1 | python3 -c '
import json, sys, shlex
for t in json.load(sys.stdin)["tests"]:
    print(shlex.join(t["command"]))')
pass=0; fail=0
for cmd in "${cmds[@]}"; do
  if eval valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
       --error-exitcode=99 "$cmd" >/tmp/ql_valgrind.log 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "valgrind: FAILED: $cmd"; tail -40 /tmp/ql_valgrind.log
  fi
done
echo "valgrind: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
