#!/bin/bash
# The documentation hangs together: docs/index.md lists every page of docs/, every relative link in
# README.md and docs/*.md points to a file that exists, and README.md gives the command .ci/run runs.
#   docs_consistency_test.sh SOURCE_DIR
set -u
SRC=${1:?usage: docs_consistency_test.sh SOURCE_DIR}
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

missing=()
for page in "$SRC"/docs/*.md; do
  name=$(basename "$page")
  [ "$name" = index.md ] && continue
  grep -q "](${name})" "$SRC/docs/index.md" || missing+=("$name")
done
if [ ${#missing[@]} -eq 0 ]; then ok "docs/index.md links every page of docs/"
else not_ok "docs/index.md links every page of docs/" "not in the index: ${missing[*]}"; fi

broken=()
for file in "$SRC"/README.md "$SRC"/docs/*.md; do
  dir=$(dirname "$file")
  # Markdown links whose target is a relative path (no scheme, no pure #anchor); the anchor is dropped.
  while IFS= read -r target; do
    path=${target%%#*}
    [ -z "$path" ] && continue
    [ -e "$dir/$path" ] || broken+=("${file#"$SRC"/}: $target")
  done < <(grep -o '](\([^)#:]*\)\(#[^)]*\)\?)' "$file" | sed 's/^](//; s/)$//')
done
if [ ${#broken[@]} -eq 0 ]; then ok "every relative link in README.md and docs/ resolves"
else not_ok "every relative link in README.md and docs/ resolves" "${broken[@]}"; fi

# .ci/run runs exactly the test command the README gives, and the README's main-job command exists.
ci=$(grep -v '^\s*#' "$SRC/.ci/run" | grep -v '^\s*$' | grep -v '^set \|^cd ' | tail -n 1)
if grep -qxF "    $ci" "$SRC/README.md"; then ok "README.md gives the command .ci/run runs ($ci)"
else not_ok "README.md gives the command .ci/run runs" ".ci/run: '$ci' is not an indented line of README.md"; fi
if grep -qxF "    scripts/install_deps.sh && scripts/run_main_job.sh" "$SRC/README.md" && [ -x "$SRC/scripts/run_main_job.sh" ]
then ok "README.md gives the main-job command"
else not_ok "README.md gives the main-job command" "expected '    scripts/install_deps.sh && scripts/run_main_job.sh'"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
