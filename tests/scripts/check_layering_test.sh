#!/bin/bash
# Tests of scripts/check_layering.sh (sharness style): it passes on the repository, passes on a small tree
# that follows the rule, and fails on each kind of forbidden include placed in a temporary file, naming
# that file and line.   check_layering_test.sh SOURCE_DIR
set -u
SRC=${1:?usage: check_layering_test.sh SOURCE_DIR}
CHECK=$SRC/scripts/check_layering.sh
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
WORK=$(mktemp -d /tmp/dsrun-layering.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if out=$("$CHECK" "$SRC" 2>&1); then ok "the repository follows the module rule"
else not_ok "the repository follows the module rule" "$out"; fi

# A tree that follows the rule.
good=$WORK/good
mkdir -p "$good"/{runtime,common,supervision,elastic,launcher/backends/ssh,agent,examples,tests/runtime,tests/common}
printf '#include "common/env_contract.h"\n#include "elastic/compute_elastic_config.h"\n#include <ATen/ATen.h>\n' > "$good/runtime/a.cc"
printf '#include <nlohmann/json.hpp>\n#include <sys/types.h>\n#include "elastic/elastic_text.h"\n' > "$good/elastic/a.cc"
printf '#include <string>\n#include <unistd.h>\n' > "$good/common/a.h"
printf '#include <boost/asio.hpp>\n#include "proto/agent.pb.h"\n' > "$good/launcher/a.cc"
printf '#include "common/error.h"\n#include "supervision/posix_spawner.h"\n' > "$good/agent/a.cc"
printf '#include "common/error.h"\n#include "supervision/spawner.h"\n' > "$good/supervision/a.cc"
printf '#include "launcher/backends/ssh/b.h"\n#include "launcher/backends/shell_words.h"\n#include "launcher/backend.h"\n' \
  > "$good/launcher/backends/ssh/a.cc"
printf '#include <torch/torch.h>\n#include "runtime/runtime.h"\n' > "$good/examples/a.cc"
printf '#include <torch/torch.h>\n' > "$good/tests/runtime/a_test.cc"
printf '#include "common/error.h"\n' > "$good/tests/common/a_test.cc"
if out=$("$CHECK" "$good" 2>&1); then ok "a tree that follows the rule passes"
else not_ok "a tree that follows the rule passes" "$out"; fi

# Each forbidden edge, one temporary file at a time: FILE | INCLUDE LINE | expected words of the message.
while IFS='|' read -r file include words; do
  bad=$WORK/bad; rm -rf "$bad"; cp -r "$good" "$bad"
  mkdir -p "$(dirname "$bad/$file")"
  printf '// a file that breaks the rule\n%s\n' "$include" > "$bad/$file"
  out=$("$CHECK" "$bad" 2>&1); rc=$?
  if [ "$rc" = 1 ] && grep -qF "$file:2: $words" <<<"$out" && grep -qF "got '$include'" <<<"$out"; then
    ok "fails on $file including ${include#\#include }, naming $file:2"
  else not_ok "fails on $file including ${include#\#include }, naming $file:2 (rc $rc)" "$out"; fi
done <<'TABLE'
runtime/bad.cc|#include "launcher/options.h"|runtime/ may include only common/env_contract.h
runtime/zero/bad.h|#include "common/error.h"|runtime/ may include only common/env_contract.h
common/bad.h|#include <boost/asio.hpp>|common/ includes only the standard library
common/bad.cc|#include <google/protobuf/message.h>|common/ includes only the standard library
common/bad2.cc|#include <openssl/ssl.h>|common/ includes only the standard library
common/bad3.cc|#include <torch/torch.h>|LibTorch is included only in runtime/
elastic/bad.cc|#include "common/error.h"|elastic/ includes only the standard library, nlohmann/json
elastic/bad2.h|#include "launcher/options.h"|elastic/ includes only the standard library, nlohmann/json
elastic/bad3.cc|#include <torch/torch.h>|LibTorch is included only in runtime/
launcher/bad.cc|#include "agent/session.h"|launcher/ must not include agent/
agent/bad.cc|#include "launcher/hostfile.h"|agent/ must not include launcher/
launcher/bad2.cc|#include <ATen/ATen.h>|LibTorch is included only in runtime/
tests/launcher/bad_test.cc|#include <c10/util/Exception.h>|LibTorch is included only in runtime/
common/bad4.h|#include "supervision/local_job.h"|common/ may include only common/, not supervision/ (an upward edge)
supervision/bad.cc|#include "launcher/options.h"|supervision/ may include only common/, supervision/, not launcher/
supervision/bad2.h|#include "proto/frame_codec.h"|supervision/ may include only common/, supervision/, not proto/
proto/bad.cc|#include "supervision/spawner.h"|proto/ may include only common/, proto/, not supervision/
tls/bad.cc|#include "launcher/options.h"|tls/ may include only common/, tls/, not launcher/
client/bad.cc|#include "agent/session.h"|client/ may include only common/, proto/, tls/, client/, not agent/
client/bad2.h|#include "launcher/options.h"|client/ may include only common/, proto/, tls/, client/, not launcher/
launcher/backends/ssh/bad.cc|#include "launcher/backends/agent/agent_job.h"|backend launcher/backends/ssh/ must not include another backend (launcher/backends/agent/)
TABLE

echo "1..$n"
[ "$failed" = 0 ]
