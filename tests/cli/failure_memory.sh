#!/usr/bin/env bash
# Remembered failures (issue 15 item 5; docs/design.md "Remembered failures"):
# a kernel that fails to compile is remembered under its key, so a warm build
# reports it (exit 1, "remembered") without expanding or compiling it until
# an input changes or --retry-failed; inspect --why and build --explain show
# the stored failure; export never carries it, import never writes it; verify
# counts it; gc removes it by the entries' rules; a successful build removes it.
# An expand failure (a missing include) is not remembered.
source "$(dirname "$0")/lib.bash"
cp -r "$KCACHE_SOURCE_DIR/tests/data/failure/project" p

# kernel FIELD: that kernel's FIELD in the last build --json ($WORK/out).
kernel() { json_get out "[k.get(\"$2\") for k in j[\"kernels\"] if k[\"kernel\"]==\"$1\"][0]"; }
expand_ms() { json_get out "[k[\"phases\"][\"expand\"][\"wall_ms\"] for k in j[\"kernels\"] if k[\"kernel\"]==\"$1\"][0]"; }
# Whether the last build expanded (and so could compile) kernel $1.
expanded() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$(expand_ms "$1")"; }

note "cold: bad fails in glslang, lost in expand; exit 1"
expect_exit 1 "$KCACHE" build p/kcache.toml --json
[[ $(counts out) == "0 1 0 2" ]] || fail "cold counts $(counts out)"
[[ $(kernel bad failed_phase) == glslang ]] || fail "phase $(kernel bad failed_phase)"
[[ $(kernel bad remembered) == None ]] || fail "a fresh failure is not remembered"
[[ $(kernel lost failed_phase) == expand ]] || fail "lost's phase"
expanded bad || fail "the cold build did not expand bad"

note "warm: bad is reported from its failure record without expanding or compiling; lost is tried again"
expect_exit 1 "$KCACHE" build p/kcache.toml --json
[[ $(counts out) == "1 0 0 2" ]] || fail "warm counts $(counts out)"
[[ $(kernel bad remembered) == True ]] || fail "bad not remembered"
[[ $(kernel bad failed_phase) == glslang ]] || fail "remembered phase"
message=$(json_get out '[k["error"]["message"] for k in j["kernels"] if k["kernel"]=="bad"][0]')
[[ $message == *undefined_call* ]] || fail "stored message lost: $message"
[[ $(json_get out 'j["remembered_failures"]') == 1 ]] || fail "remembered_failures"
! expanded bad || fail "a remembered failure was expanded: $(expand_ms bad) ms"
[[ $(kernel lost remembered) == None ]] || fail "an expand failure must not be remembered"
expanded lost || fail "lost (expand failure) was not tried again"
expect_exit 1 "$KCACHE" build p/kcache.toml
expect_in out "FAILED bad (remembered from"
expect_in out "--retry-failed to compile again"
expect_in out "compile_failed in glslang"
expect_in out "2 failed (1 remembered, not compiled)"

note "inspect --why and build --explain show the stored failure, not 'not in store'"
expect_exit 0 "$KCACHE" inspect --why --manifest p/kcache.toml
expect_in out "bad: failed (remembered,"
expect_in out "in glslang"
expect_in out "undefined_call"
expect_exit 0 "$KCACHE" inspect bad --why --manifest p/kcache.toml
expect_in out "failed in glslang at"
expect_in out "undefined_call"
expect_exit 0 "$KCACHE" inspect --why --manifest p/kcache.toml --json
[[ $(json_get out '[k["failure"]["phase"] for k in j["kernels"] if k["kernel"]=="bad"][0]') == glslang ]] \
  || fail "why --json failure phase"
[[ $(json_get out 'j["remembered_failures"]') == 1 ]] || fail "why --json remembered_failures"
expect_exit 1 "$KCACHE" build p/kcache.toml --explain
expect_in out "FAILED bad (remembered"

note "verify and inspect count the failure record; export does not carry it"
expect_exit 0 "$KCACHE" verify
expect_in out "1 failure records"
expect_exit 0 "$KCACHE" inspect
expect_in out "failure records: 1"
expect_exit 0 "$KCACHE" export --namespace spirv/vulkan1.2 -o x.kcb
expect_exit 0 "$KCACHE" inspect x.kcb --json
[[ $(json_get out '" ".join(sorted(e["kernel"] for e in j["entries"]))') == good ]] || fail "bundle holds $(cat out)"
expect_exit 0 "$KCACHE" import x.kcb --store s2
expect_exit 0 "$KCACHE" verify --store s2
grep -q "failure records" out && fail "import wrote a failure record"
expect_exit 1 "$KCACHE" build p/kcache.toml --store s2 --json
[[ $(kernel bad remembered) == None ]] || fail "the imported store remembered a failure it never saw"

note "an edit the preprocessor erases keeps the failure (expanded once, then direct again)"
printf '// a comment\n' >> p/bad.comp
expect_exit 1 "$KCACHE" build p/kcache.toml --json
[[ $(kernel bad remembered) == True ]] || fail "comment edit: not remembered"
expanded bad || fail "comment edit: not expanded to compare"
expect_exit 1 "$KCACHE" build p/kcache.toml --json
! expanded bad || fail "the refreshed failure record did not make the next run direct"

note "--retry-failed compiles it again"
expect_exit 1 "$KCACHE" build p/kcache.toml --retry-failed --json
[[ $(kernel bad remembered) == None ]] || fail "--retry-failed reported the remembered failure"
expanded bad || fail "--retry-failed did not compile"
expect_exit 0 "$KCACHE" build --help
expect_in out "--retry-failed"

note "editing an include recompiles; fixing the kernel stores it and removes the failure record"
printf 'layout(std430, binding = 0) buffer Data { uint d[]; };\nconst uint k_extra = 1u;\n' > p/include/common.glsl
expect_exit 1 "$KCACHE" build p/kcache.toml --json
[[ $(kernel bad remembered) == None ]] || fail "an include edit did not recompile"
sed -i 's/undefined_call()/1u/' p/bad.comp
expect_exit 1 "$KCACHE" build p/kcache.toml --json
[[ $(kernel bad outcome) == compiled ]] || fail "the fixed kernel: $(kernel bad outcome)"
expect_exit 0 "$KCACHE" verify
grep -q "failure records" out && fail "the failure record outlived a successful build"

note "gc removes failure records by the entries' rules (orphan, stale)"
sed -i 's/= 1u;/= nope();/' p/bad.comp
expect_exit 1 "$KCACHE" build p/kcache.toml
expect_exit 0 "$KCACHE" gc --stale --manifest p/kcache.toml
grep -q "failure record" out && fail "gc --stale removed a current failure record"
sed -i 's/nope()/nope2()/' p/bad.comp  # the record no longer matches its source: stale
expect_exit 0 "$KCACHE" gc --stale --manifest p/kcache.toml
expect_in out "bad (failure record)  (stale"
expect_exit 1 "$KCACHE" build p/kcache.toml
sed -i 's/"bad"/"renamed"/' p/kcache.toml
expect_exit 0 "$KCACHE" gc --orphans --manifest p/kcache.toml
expect_in out "bad (failure record)  (orphan"
expect_exit 0 "$KCACHE" verify
grep -q "failure records" out && fail "gc left the failure record"
exit 0
