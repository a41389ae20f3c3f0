# Shared by the integration scripts (source it): TAP-style checks, the root requirement of the
# network-namespace cluster, and the helpers every multi-process test needs. Sharness style: a failed check
# is counted, the script goes on, and `finish` exits non-zero if any failed.

failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else not_ok "$what"; fi; }

# require_root WHAT: the netns cluster needs root (CI runs as root); anyone else gets one failed check.
require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    not_ok "$1 needs root for the network-namespace cluster (CI runs as root); uid $(id -u)"
    exit 1
  fi
}

# Processes whose environment carries job id $1 (how the tests find leftovers, one /proc for all namespaces).
job_procs() { grep -l "DSRUN_JOB_ID=$1" /proc/[0-9]*/environ 2>/dev/null | wc -l; }

# wait_for SECONDS CMD...: until CMD succeeds (a guard against hangs, not a timing check).
wait_for() {
  local n=$(($1 * 10)); shift
  for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
  return 1
}

# finish: the summary line and the exit code.
finish() {
  [ "$failures" = 0 ] && echo "# all passed" || echo "# $failures failed"
  exit $((failures > 0))
}

# with_test_tree DSRUN DIR: DSRUN itself, or with DSRUN_TEST_TREE_WIDTH=N a wrapper (written into DIR) that adds
# --tree_width N to every launch (a command line with --launcher), so that a suite written for the star runs
# unchanged through the agent tree.
with_test_tree() {
  [ -n "${DSRUN_TEST_TREE_WIDTH:-}" ] || { echo "$1"; return; }
  cat >"$2/dsrun-tree" <<WRAP
#!/bin/sh
case " \$* " in *" --launcher "*) exec "$1" --tree_width "$DSRUN_TEST_TREE_WIDTH" "\$@" ;; esac
exec "$1" "\$@"
WRAP
  chmod 755 "$2/dsrun-tree"
  echo "# every launch through an agent tree of width $DSRUN_TEST_TREE_WIDTH (DSRUN_TEST_TREE_WIDTH)" >&2
  echo "$2/dsrun-tree"
}
