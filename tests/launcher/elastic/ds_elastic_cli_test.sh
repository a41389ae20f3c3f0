#!/usr/bin/env bash
# ds_elastic end to end: output on success, and on failure an empty stdout, one stderr line, exit != 0.
# Usage: ds_elastic_cli_test.sh PATH/TO/ds_elastic
set -u
bin=${1:?usage: $0 PATH/TO/ds_elastic}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; failures=$((failures + 1)); }

cat >"$tmp/ds.json" <<'JSON'
{"train_batch_size": 4, "elasticity": {"enabled": true, "max_train_batch_size": 10000,
 "micro_batch_sizes": [8, 12, 16, 17], "min_gpus": 32, "max_gpus": 1500, "min_time": 20, "version": 0.1}}
JSON
cat >"$tmp/v02.json" <<'JSON'
{"elasticity": {"enabled": true, "max_train_batch_size": 10000, "micro_batch_sizes": [8, 12, 16, 17],
 "min_gpus": 32, "max_gpus": 1500, "version": 0.2, "num_gpus_per_node": 8, "model_parallel_size": 4}}
JSON
printf '{"elasticity": {\n  "enabled": true,\n  "max_train_batch_size": ,\n}}\n' >"$tmp/bad.json"

# expect_ok NAME EXPECTED_STDOUT ARGS...
expect_ok() {
  local name=$1 want=$2
  shift 2
  local out
  if out=$("$@" 2>"$tmp/err") && [ "$out" = "$want" ] && [ ! -s "$tmp/err" ]; then ok "$name"; else
    not_ok "$name: got '$out', stderr '$(cat "$tmp/err")'"; fi
}
# expect_fail NAME STDERR_SUBSTRING ARGS...
expect_fail() {
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local lines
  lines=$(grep -c '' "$tmp/err")
  if [ $rc -ne 0 ] && [ ! -s "$tmp/out" ] && grep -qF -- "$want" "$tmp/err" && [ "$lines" -le 2 ] &&
    ! grep -q 'Traceback\|terminate called' "$tmp/err"; then ok "$name"; else
    not_ok "$name: rc=$rc stdout='$(cat "$tmp/out")' stderr='$(cat "$tmp/err")'"; fi
}

expect_ok "--json with -w prints the micro batch" \
  '{"final_batch_size": 9792, "valid_gpus": [32, 34, 36, 48, 51, 64, 68, 72, 96, 102, 136, 144, 153, 192, 204, 272, 288, 306, 408, 576, 612, 816, 1224], "micro_batch_size": 17}' \
  "$bin" -c "$tmp/ds.json" -w 64 --json
expect_ok "--json without -w has no micro batch" \
  '{"final_batch_size": 9792, "valid_gpus": [32, 34, 36, 48, 51, 64, 68, 72, 96, 102, 136, 144, 153, 192, 204, 272, 288, 306, 408, 576, 612, 816, 1224]}' \
  "$bin" --config "$tmp/ds.json" --json
expect_ok "a world size <= 0 counts as not given, as in bin/ds_elastic" \
  '{"final_batch_size": 9792, "valid_gpus": [32, 34, 36, 48, 51, 64, 68, 72, 96, 102, 136, 144, 153, 192, 204, 272, 288, 306, 408, 576, 612, 816, 1224]}' \
  "$bin" -c "$tmp/ds.json" --world-size=-3 --json
expect_ok "v0.2 reads WORLD_SIZE when -w is absent" '{"final_batch_size": 9996, "valid_gpus": [4]}' \
  env WORLD_SIZE=16 "$bin" -c "$tmp/v02.json" --json

out=$("$bin" -c "$tmp/ds.json" -w 64)
if [ "$(printf '%s\n' "$out" | sed -n 5p)" = '    "enabled": true,' ] &&
  printf '%s\n' "$out" | grep -qx 'Calculated results for world size 64:' &&
  printf '%s\n' "$out" | grep -qx 'micro_batch_size .... 17'; then ok "plain output mirrors bin/ds_elastic"; else
  not_ok "plain output mirrors bin/ds_elastic: $out"; fi

expect_fail "an incompatible world size names it" "world size 128 is not one of the valid GPU counts" \
  "$bin" -c "$tmp/ds.json" -w 128
expect_fail "v0.2 without a world size names WORLD_SIZE" "WORLD_SIZE='<unset>'" env -u WORLD_SIZE "$bin" -c "$tmp/v02.json"
expect_fail "a missing config file names the path and errno" "$tmp/none.json" "$bin" -c "$tmp/none.json"
expect_fail "invalid JSON names file and line" "$tmp/bad.json:3: invalid JSON" "$bin" -c "$tmp/bad.json"
expect_fail "-c is required" "-c/--config is required" "$bin" -w 4
expect_fail "a non-integer world size is refused" "-w/--world-size must be an integer, got 'four'" \
  "$bin" -c "$tmp/ds.json" -w four
expect_fail "an unknown option is refused" "unrecognised option '--bogus'" "$bin" -c "$tmp/ds.json" --bogus

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
