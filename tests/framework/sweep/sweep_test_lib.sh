# What the `ablate sweep` shell tests share (sourced by sweep_local_test.sh and
# sweep_tune_test.sh): a scratch directory removed at exit (with any run still writing there),
# failing with every log's tail, comparing two sweeps' results (same_results.py), polling how far a
# sweep's runs have got, and waiting for killed runs to be gone.
tmp=$(mktemp -d)
cleanup() { pkill -KILL -f -- "--out $tmp/" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() {  # the message, the tail of every log this test wrote (the newest last: most often the one
  # that failed), and the message again (a CI shows the end)
  echo "FAIL: $*" >&2
  for f in $(ls -tr "$tmp"/*.log); do echo "--- $f" >&2; tail -n 25 "$f" >&2; done
  echo "FAIL: $*" >&2
  exit 1
}
same_results() {  # DIR_A DIR_B: equal results run by run; what differs goes to same_results.log (fail shows it)
  /usr/bin/python3 "$here/same_results.py" "$@" > "$tmp/same_results.log" 2>&1
}
max_step() {  # the highest step any run directly under a sweep directory has logged (its ablate.log; fast to poll)
  cat "$1"/*/ablate.log 2>/dev/null | sed -n 's/^step \([0-9]*\)\/.*/\1/p' | sort -n | tail -1 | grep . || echo 0
}
gone() {  # waits (up to 60 s) until no process has "--out $1" on its command line: a SIGKILLed run
  # in an fsync can outlive the sweep that started it, and while it lives it holds its run file
  for _ in $(seq 1 600); do pgrep -f -- "--out $1" > /dev/null || return 0; sleep 0.1; done
  return 1
}
