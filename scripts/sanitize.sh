#!/usr/bin/env bash
# `npm run test:gpu:sanitize`: the GPU suites under compute-sanitizer's memcheck, racecheck,
# initcheck and synccheck, one run per tool, with small problems (the suites read the tool from
# CK_SANITIZER_TOOL). Fails if any tool reports an error.
#
#   CK_SANITIZE="memcheck racecheck"   the tools (default: all four)
#   CK_JEST_ARGS="test/property ..."   the suites (default: every suite that covers all families
#                                      and variants at small sizes, plus the fault, fuzz and load ones)
#   CK_TOOL_TIMEOUT=300                seconds each tool may take (default: no limit); then SIGTERM,
#                                      and SIGKILL 10 s later (a sanitized jest can outlive SIGTERM)
set -uo pipefail
cd "$(dirname "$0")/.."
tools=${CK_SANITIZE:-memcheck racecheck initcheck synccheck}
suites=${CK_JEST_ARGS:-test/property test/faults test/load test/fuzz}
status=0
for tool in $tools; do
  # API errors are part of the tests (out-of-memory, invalid launches on purpose) and each is
  # checked by the addon; kernel memory errors, races, uninitialised reads and barrier misuse are
  # what the sanitizer is here for.
  # shellcheck disable=SC2086
  CK_REQUIRE_GPU=1 CK_SANITIZER_TOOL=$tool CK_APSP_QUICK=1 ${CK_TOOL_TIMEOUT:+timeout -k 10 $CK_TOOL_TIMEOUT} compute-sanitizer --tool "$tool" --report-api-errors no \
    --error-exitcode 86 --target-processes all node node_modules/jest/bin/jest.js -i $suites
  rc=$?
  echo "compute-sanitizer $tool: exit $rc"
  [ $rc -eq 0 ] || status=1
done
exit $status
