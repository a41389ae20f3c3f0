#!/bin/bash
# Tests of dsrun's bash completion (packaging/bash-completion/dsrun), driving its completion function the
# way bash does (COMP_WORDS, COMP_CWORD) with a real dsrun for --help.   bash_completion_test.sh DSRUN FILE
set -u
DSRUN=${1:?usage: bash_completion_test.sh DSRUN COMPLETION_FILE}; FILE=${2:?}
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
WORK=$(mktemp -d /tmp/dsrun-completion.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# shellcheck disable=SC1090
. "$FILE"
complete -p dsrun >/dev/null 2>&1 && ok "the file registers a completion for dsrun" || not_ok "the file registers a completion for dsrun"

# complete_words WORD... : the candidates for the last word, one line, sorted.
complete_words() {
  COMP_WORDS=("$DSRUN" "$@"); COMP_CWORD=$#; COMPREPLY=()
  _dsrun 2>/dev/null
  printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'
}
expect() {  # expect WHAT WANT WORD...
  local what=$1 want=$2; shift 2
  local got; got=$(complete_words "$@")
  if [ "$got" = "$want" ]; then ok "$what"; else not_ok "$what" "want: '$want'" "got:  '$got'"; fi
}

# Launcher names: the completion's list is the one --help prints.
help_launchers=$("$DSRUN" --help | tr -s ' \n' ' ' | sed -nE 's/.*multi-node backend: (.*) --launcher_args.*/\1/p' |
                 sed 's/(default)//; s/,/ /g' | tr -s ' ' '\n' | grep . | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
expect "--launcher completes the launcher names dsrun --help lists ($help_launchers)" "$help_launchers" --launcher ""
expect "--launcher s completes slurm and ssh" "slurm ssh" --launcher s

expect "--hostf completes --hostfile" "--hostfile" --hostf
expect "--ho completes --host and --hostfile" "--host --hostfile" --ho
expect "--no_ completes every --no_ flag of --help" "--no_local_rank --no_mesh_probe --no_python --no_ssh --no_ssh_check" --no_
got=" $(complete_words --) "; missing=""
for flag in --hostfile --include --launcher --master_addr --tls_dir --dry_run --help; do
  [[ $got == *" $flag "* ]] || missing="$missing $flag"
done
if [ -z "$missing" ]; then ok "-- offers the long flags of --help (--hostfile ... --help)"
else not_ok "-- offers the long flags of --help" "missing:$missing" "got:$got"; fi

# Hosts of the hostfile named with -H / --hostfile.
printf '# cluster\nworker-0 slots=4\n\nworker-1 slots=4  # spare\nlogin slots=1\n' > "$WORK/hostfile"
expect "-i completes the hosts of the -H hostfile" "login worker-0 worker-1" -H "$WORK/hostfile" -i ""
expect "--include w completes worker-0 and worker-1" "worker-0 worker-1" --hostfile "$WORK/hostfile" --include w
expect "--exclude after '@' completes the next host" "worker-0:0@worker-1" -H "$WORK/hostfile" --exclude "worker-0:0@worker-1"
expect "--hostfile=FILE form is read too" "login" --hostfile="$WORK/hostfile" -e l
expect "no hostfile: no host candidates" "" -H "$WORK/absent" -i ""

# After the script the words are the script's own: no dsrun flags.
expect "flags after the script are not dsrun's" "" -H "$WORK/hostfile" train.py --h
expect "a flag's value is not taken for the script" "--hostfile" --master_port 29500 --hostf

echo "1..$n"
[ "$failed" = 0 ]
