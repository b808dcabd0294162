#!/usr/bin/env bash
# The README's quick tour runs as printed: its first block, in a scratch copy
# of the repository's example (bundles/example), with this test's default
# store and settings, every command exiting 0. Its second block (a GPU, NVRTC
# or a remote cache) is not run here: every `kcache SUBCOMMAND --option` of it
# must exist (the subcommand's --help lists the option).
source "$(dirname "$0")/lib.bash"
block() { python3 "$KCACHE_SOURCE_DIR/tests/tools/readme_block.py" "$KCACHE_SOURCE_DIR/README.md" "$@"; }
block "## A quick tour" sh 1 >tour.sh || fail "no tour block"
block "## A quick tour" sh 2 >more.sh || fail "no second tour block"
mkdir -p scratch/bundles bin
cp -r "$KCACHE_SOURCE_DIR/bundles/example" scratch/bundles/
ln -s "$KCACHE" bin/kcache
note "the tour, as printed"
(cd scratch && PATH="$WORK/bin:$PATH" bash -euo pipefail -x "$WORK/tour.sh") >out 2>err ||
  { tail -30 err; fail "the README's tour failed at the line above"; }
[[ $(json_get scratch/bundles/example/build.json 'j["counts"]["hit"]') == 76 ]] || fail "the tour's third build did not hit 76"
expect_in err "+ kcache merge shard-1.kcb shard-2.kcb -o merged.kcb"
[[ -s scratch/bundles/example/merged.kcb && -s scratch/bundles/example/gen/app_kernels.cpp ]] || fail "tour outputs missing"
note "the second block's commands and options exist"
python3 - "$KCACHE" more.sh <<'PY'
import re, shlex, subprocess, sys
kcache, path = sys.argv[1:3]
checked = 0
for line in open(path):
    words = shlex.split(line, comments=True)
    if not words or words[0] != "kcache":
        continue
    args = [words[1]] + (["from-commands"] if words[1:3] == ["manifest", "from-commands"] else [])
    args += ["check"] if words[1:3] == ["remote", "check"] else []
    args += ["add"] if words[1:3] == ["remote", "add"] else []
    h = subprocess.run([kcache, *args, "--help"], capture_output=True, text=True)
    assert h.returncode == 0, f"`kcache {' '.join(args)}` does not exist: {h.stderr}"
    for w in words[1:]:
        if w.startswith("-"):
            w = w[:2] if re.match(r"^-[A-Za-z].", w) else w  # -j1: the option -j
            assert re.search(r"(^|[ ,])" + re.escape(w.split("=")[0]) + r"\b", h.stdout, re.M), \
                f"`kcache {' '.join(args)}` has no option {w}"
    checked += 1
assert checked >= 10, checked
print("second block:", checked, "commands checked")
PY
