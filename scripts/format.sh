#!/usr/bin/env bash
# Formats every C++ file in git with .clang-format, or with --check, fails
# (exit 1) naming each file that differs from it. Needs clang-format
# (scripts/install-deps.sh installs it); without it, --check says so and
# passes, as the other optional tools do.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v clang-format >/dev/null; then
  echo "format: clang-format is not installed; not checked" >&2
  exit 0
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [[ "${1:-}" == "--check" ]]; then
  report=$(mktemp)
  trap 'rm -f "$report"' EXIT
  if ! clang-format --dry-run --Werror "${files[@]}" 2>"$report"; then
    grep -o '^[^:]*:[0-9]*:[0-9]*: error' "$report" | cut -d: -f1 | sort -u | sed 's/^/format: differs from .clang-format: /' >&2
    echo "format: run scripts/format.sh to apply it" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
