#!/usr/bin/env bash
# ctest cli.progress_on_terminal: long work draws one progress line on stderr
# when stderr is a terminal (here a pseudo-terminal made by script(1)), the
# last one at 100 %, and erases it before the results; cli.phases_quiet_when_piped
# checks the other half: nothing when stderr is not a terminal.
#
#   progress_test.sh <switchyard>
set -euo pipefail
cli=$1
if ! command -v script >/dev/null; then
  echo "progress_test: script(1) (util-linux) is missing: skipped"
  exit 77
fi
out=$(script -qec "$cli phases -n 32 -d 4 --samples 500 --scheduler cgm" /dev/null)
if [[ $out != *$'\r\e[K'"switchyard phases: 500/500 (100%) schedules"* ]]; then
  echo "progress_test: no progress line ending at 500/500 (100%) on the terminal:" >&2
  printf '%q\n' "$out" >&2
  exit 1
fi
if [[ $out != *$'\r\e[K'"switchyard phases: cgm on 500"* ]]; then
  echo "progress_test: the progress line was not erased before the results:" >&2
  printf '%q\n' "$out" >&2
  exit 1
fi
echo "progress_test: progress drawn and erased on a terminal"
