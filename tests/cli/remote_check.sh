#!/usr/bin/env bash
# kcache remote check: reachable, writable, values per namespace (Redis and a
# folder can list keys; plain HTTP cannot); exit 4 when unreachable. URLs
# are parsed as untrusted input: bad ones are refused (exit 2) with the
# password never shown.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
copy_example proj
start_redis R
start_nginx W
mkdir shared
"$KCACHE" build proj/kcache.toml --store A -j2 --remote "$R_URL" --remote "file://$WORK/shared" --remote "$W_URL" >/dev/null

expect_exit 0 "$KCACHE" remote check "$R_URL" --json
[[ $(json_get out "j['reachable'] and j['writable']") == True ]] || fail "redis check"
[[ $(json_get out "sum(j['values'].values())") == 76 && $(json_get out "j['values']['spirv/vulkan1.2']") == 64 ]] ||
  fail "redis counts: $(cat out)"
expect_exit 0 "$KCACHE" remote check "file://$WORK/shared"
expect_in out "writable: yes"
expect_in out "spirv/vulkan1.2:"
expect_exit 0 "$KCACHE" remote check "$W_URL"
expect_in out "reachable: yes"
expect_in out "writable: yes"
expect_in out "cannot list its keys"
expect_exit 0 "$KCACHE" remote check "$W_URL?read-only"
expect_in out "not tried (read-only)"
# nginx refuses writes outside its DAV location.
expect_exit 4 "$KCACHE" remote check "http://127.0.0.1:$W_PORT/broken/"
expect_exit 4 "$KCACHE" remote check "redis://127.0.0.1:$(free_port)"
expect_in out "reachable: no"

note "bad URLs are refused at once, the password never echoed"
expect_exit 2 "$KCACHE" remote check "redis://user:s3cret@host:99999"
expect_in err "port"
grep -q s3cret err && fail "password shown: $(cat err)"
expect_exit 2 "$KCACHE" build proj/kcache.toml --store A --remote "ftp://x/"
expect_in err "unknown scheme"
expect_exit 2 "$KCACHE" build proj/kcache.toml --store A --remote "file:///tmp/../etc"
expect_exit 2 "$KCACHE" build proj/kcache.toml --store A --remote "$R_URL?bogus=1"
expect_in err "unknown option"
expect_exit 2 "$KCACHE" build proj/kcache.toml --store A --trust x.pub
expect_in err "apply to remote caches"
expect_exit 0 "$KCACHE" --version
expect_in out "hiredis "
expect_in out "libcurl "
echo "ok"
