# Helpers shared by the elastic suites (elastic_agent.sh, elastic_ssh.sh); sourced after lib.sh, with WORK set
# and each job started in the background by the suite's own `elastic` function (its pid in $dpid, its rank log
# in $WORK/TAG/starts, written by elastic_rank.sh, its output in $WORK/TAG.out/.err).

lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
at_least() { [ "$(lines "$1")" -ge "$2" ]; }
finish_job() {  # finish_job TAG: lets the ranks end, waits for dsrun (guarded), sets rc
  touch "$WORK/$1/finish"
  wait_for 60 sh -c "! kill -0 $dpid 2>/dev/null" || { not_ok "$1: dsrun ended"; kill -9 "$dpid"; }
  wait "$dpid"; rc=$?
}
job_of() { awk 'NR==1{print $9}' "$WORK/$1/starts" | sed 's/\.r[0-9]*$//'; }  # the job id without its round
show() { echo "# --- $1.err"; sed 's/^/# /' "$WORK/$1.err"; }
