#!/bin/bash
# The generated man pages (packaging/cmake/man_pages.cmake): one per program, a valid man(7) page whose
# text carries the program's --help (every long flag) and the hand-written sections of packaging/man/,
# rendered by man without warnings.
#   man_pages_test.sh MAN_DIR PROGRAM_PATH...
set -u
DIR=${1:?usage: man_pages_test.sh MAN_DIR PROGRAM_PATH...}; shift
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
for prog in "$@"; do
  name=$(basename "$prog"); page=$DIR/$name.1.gz
  if [ ! -s "$page" ]; then not_ok "$name.1.gz exists" "looked in $DIR"; continue; fi
  missing=""
  for flag in $("$prog" --help 2>&1 | grep -oE -- '--[a-z][a-z_]+' | sort -u); do
    zcat "$page" | sed 's/\\-/-/g' | grep -qF -- "$flag" || missing="$missing $flag"
  done
  if zcat "$page" | grep -q '^\.TH "\?'"$(tr a-z A-Z <<<"$name")" && [ -z "$missing" ]; then
    ok "$name.1 is a man page with every flag of $name --help"
  else not_ok "$name.1 is a man page with every flag of $name --help" "missing:$missing"; fi
  # The sections a man page reader looks for (packaging/man/PROGRAM.h2m), each with some text under it.
  absent=""
  for section in "EXIT STATUS" EXAMPLES "SEE ALSO"; do
    zcat "$page" | awk -v s="$section" 'f && /^\.SH/ {exit} f && NF {n++} $0 ~ "^\\.SH \"?"s"\"?$" {f=1} END {exit !(n > 0)}' ||
      absent="$absent '$section'"
  done
  if [ "$name" = dsrun ]; then
    for section in ENVIRONMENT FILES; do
      zcat "$page" | grep -qE "^\.SH \"?$section\"?$" || absent="$absent '$section'"
    done
    # The exit-status contract itself, not only its heading.
    zcat "$page" | sed 's/\\-/-/g' | grep -q '128+S' || absent="$absent '128+S'"
  fi
  if [ -z "$absent" ]; then ok "$name.1 has its EXIT STATUS, EXAMPLES and SEE ALSO sections"
  else not_ok "$name.1 has its EXIT STATUS, EXAMPLES and SEE ALSO sections" "missing:$absent"; fi
  if command -v man >/dev/null; then
    warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    if [ -z "$warn" ]; then ok "man renders $name.1 without warnings"; else not_ok "man renders $name.1 without warnings" "$warn"; fi
  fi
done
echo "1..$n"
[ "$failed" = 0 ]
