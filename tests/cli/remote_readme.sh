#!/usr/bin/env bash
# The README's server set-up for remote caches works as printed: its nginx
# `server` block (only its port and folder replaced by this test's) takes
# kcache's PUTs and serves them back, and a redis-server run with its config
# lines takes values; `remote check` says reachable and writable, and a
# second runner with a fresh store gets every kernel from each.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/servers.bash"
block() { python3 "$KCACHE_SOURCE_DIR/tests/tools/readme_block.py" "$KCACHE_SOURCE_DIR/README.md" "$@"; }
mkdir -p proj
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > proj/k.comp
for i in 1 2 3; do printf '[[kernel]]\nname = "k%d"\nsource = "k.comp"\ndefines = { VALUE = %d }\n' $i $i >> proj/kcache.toml; done

# runner URL NAME: runner A fills the remote, runner B (fresh store) gets all 3 from it.
runner() {
  expect_exit 0 "$KCACHE" remote check "$1"
  expect_in out "writable"
  expect_exit 0 "$KCACHE" build proj/kcache.toml --store "$2-A" --remote "$1" --json
  expect_exit 0 "$KCACHE" build proj/kcache.toml --store "$2-B" --remote "$1" --json
  [[ $(outcome out remote_hit) == 3 ]] || { cat out; fail "$2: runner B got $(outcome out remote_hit) of 3 from the remote"; }
}

note "nginx with the README's server block"
block "## Remote caches" nginx >server.conf || fail "no nginx block"
port=$(free_port)
grep -q '^    listen 8080;$' server.conf && grep -q ' /var/cache/kcache-http' server.conf || fail "the block changed: update this test"
sed -i "s|^    listen 8080;|    listen 127.0.0.1:$port;|; s|/var/cache/kcache-http|$WORK/http|g" server.conf
mkdir -p "$WORK/http/kcache" ngx/tmp
cat >ngx/nginx.conf <<CONF
daemon off;
master_process off;
error_log $WORK/ngx/error.log;
pid $WORK/ngx/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $WORK/ngx/tmp;
  include $WORK/server.conf;
}
CONF
nginx -c "$WORK/ngx/nginx.conf" -p "$WORK/ngx" &
SERVER_PIDS+=("$!")
wait_port "$port"
runner "http://127.0.0.1:$port/kcache/" http
# The summary line counts remote hits with the rest.
expect_exit 0 "$KCACHE" build proj/kcache.toml --store http-C --remote "http://127.0.0.1:$port/kcache/"
expect_in out "3 kernels: 3 hit (3 from remotes), 0 compiled, 0 failed, 0 not stored"
[[ -n $(find "$WORK/http/kcache" -type f | head -1) ]] || fail "nothing was written under the server's root"

note "redis-server with the README's config lines"
block "## Remote caches" conf >redis.conf || fail "no redis block"
grep -q '^maxmemory-policy allkeys-lru$' redis.conf || fail "the block changed: update this test"
rport=$(free_port)
printf 'port %s\nbind 127.0.0.1\ndir %s\nprotected-mode no\n' "$rport" "$WORK" >>redis.conf
redis-server "$WORK/redis.conf" >redis.log 2>&1 &
SERVER_PIDS+=("$!")
wait_port "$rport"
[[ $(redis-cli -p "$rport" config get maxmemory-policy | tail -1) == allkeys-lru ]] || fail "the config was not read"
runner "redis://127.0.0.1:$rport/0" redis
echo "remote_readme: ok"
