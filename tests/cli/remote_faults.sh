#!/usr/bin/env bash
# A remote never fails a build: a redis-server killed in the middle of a
# build (the build completes, exit 0, failures counted, the remote skipped);
# a refused connection; a server that answers byte by byte too slowly (a
# fake server: the one fault a real one cannot show on demand) times out.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
copy_example proj
N=76

note "redis killed mid-build"
start_redis R
"$KCACHE" build proj/kcache.toml --store A -j1 --remote "$R_URL" --json >a.json 2>a.err & pid=$!
# Kill it once the build has written some values back: it is mid-build.
for _ in $(seq 600); do [[ $(redis R DBSIZE 2>/dev/null || echo 0) -ge 5 ]] && break; sleep 0.05; done
stop_server R
rc=0; wait $pid || rc=$?
[[ $rc == 0 ]] || fail "build exited $rc after the server died: $(cat a.err)"
[[ $(outcome a.json compiled) == "$N" && $(outcome a.json failed) == 0 ]] || fail "A: $(counts a.json)"
[[ $(remote_stat a.json errors) -ge 1 && $(remote_stat a.json errors) -le 3 ]] || fail "errors $(remote_stat a.json errors)"
[[ $(json_get a.json "j['remotes'][0]['skipped'] is not None") == True ]] || fail "not skipped after the server died"
[[ $(remote_stat a.json writes) -ge 5 ]] || fail "writes before the kill: $(remote_stat a.json writes)"
expect_exit 0 "$KCACHE" verify --store A

note "connection refused: warnings, skipped after max-failures=2, exit 0"
PORT=$(free_port)
expect_exit 0 "$KCACHE" build proj/kcache.toml --store B -j2 --remote "redis://127.0.0.1:$PORT?max-failures=2"
expect_in out "skipped for the rest of the run after 2 consecutive failures"
expect_in out "cannot connect"
expect_in out "$N kernels: 0 hit (0 from remotes), $N compiled"

note "a server answering one byte a second times out (timeout-ms=300)"
python3 - "$WORK/slow.port" <<'PY' & SLOW=$!
import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
def serve(c):
    try:
        c.recv(65536)
        for b in b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000:
            c.send(bytes([b])); time.sleep(1)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
SERVER_PIDS+=("$SLOW")
for _ in $(seq 100); do [[ -s slow.port ]] && break; sleep 0.05; done
start=$(date +%s%N)
expect_exit 0 "$KCACHE" build proj/kcache.toml --store C -j2 --remote "http://127.0.0.1:$(cat slow.port)/c/?timeout-ms=300" --json
ms=$(( ($(date +%s%N) - start) / 1000000 ))
# 3 in a row skip it; with -j2 a request already in flight may fail too.
[[ $(remote_stat out errors) -ge 3 && $(remote_stat out errors) -le 4 ]] || fail "slow server: errors $(remote_stat out errors)"
# Skipped, so the build paid the timeout a few times, not once per kernel.
(( ms < 60000 )) || fail "the slow server cost $ms ms"
json_get out "j['remotes'][0]['warnings'][0]" | grep -q "timed out after 300 ms" || fail "no timeout named: $(json_get out "j['remotes'][0]['warnings']")"
[[ $(outcome out compiled) == "$N" ]] || fail "C: $(counts out)"
note "slow-server build took $ms ms"
echo "ok"
