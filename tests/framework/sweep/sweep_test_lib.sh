# What the `ablate sweep` shell tests share (sourced by sweep_local_test.sh and
# sweep_tune_test.sh): a scratch directory removed at exit (with any run still writing there),
# failing with every log's tail, and polling how far a sweep's runs have got.
tmp=$(mktemp -d)
cleanup() { pkill -KILL -f -- "--out $tmp/" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() {  # the message, then the tail of every log this test wrote
  echo "FAIL: $*" >&2
  for f in "$tmp"/*.log; do echo "--- $f" >&2; tail -n 25 "$f" >&2; done
  exit 1
}
max_step() {  # the highest step any run directly under a sweep directory has logged (its ablate.log; fast to poll)
  cat "$1"/*/ablate.log 2>/dev/null | sed -n 's/^step \([0-9]*\)\/.*/\1/p' | sort -n | tail -1 | grep . || echo 0
}
