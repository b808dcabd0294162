# Real servers for the remote-cache tests (cli.remote_*, label `servers`):
# redis-server and nginx with its DAV module, each on a 127.0.0.1 port
# chosen at run time, with its data under $WORK, stopped when the test
# exits. Sourced after lib.bash. scripts/setup installs both; a missing one
# FAILS the test (it is not skipped), so CI cannot pass without them.
#
#   start_redis NAME   → ${NAME}_PORT, ${NAME}_PID, ${NAME}_URL=redis://127.0.0.1:PORT/0
#   start_nginx NAME   → ${NAME}_PORT, ${NAME}_PID, ${NAME}_URL=http://127.0.0.1:PORT/cache/,
#                        ${NAME}_ROOT (the folder nginx serves; values lie under ROOT/cache/)
#   start_registry NAME [HTPASSWD]
#                      → the CNCF distribution registry (Debian's docker-registry), ${NAME}_PORT,
#                        ${NAME}_PID, ${NAME}_HOST=127.0.0.1:PORT, ${NAME}_ROOT (its storage);
#                        with HTPASSWD (a bcrypt htpasswd file) it asks for basic auth
#   stop_server NAME   kills it (SIGKILL: a crash, not a shutdown) and waits
#   redis NAME ARGS... redis-cli against it
#   free_port          prints a port no one listens on now

for tool in redis-server redis-cli nginx; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup installs it; these tests need the real server)"
done

SERVER_PIDS=()
stop_all_servers() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_all_servers EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something accepts connections on it (10 s at most).
wait_port() {
  python3 - "$1" <<'PY' || fail "no server came up on port $1"
import socket, sys, time
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
PY
}

# started NAME PID PORT: the server stops with the test; waits until it
# listens; sets ${NAME}_PORT and ${NAME}_PID.
started() {
  SERVER_PIDS+=("$2")
  wait_port "$3"
  printf -v "${1}_PORT" '%s' "$3"
  printf -v "${1}_PID" '%s' "$2"
}

start_redis() {
  local name=$1 port dir
  port=$(free_port)
  dir="$WORK/$name"
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
    --protected-mode no --daemonize no --logfile "$dir/redis.log" &
  started "$name" $! "$port"
  printf -v "${name}_URL" '%s' "redis://127.0.0.1:$port/0"
}

start_nginx() {
  local name=$1 port dir
  port=$(free_port)
  dir="$WORK/$name"
  mkdir -p "$dir/root/cache" "$dir/tmp"
  # One process (no master, no user switch), DAV PUT/DELETE writing whole
  # files (nginx writes a body to a temporary file, then renames it).
  cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
error_log $dir/error.log;
pid $dir/nginx.pid;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path $dir/tmp;
  proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp;
  scgi_temp_path $dir/tmp;
  server {
    listen 127.0.0.1:$port;
    root $dir/root;
    location /cache/ {
      dav_methods PUT DELETE;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
      client_max_body_size 300m;
    }
    # A server that fails every request, for the 5xx case.
    location /broken/ { return 503; }
  }
}
CONF
  nginx -c "$dir/nginx.conf" -p "$dir" &
  started "$name" $! "$port"
  printf -v "${name}_URL" '%s' "http://127.0.0.1:$port/cache/"
  printf -v "${name}_ROOT" '%s' "$dir/root"
}

start_registry() {
  local name=$1 htpasswd=${2:-} port dir
  command -v docker-registry >/dev/null \
    || fail "docker-registry is not installed (scripts/setup installs it; these tests need the real registry)"
  port=$(free_port)
  dir="$WORK/$name"
  mkdir -p "$dir/data"
  {
    printf 'version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n'
    printf 'storage:\n  filesystem:\n    rootdirectory: %s\n' "$dir/data"
    printf 'http:\n  addr: 127.0.0.1:%s\n' "$port"
    [[ -z $htpasswd ]] || printf 'auth:\n  htpasswd:\n    realm: kcache-test\n    path: %s\n' "$htpasswd"
  } >"$dir/config.yml"
  docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
  started "$name" $! "$port"
  printf -v "${name}_HOST" '%s' "127.0.0.1:$port"
  printf -v "${name}_ROOT" '%s' "$dir/data"
}

stop_server() {
  local pid_var="${1}_PID"
  kill -9 "${!pid_var}" 2>/dev/null || true
  wait "${!pid_var}" 2>/dev/null || true
}

redis() {
  local port_var="${1}_PORT"
  shift
  redis-cli -p "${!port_var}" "$@"
}

# remote_stat FILE FIELD [INDEX]: a field of the build --json "remotes" entry.
remote_stat() { json_get "$1" "j['remotes'][${3:-0}]['$2']"; }
# outcome FILE NAME: the count of an outcome in a build --json.
outcome() { json_get "$1" "j['counts']['$2']"; }
