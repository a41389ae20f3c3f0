#!/usr/bin/env bash
# Checks the module rule of docs/architecture.md on every C++ file under ROOT (default: this repository).
# Modules are ordered; a module includes only itself and the modules its row names (no upward edge):
#   common/            common/ only, and no Boost, protobuf (or proto/), OpenSSL (or tls/) or LibTorch
#   supervision/       common/
#   elastic/           only the standard library, nlohmann/json and elastic/ (the launcher side and
#                      libdsrt both link it, so it may depend on neither)
#   proto/, tls/       common/
#   client/            common/, proto/, tls/ (the dialing end of the agent protocol: dsrun's and a tree agent's)
#   launcher/          common/, supervision/, elastic/, proto/, tls/, client/ -- never agent/ (they meet only in
#                      proto/agent.proto); a backend under launcher/backends/NAME/ never includes another
#                      backend's folder
#   agent/             common/, supervision/, proto/, tls/, client/ -- never launcher/
#   runtime/           nothing of the launcher side but common/env_contract.h (and elastic/)
#   LibTorch (torch/, ATen/, c10/, caffe2/) only in runtime/, examples/, bench/, python/ and their tests
# Prints one line per offending include, "FILE:LINE: <rule>, got '<include line>'", and exits 1 if any.
# Usage: scripts/check_layering.sh [ROOT]
set -euo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT"

dirs=()
for d in common supervision elastic proto tls client launcher agent runtime examples bench python tests; do [ -d "$d" ] && dirs+=("$d"); done
files=$(find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.cpp' -o -name '*.inc' \) |
        LC_ALL=C sort)
[ -n "$files" ] || { echo "check_layering: no C++ files under $ROOT" >&2; exit 1; }

# One awk pass over every file: FILENAME's top directory (tests/<dir> counts as <dir> for LibTorch) against
# the target of each #include line.
# shellcheck disable=SC2086
printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 awk '
  function report(rule) {
    sub(/[ \t\r]+$/, "", $0)
    printf "%s:%d: %s, got '\''%s'\''\n", FILENAME, FNR, rule, $0
    bad++; reported = 1
  }
  BEGIN {
    # The modules each module may include besides itself, lowest first (docs/architecture.md, "Modules").
    below["common"] = " "
    below["elastic"] = " "
    below["supervision"] = " common "
    below["proto"] = " common "
    below["tls"] = " common "
    below["client"] = " common proto tls "
    below["launcher"] = " common supervision elastic proto tls client "
    below["agent"] = " common supervision proto tls client "
    for (m in below) {
      allowed[m] = below[m]; gsub(/ /, "/, ", allowed[m]); sub(/^\/, /, "", allowed[m]); allowed[m] = allowed[m] m "/"
    }
  }
  /^[ \t]*#[ \t]*include[ \t]*[<"]/ {
    reported = 0
    target = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*[<"]/, "", target)
    sub(/[>"].*$/, "", target)
    n = split(FILENAME, part, "/")
    top = part[1]; sub_ = (top == "tests" && n > 2) ? part[2] : top
    if (top == "runtime" && target != "common/env_contract.h" &&
        target ~ /^(launcher|agent|common|proto|tls)\//)
      report("runtime/ may include only common/env_contract.h of the launcher side")
    if (top == "common" && target ~ /^(boost|google\/protobuf|proto|openssl|tls)\//)
      report("common/ includes only the standard library and POSIX (no Boost, protobuf, OpenSSL)")
    if (top == "elastic" && target ~ /^(common|launcher|agent|runtime|proto|tls|boost|google|openssl)\//)
      report("elastic/ includes only the standard library, nlohmann/json and elastic/")
    if (top == "launcher" && target ~ /^agent\//)
      report("launcher/ must not include agent/ (they share only proto/)")
    if (top == "agent" && target ~ /^launcher\//)
      report("agent/ must not include launcher/ (they share only proto/)")
    # Upward edges: a lower module includes none of the modules above it.
    mod = target; sub(/\/.*$/, "", mod)
    if (!reported && target ~ /\// && (mod in below) && (top in below) && top != mod && !index(below[top], " " mod " "))
      report(top "/ may include only " allowed[top] ", not " mod "/ (an upward edge)")
    # Backends are siblings behind launcher/backend.h: none includes another.
    if (FILENAME ~ /^launcher\/backends\/[^\/]+\// && target ~ /^launcher\/backends\/[^\/]+\//) {
      from = FILENAME; sub(/^launcher\/backends\//, "", from); sub(/\/.*$/, "", from)
      to = target; sub(/^launcher\/backends\//, "", to); sub(/\/.*$/, "", to)
      if (from != to) report("backend launcher/backends/" from "/ must not include another backend (launcher/backends/" to "/)")
    }
    if (target ~ /^(torch|ATen|c10|caffe2)\// && sub_ !~ /^(runtime|examples|bench|python)$/)
      report("LibTorch is included only in runtime/, examples/, bench/, python/ and their tests")
  }
  END { exit bad > 0 ? 1 : 0 }
' && status=0 || status=$?

if [ "$status" -ne 0 ]; then
  echo "check_layering: includes cross a forbidden module edge (docs/architecture.md, 'Modules')" >&2
  exit 1
fi
echo "check_layering: every include in $(printf '%s\n' "$files" | wc -l) files follows the module rule"
