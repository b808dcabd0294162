#!/usr/bin/env bash
# OCI registries that misbehave (issue 40 items 7 and 14; issue 41's
# --plain-http), against the real CNCF registry and a hostile front for it
# (oci_hostile_registry.py). `import oci://` streams the release into the
# importer: a layer longer than its section is refused at the section's
# end, not after the whole layer, and nothing goes to TMPDIR; SIGTERM
# during a download ends `import` and `pull` within a second, leaving no
# file in TMPDIR or beside the output; `import oci://` takes --timeout-ms;
# a reference holding a password is refused without showing it; a registry
# that is not on loopback is spoken to over https, and over http with
# --plain-http, and a TLS mismatch names --plain-http.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/servers.bash"
mkdir -p proj && cp -r "$KCACHE_SOURCE_DIR/bundles/example/shaders" "$KCACHE_SOURCE_DIR/bundles/example/include" proj/
sed -n '1,/^# Shared-memory tree reduction/p' "$KCACHE_SOURCE_DIR/bundles/example/kcache.toml" | grep -v '^# Shared' >proj/kcache.toml
expect_exit 0 "$KCACHE" build proj/kcache.toml --store built -j 2
expect_exit 0 "$KCACHE" export --store built -o b.kcb
start_registry reg
ref="oci://$reg_HOST/kcache/h:t"
expect_exit 0 "$KCACHE" push b.kcb "$ref"
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
tmp_empty() { [[ -z $(find "$TMPDIR" -mindepth 1 -print -quit) ]] || fail "$1 left in TMPDIR: $(find "$TMPDIR")"; }
# serve MODE: the hostile front in MODE; sets $hostile to its reference.
serve() {
  python3 "$KCACHE_SOURCE_DIR/tests/cli/oci_hostile_registry.py" "$1.port" "$reg_HOST" kcache/h t "$1" >"$1.log" &
  SERVER_PIDS+=($!)
  for _ in $(seq 200); do [[ -s $1.port ]] && break; sleep 0.05; done
  [[ -s $1.port ]] || fail "the hostile registry did not start"
  hostile="oci://127.0.0.1:$(cat "$1.port")/kcache/h:t"
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

note "import streams: a layer 64 MiB longer than its section is refused at the section's end"
serve long
start=$(date +%s%N)
expect_exit 6 timeout 60 "$KCACHE" import "$hostile" --store long-store
ms=$(ms_since "$start")
expect_in err "section 1 of 1"
((ms < 10000)) || fail "the long layer was refused after $ms ms"
[[ ! -e long-store ]] || fail "a refused import left a store"
tmp_empty "a refused import"

note "SIGTERM while import and pull download: exit 143 within a second, no file left"
serve slow
# wait_layer: until the hostile registry has been asked for the layer.
wait_layer() {
  for _ in $(seq 200); do (($(grep -c '^GET .*/blobs/' slow.log) >= $1)) && return; sleep 0.05; done
  fail "the layer was never asked for: $(cat slow.log)"
}
"$KCACHE" import "$hostile" --store slow-store >out 2>err &
pid=$!
wait_layer 2
sleep 0.3
start=$(date +%s%N)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
ms=$(ms_since "$start")
[[ $rc == 143 ]] || fail "import ended with $rc after SIGTERM: $(cat err)"
((ms < 3000)) || fail "import took $ms ms to stop"
expect_in err "interrupted by SIGTERM"
[[ ! -e slow-store ]] || fail "an interrupted import left a store"
tmp_empty "an interrupted import"
mkdir out-dir
"$KCACHE" pull "$hostile" -o out-dir/p.kcb >out 2>err &
pid=$!
wait_layer 4
sleep 0.3
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[[ $rc == 143 ]] || fail "pull ended with $rc after SIGTERM: $(cat err)"
[[ -z $(ls -A out-dir) ]] || fail "an interrupted pull left $(ls -A out-dir)"
tmp_empty "an interrupted pull"

note "import oci:// --timeout-ms bounds the whole pull"
python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
conns = []
while True:
    conns.append(s.accept())' >stall.port &
SERVER_PIDS+=($!)
for _ in $(seq 200); do [[ -s stall.port ]] && break; sleep 0.05; done
start=$(date +%s%N)
expect_exit 4 "$KCACHE" import "oci://127.0.0.1:$(cat stall.port)/kcache/x:y" --timeout-ms 700 --store stalled-store
ms=$(ms_since "$start")
expect_in err "timed out after 700 ms"
((ms < 5000)) || fail "the stalled import took $ms ms"
[[ ! -e stalled-store ]] || fail "a timed-out import left a store"
expect_exit 2 "$KCACHE" import b.kcb --timeout-ms 700
expect_in err "--timeout-ms and --plain-http are for an oci:// reference"

note "a reference holding a password is refused without showing it"
for cmd in "pull oci://fleet:p4ss-s3cret@$reg_HOST/kcache/h:t -o x.kcb" \
  "push b.kcb oci://fleet:p4ss-s3cret@$reg_HOST/kcache/h:t" \
  "import oci://fleet:p@ss/s3cret@$reg_HOST/kcache/h:t --json"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$KCACHE" $cmd
  expect_in err "'oci://fleet:***@$reg_HOST/kcache/h:t'"
  expect_in err "credentials do not go in the reference"
  if grep -q 's3cret' out err; then fail "a password was printed by: $cmd"; fi
done

note "--plain-http: a registry that is not on loopback gets https unless asked"
# 0.0.0.0 reaches the registry on 127.0.0.1 (Linux) but is no loopback name.
far="oci://0.0.0.0:$reg_PORT/kcache/h:t"
expect_exit 4 "$KCACHE" pull "$far" -o far.kcb
expect_in err "pass --plain-http"
[[ ! -e far.kcb ]] || fail "a refused pull left a file"
expect_exit 0 "$KCACHE" pull "$far" -o far.kcb --plain-http
expect_exit 0 "$KCACHE" push b.kcb "oci://0.0.0.0:$reg_PORT/kcache/h:far" --plain-http
expect_exit 0 "$KCACHE" import "oci://0.0.0.0:$reg_PORT/kcache/h:far" --plain-http --store far-store --json
[[ $(json_get out 'j["counts"]["imported"]') == 6 ]] || fail "import --plain-http: $(cat out)"
expect_exit 0 "$KCACHE" push --help
expect_in out "--plain-http"
tmp_empty "the whole test"
