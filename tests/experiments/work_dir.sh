# Sourced by the experiment tests (papers_test.sh, tutorials_test.sh) after setting `here`:
# `. "$here/work_dir.sh" NAME ABLATE_BINARY`. Sets `ablate` and `root`, makes the scratch
# directory `out` (removed on exit), and works from the repository root, which the specs' data
# file paths are relative to.
ablate=$(realpath "$2")
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d "/tmp/ablate-$1.XXXXXX")
trap 'rm -rf "$out"' EXIT
cd "$root"
