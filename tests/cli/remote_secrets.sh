#!/usr/bin/env bash
# A remote's password is never shown: not in the error for a URL that does
# not parse (a password holding '@', one long enough to reach past what an
# error quotes) from --remote, KCACHE_REMOTE or the store's remotes file;
# not in `export -o URL` or `import URL` output, text or --json. The bundle
# transfer does send the credentials (tests/unit/test_remote_hostile.cpp
# checks the Authorization header a server receives).
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
start_nginx W
mkdir -p proj && cp -r "$KCACHE_SOURCE_DIR/bundles/example/shaders" "$KCACHE_SOURCE_DIR/bundles/example/include" proj/
cat >proj/kcache.toml <<'TOML'
[defaults]
target = "vulkan1.2"
include_dirs = ["include"]
[[kernel]]
name = "axpy4"
source = "shaders/saxpy.comp"
defines = { T = "float", WIDTH = 4 }
TOML
SECRET=hunter2word
LONG=$(printf 'Q%.0s' $(seq 230))
# no_secret FILE...: none of FILE holds the password or a piece of the long one.
no_secret() {
  local f
  for f in "$@"; do
    ! grep -q -e "$SECRET" -e "QQQQQQQQ" -e "word@" "$f" || { cat "$f"; fail "$f shows the password"; }
  done
}

note "URLs that do not parse: the user info is hidden"
for bad in "redis://ci:hun@$SECRET@127.0.0.1:99999/0" "redis://ci:$LONG$SECRET@127.0.0.1:99999/0" \
  "http://ci:p@$SECRET@127.0.0.1/a b/"; do
  expect_exit 2 "$KCACHE" build proj/kcache.toml --store A --remote "$bad"
  no_secret out err
  expect_in err "***@127.0.0.1"
  KCACHE_REMOTE="$bad" expect_exit 2 "$KCACHE" build proj/kcache.toml --store A
  no_secret out err
  mkdir -p B && printf 'kcache-remotes 1\n%s\n' "$bad" > B/remotes
  expect_exit 6 "$KCACHE" build proj/kcache.toml --store B
  no_secret out err
  expect_in err "B/remotes:2"
  expect_exit 6 "$KCACHE" remote list --store B
  no_secret out err
done

note "export -o URL and import URL with credentials: text and --json"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store A
BUNDLE="http://ci:$SECRET@127.0.0.1:$W_PORT/cache/b.kcb"
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 -o "$BUNDLE"
no_secret out err
expect_in out "ci:***@127.0.0.1"
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 -o "$BUNDLE" --json
no_secret out err
expect_exit 0 "$KCACHE" import "$BUNDLE" --store X --json
no_secret out err
[[ $(json_get out "j['counts']['imported']") == 1 ]] || fail "import URL: $(cat out)"
expect_exit 0 "$KCACHE" import "$BUNDLE" --store Y
no_secret out err
expect_exit 0 "$KCACHE" inspect --store Y
no_secret out err
echo "ok"
