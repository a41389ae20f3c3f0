#!/bin/bash
# The Debian packages end to end (docs/install.md), sharness style:
#   1. cpack builds dsrun and dsrun-runtime from BUILD_DIR; lintian finds nothing docs/install.md does not explain
#   2. dpkg -i installs them; the programs, man pages, completion and unit are where a node expects them
#   3. the installed agent unit passes tests/packaging/systemd_unit_test.sh with the installed files
#   4. the multi-node test (multinode_backends.sh) runs against the installed dsrun found on PATH
#   5. an out-of-tree program built with find_package(dsrt) (and one with pkg-config) runs through the installed dsrun
#   6. dpkg -P removes both and leaves none of their files, conffiles or dpkg records behind
#   packages.sh BUILD_DIR SOURCE_DIR [BACKEND...]     (backends for step 4; default: pdsh ssh)
# Needs root and dpkg; refuses to touch an existing installation of the packages.
set -u
BUILD=$(readlink -f "${1:?usage: packages.sh BUILD_DIR SOURCE_DIR [BACKEND...]}"); SRC=$(readlink -f "${2:?}"); shift 2
BACKENDS=("$@"); [ ${#BACKENDS[@]} -gt 0 ] || BACKENDS=(pdsh ssh)
HERE=$SRC/tests/integration
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
show() { echo "#   --- $1:"; sed 's/^/#   | /' "$1" 2>/dev/null | tail -"${2:-25}"; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

if [ "$(id -u)" -ne 0 ]; then not_ok "the package test needs root for dpkg -i (CI runs as root); running as uid $(id -u)"; exit 1; fi
for p in dsrun dsrun-runtime dsrun-deepspeed; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv 'not-installed'; then
    not_ok "package $p is already known to dpkg on this machine; the test will not replace it (dpkg -P $p first)"; exit 1
  fi
done
WORK=$(mktemp -d /tmp/dsrun-packages.XXXXXX); chmod 755 "$WORK"
purge() { installed dsrun-runtime || installed dsrun || dpkg -s dsrun >/dev/null 2>&1 || return 0
          dpkg -P dsrun-deepspeed dsrun-runtime dsrun >"$WORK/purge.log" 2>&1; }
trap 'purge; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# 1. Build the packages.
if (cd "$BUILD" && cpack -G DEB -B "$WORK/deb" >"$WORK/cpack.log" 2>&1); then :; else not_ok "cpack -G DEB"; show "$WORK/cpack.log"; exit 1; fi
launcher_deb=$(ls "$WORK"/deb/dsrun_*.deb 2>/dev/null); runtime_deb=$(ls "$WORK"/deb/dsrun-runtime_*.deb 2>/dev/null)
if [ -f "$launcher_deb" ] && [ -f "$runtime_deb" ]; then ok "cpack builds $(basename "$launcher_deb") and $(basename "$runtime_deb")"
else not_ok "cpack builds dsrun and dsrun-runtime" "$(ls "$WORK/deb")"; exit 1; fi

depends() { dpkg-deb -f "$1" Depends; }
if ! depends "$launcher_deb" | grep -qE 'torch|c10'; then ok "dsrun does not depend on LibTorch (Depends: $(depends "$launcher_deb"))"
else not_ok "dsrun does not depend on LibTorch" "Depends: $(depends "$launcher_deb")"; fi
if depends "$launcher_deb" | grep -q 'libssh' && depends "$launcher_deb" | grep -q 'libprotobuf'; then
  ok "dsrun's Depends are computed from its binaries (libssh, libprotobuf, ...)"
else not_ok "dsrun's Depends are computed from its binaries" "Depends: $(depends "$launcher_deb")"; fi
if depends "$runtime_deb" | grep -q 'libtorch' && depends "$runtime_deb" | grep -q 'python3-torch'; then
  ok "dsrun-runtime depends on Debian's LibTorch and python3-torch"
else not_ok "dsrun-runtime depends on LibTorch and python3-torch" "Depends: $(depends "$runtime_deb")"; fi

# lintian: every tag it reports must be one docs/install.md explains (its table lists them).
if command -v lintian >/dev/null; then
  lintian --no-tag-display-limit "$launcher_deb" "$runtime_deb" >"$WORK/lintian.log" 2>&1
  explained=$(sed -n '/<!-- lintian tags -->/,/<!-- end lintian tags -->/p' "$SRC/docs/install.md" |
              sed -nE 's/^\| `([a-z0-9-]+)`.*/\1/p')  # the first column of the table
  unexplained=$(grep -E '^[EW]: ' "$WORK/lintian.log" | awk '{print $3}' | sort -u | grep -vxF -f <(printf '%s\n' $explained) || true)
  if [ -z "$unexplained" ]; then ok "lintian: every error and warning is explained in docs/install.md ($(grep -cE '^[EW]: ' "$WORK/lintian.log") reported)"
  else not_ok "lintian: errors or warnings docs/install.md does not explain: $(echo $unexplained)"; show "$WORK/lintian.log" 40; fi
else
  not_ok "lintian is not installed (scripts/install_deps.sh installs it)"
fi

# 2. Install.
before=$WORK/before.txt
find /usr /etc /lib /var/lib/dpkg/info -xdev 2>/dev/null | LC_ALL=C sort > "$before"
if dpkg -i "$launcher_deb" "$runtime_deb" >"$WORK/install.log" 2>&1; then ok "dpkg -i dsrun dsrun-runtime"
else not_ok "dpkg -i dsrun dsrun-runtime (missing dependencies? apt-get install -f)"; show "$WORK/install.log"; exit 1; fi
hash -r
unset DSRUN_LAUNCH
# The `deepspeed` command name is a package of its own, installed only when asked for.
alias_deb=$(ls "$WORK"/deb/dsrun-deepspeed_*.deb 2>/dev/null)
if [ -f "$alias_deb" ] && [ ! -e /usr/bin/deepspeed ] && dpkg -i "$alias_deb" >"$WORK/alias.log" 2>&1 && hash -r &&
  [ "$(readlink /usr/bin/deepspeed)" = dsrun ] && deepspeed --version | grep -q '^dsrun ' && [ -n "$(man -w deepspeed 2>/dev/null)" ] &&
  dpkg -P dsrun-deepspeed >>"$WORK/alias.log" 2>&1 && [ ! -e /usr/bin/deepspeed ]; then
  ok "dsrun-deepspeed (opt-in) adds the deepspeed command and its man page; dsrun alone does not"
else not_ok "dsrun-deepspeed adds the deepspeed command" "deb: $alias_deb"; show "$WORK/alias.log"; fi
hash -r
missing=""
for p in dsrun dsrun-launch dsrun-agent ds_elastic ds_estimate ds_to_fp32; do
  [ "$(command -v "$p")" = "/usr/bin/$p" ] || missing="$missing $p($(command -v "$p"))"
  [ -n "$(man -w "$p" 2>/dev/null)" ] || missing="$missing man:$p"
done
for f in /lib/systemd/system/dsrun-agent.service /etc/default/dsrun-agent /usr/share/bash-completion/completions/dsrun \
         /usr/include/dsrt/runtime/runtime.h /usr/include/dsrt/common/env_contract.h \
         /usr/lib/x86_64-linux-gnu/cmake/dsrt/dsrt-config.cmake /usr/lib/x86_64-linux-gnu/pkgconfig/dsrt.pc; do
  [ -e "$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "programs on PATH in /usr/bin with man pages; unit, conffile, completion, headers, CMake and pkg-config files installed"
else not_ok "installed files" "missing:$missing"; fi
if ldd /usr/bin/ds_to_fp32 | grep -qE "libdsrt.so.0 => (/usr)?/lib/x86_64-linux-gnu/libdsrt.so.0"; then ok "ds_to_fp32 loads the installed libdsrt.so.0"
else not_ok "ds_to_fp32 loads the installed libdsrt.so.0" "$(ldd /usr/bin/ds_to_fp32 | grep dsrt)"; fi
if dsrun --version >/dev/null 2>&1 && ds_elastic --help >/dev/null 2>&1 && ds_estimate --help >/dev/null 2>&1; then
  ok "the installed programs run"
else not_ok "the installed programs run"; fi
# The dsrt Python package from dist-packages (no PYTHONPATH, outside the source tree), trained for a step.
pyout=$(cd / && env -u PYTHONPATH /usr/bin/python3 -c '
import dsrt, torch
m = torch.nn.Linear(4, 2)
e, _, _, _ = dsrt.initialize(model=m, config={"train_batch_size": 2, "optimizer": {"type": "Adam"}})
loss = e(torch.ones(2, 4)).pow(2).mean(); e.backward(loss); e.step()
print(dsrt.__file__, e.global_steps)' 2>&1)
if printf '%s' "$pyout" | grep -q "^/usr/lib/python3/dist-packages/dsrt/__init__.py 1$"; then
  ok "the installed dsrt Python package imports and trains a step (/usr/lib/python3/dist-packages)"
else not_ok "the installed dsrt Python package imports and trains a step" "$pyout"; fi

# 3. The installed unit.
if bash "$SRC/tests/packaging/systemd_unit_test.sh" /lib/systemd/system/dsrun-agent.service /etc/default/dsrun-agent \
     /usr/bin/dsrun /usr/bin/dsrun-agent >"$WORK/unit.log" 2>&1; then
  ok "the installed dsrun-agent unit: $(grep -c '^ok' "$WORK/unit.log") checks of systemd_unit_test.sh pass"
else not_ok "the installed dsrun-agent unit (systemd_unit_test.sh)"; show "$WORK/unit.log"; fi

# 4. Multi-node with the installed programs: dsrun from PATH, dsrun-launch found next to it in /usr/bin.
if bash "$HERE/multinode_backends.sh" "$(command -v dsrun)" "${BACKENDS[@]}" >"$WORK/multinode.log" 2>&1; then
  ok "multinode_backends.sh with /usr/bin/dsrun (${BACKENDS[*]}): $(grep -c '^ok' "$WORK/multinode.log") checks pass"
else not_ok "multinode_backends.sh with /usr/bin/dsrun (${BACKENDS[*]})"; show "$WORK/multinode.log" 40; fi

# 5. An out-of-tree program: find_package(dsrt), then run through the installed dsrun (2 ranks, ZeRO stage 2).
cp -r "$SRC/examples/find_package" "$WORK/app"
cat > "$WORK/app/ds_config.json" <<'JSON'
{ "train_batch_size": 8, "train_micro_batch_size_per_gpu": 4,
  "optimizer": { "type": "Adam", "params": { "lr": 0.01 } },
  "zero_optimization": { "stage": 2 } }
JSON
if (cd "$WORK/app" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$WORK/app.log" 2>&1 &&
    cmake --build build >>"$WORK/app.log" 2>&1); then
  ok "an out-of-tree program builds with find_package(dsrt) and dsrt::dsrt alone"
  if ! grep -q "$SRC" "$WORK/app/build/CMakeCache.txt" "$WORK/app/build/build.ninja"; then ok "the consumer's build refers to nothing in the dsrun source tree"
  else not_ok "the consumer's build refers to nothing in the dsrun source tree" "$(grep -m3 "$SRC" "$WORK/app/build/build.ninja")"; fi
  (cd "$WORK/app" && OMP_NUM_THREADS=1 dsrun --num_gpus 2 --no_python --no_local_rank build/dsrt_consumer ds_config.json) \
    >"$WORK/run.out" 2>"$WORK/run.err"; rc=$?
  if [ "$rc" = 0 ] && [ "$(grep -c 'dsrt_consumer rank [01] of 2: libdsrt 0.1' "$WORK/run.out")" = 2 ]; then
    ok "it trains 2 ranks through the installed dsrun: $(head -1 "$WORK/run.out")"
  else not_ok "it trains 2 ranks through the installed dsrun (rc $rc)"; show "$WORK/run.out"; show "$WORK/run.err"; fi
else not_ok "an out-of-tree program builds with find_package(dsrt)"; show "$WORK/app.log" 40; fi
printf '#include "runtime/version.h"\n#include <cstdio>\nint main() { std::printf("%%s\\n", dsrt::version()); }\n' > "$WORK/pc.cc"
if g++ -std=c++17 "$WORK/pc.cc" -o "$WORK/pc" $(pkg-config --cflags --libs dsrt) >"$WORK/pc.log" 2>&1 &&
   [ "$("$WORK/pc")" = "$(pkg-config --modversion dsrt)" ] && pkg-config --cflags dsrt | grep -q -- '-DUSE_C10D_GLOO'; then
  ok "pkg-config dsrt compiles and links a program (and carries LibTorch's -DUSE_C10D_GLOO)"
else not_ok "pkg-config dsrt compiles and links a program"; show "$WORK/pc.log"; fi

# 6. Remove and purge: nothing of the packages is left.
if dpkg -P dsrun-runtime dsrun >"$WORK/purge.log" 2>&1; then ok "dpkg -P dsrun-runtime dsrun"
else not_ok "dpkg -P dsrun-runtime dsrun"; show "$WORK/purge.log"; fi
after=$WORK/after.txt
find /usr /etc /lib /var/lib/dpkg/info -xdev 2>/dev/null | LC_ALL=C sort > "$after"
left=""
for deb in "$launcher_deb" "$runtime_deb"; do
  while read -r path; do
    path=${path#.}; [ -n "$path" ] && [ "$path" != / ] || continue
    # /lib is a link to /usr/lib: compare the real path with what existed before the install.
    [ -e "$path" ] && ! grep -qxF "$(readlink -f "$path")" "$before" && left="$left $path"
  done < <(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|/$||')
done
# New paths since before the install that name dsrun or dsrt (other paths may come from unrelated work).
new=$(comm -13 "$before" "$after" | grep -E 'dsrun|dsrt' | head -20)
if [ -z "$left" ] && [ -z "$new" ] && ! ls /var/lib/dpkg/info/dsrun* >/dev/null 2>&1; then
  ok "after dpkg -P nothing of the packages is left (files, directories, conffiles, dpkg records)"
else not_ok "after dpkg -P nothing is left" "left:$left" "new since before install: $new"; fi

echo "1..$n"
[ "$failed" = 0 ]
