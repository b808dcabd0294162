#!/usr/bin/env bash
# A shared remote cache on a real nginx (WebDAV PUT, GET, HEAD): runner A
# fills it, runner B builds from it alone; a value damaged on disk behind
# nginx is refused and recompiled; a server answering 503 to everything is
# counted, skipped after max-failures and never fails the build; trust: with
# --trust only values signed by a trusted key are accepted, and a remote
# whose values are refused every time is skipped after max-failures.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
start_nginx W
# A small project: saxpy's 6 variants.
mkdir -p proj && cp -r "$KCACHE_SOURCE_DIR/bundles/example/shaders" "$KCACHE_SOURCE_DIR/bundles/example/include" proj/
sed -n '1,/^# Shared-memory tree reduction/p' "$KCACHE_SOURCE_DIR/bundles/example/kcache.toml" | grep -v '^# Shared' > proj/kcache.toml
N=6

note "runner A fills the remote; runner B builds from it alone"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store A --remote "$W_URL" --json
[[ $(outcome out compiled) == "$N" && $(remote_stat out writes) == "$N" ]] || fail "A: $(counts out), writes $(remote_stat out writes)"
[[ $(find "$W_ROOT/cache" -type f | wc -l) == "$N" ]] || fail "nginx holds $(find "$W_ROOT/cache" -type f | wc -l) files"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store B --remote "$W_URL" --json
[[ $(outcome out remote_hit) == "$N" && $(outcome out compiled) == 0 ]] || fail "B: $(outcome out remote_hit) remote hits"
expect_exit 0 "$KCACHE" verify --store B

note "a value damaged on disk behind nginx is refused, recompiled, not stored"
F=$(find "$W_ROOT/cache" -type f | sed -n 1p)
printf 'XXXX' | dd of="$F" bs=1 seek=100 conv=notrunc 2>/dev/null
expect_exit 0 "$KCACHE" build proj/kcache.toml --store C --remote "$W_URL" --json
[[ $(remote_stat out refused) == 1 && $(outcome out compiled) == 1 && $(outcome out remote_hit) == $((N - 1)) ]] ||
  fail "C: refused $(remote_stat out refused), $(counts out)"
expect_exit 0 "$KCACHE" verify --store C
note "a truncated value too"
F=$(find "$W_ROOT/cache" -type f | tail -1)
head -c 50 "$F" > "$F.cut" && mv "$F.cut" "$F"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store C2 --remote "$W_URL" --json
[[ $(remote_stat out refused) == 1 && $(outcome out compiled) == 1 ]] || fail "C2: refused $(remote_stat out refused)"

note "a remote answering 503 is counted, skipped after 3 failures, and the next remote serves"
BROKEN="http://127.0.0.1:$W_PORT/broken/"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store D -j1 --remote "$BROKEN" --remote "$W_URL" --json
[[ $(remote_stat out errors 0) == 3 && $(json_get out "j['remotes'][0]['skipped'] is not None") == True ]] ||
  fail "broken remote: errors $(remote_stat out errors 0), skipped $(remote_stat out skipped 0)"
json_get out "j['remotes'][0]['warnings'][0]" | grep -q "HTTP 503" || fail "503 not named"
[[ $(outcome out remote_hit) == "$N" ]] || fail "D: $(outcome out remote_hit) remote hits"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store D2 -j1 --remote "$BROKEN"
expect_in out "skipped for the rest of the run after 3 consecutive failures"

note "trust: signed values are accepted from trusted keys only"
"$KCACHE" keygen -o ci >/dev/null
"$KCACHE" keygen -o other >/dev/null
SIGNED="$W_URL?prefix=signed"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store S1 --remote "$SIGNED" --sign ci.key --json
# Each signed value twice: by its key and by its recorded inputs (direct mode).
[[ $(remote_stat out writes) == $((2 * N)) ]] || fail "signed writes: $(remote_stat out writes)"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store S2 --remote "$SIGNED" --trust ci.pub --json
[[ $(outcome out remote_hit) == "$N" && $(remote_stat out authenticated) == True ]] || fail "trusted: $(outcome out remote_hit)"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store S3 --remote "$SIGNED" --trust other.pub --json
# Every value is refused: after max-failures (3) refusals in a row the
# remote is skipped, so the rest cost no fetch (-j2: one more may be in flight).
[[ $(remote_stat out refused) -ge 3 && $(remote_stat out refused) -le 4 && $(outcome out compiled) == "$N" ]] ||
  fail "untrusted key accepted: refused $(remote_stat out refused), $(counts out)"
[[ $(json_get out "j['remotes'][0]['skipped'] is not None") == True ]] || fail "a remote refused every time was not skipped"
json_get out "j['remotes'][0]['refusals'][0]" | grep -q "which is not trusted" || fail "untrusted reason"
# The unsigned values written by A are refused under --trust.
expect_exit 0 "$KCACHE" build proj/kcache.toml --store S4 --remote "$W_URL" --trust ci.pub --remote-read-only --json
[[ $(remote_stat out refused) -ge 3 && $(remote_stat out refused) -le 4 && $(outcome out remote_hit) == 0 ]] ||
  fail "unsigned accepted under --trust: refused $(remote_stat out refused)"
json_get out "j['remotes'][0]['refusals']" | grep -q "unsigned" || fail "unsigned reason"
note "export -o URL and import URL move a bundle through nginx, all or nothing"
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 -o "${W_URL}bundles/a.kcb"
[[ -s "$W_ROOT/cache/bundles/a.kcb" ]] || fail "no bundle on the server"
expect_exit 0 "$KCACHE" import "${W_URL}bundles/a.kcb" --store X --json
[[ $(json_get out "j['counts']['imported']") == "$N" ]] || fail "import URL: $(cat out)"
expect_exit 0 "$KCACHE" inspect --store X
expect_in out "imported from bundle ${W_URL}bundles/a.kcb"
expect_exit 3 "$KCACHE" import "${W_URL}bundles/missing.kcb" --store Y
expect_in err "HTTP 404"
[[ ! -e Y ]] || fail "a failed import left a store"
head -c 300 "$W_ROOT/cache/bundles/a.kcb" > "$W_ROOT/cache/bundles/cut.kcb"
expect_exit 6 "$KCACHE" import "${W_URL}bundles/cut.kcb" --store Y
[[ ! -e Y ]] || fail "a truncated bundle left a store"
expect_exit 4 "$KCACHE" export --store A --namespace spirv/vulkan1.2 -o "http://127.0.0.1:$W_PORT/broken/a.kcb"
expect_in err "HTTP 503"
expect_exit 2 "$KCACHE" export --store A --namespace spirv/vulkan1.2 -o "${W_URL}bundles/"
expect_in err "names a folder"
echo "ok"
