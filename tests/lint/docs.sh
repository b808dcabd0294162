#!/usr/bin/env bash
# lint.docs: every section and file the project cites resolves
# (scripts/check_docs.py), and the check itself fails on a broken one.
set -euo pipefail
root=${1:?usage: docs.sh SOURCE_DIR}
python3 "$root/scripts/check_docs.py" "$root"

# The check fails when a citation breaks: a section renamed, a file moved.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs" "$tree/lib/m"
printf '# Title\n## Settings\n| `known` | a row |\n' >"$tree/docs/design.md"
printf '# kcache\n## Exit codes\n' >"$tree/README.md"
printf '// docs/design.md "Settings", README "Exit codes", docs/design.md "known"\n// lib/m/a.cpp\n' >"$tree/lib/m/a.cpp"
python3 "$root/scripts/check_docs.py" "$tree" >/dev/null || { echo "lint.docs: good citations refused" >&2; exit 1; }
printf '// docs/design.md "Setings", README "Exit status", lib/m/gone.cpp\n' >"$tree/lib/m/b.cpp"
if python3 "$root/scripts/check_docs.py" "$tree" >"$tree/out" 2>&1; then
  echo "lint.docs: broken citations passed" >&2
  exit 1
fi
for want in 'docs/design.md "Setings": no such section' 'README "Exit status": no such section' 'lib/m/gone.cpp: no such file'; do
  grep -qF "$want" "$tree/out" || { echo "lint.docs: not reported: $want" >&2; cat "$tree/out" >&2; exit 1; }
done
echo ok
