#!/usr/bin/env bash
# What a store's settings file may not do (issue 40 item 2; docs/design.md
# "Settings", docs/reliability.md "Threat model"): whoever can write a store
# can write STORE/config, so it never names code to run (its nvrtc library
# is not loaded, shown by a library whose constructor leaves a marker), never
# replaces the user's trust (values signed by the store writer's key stay
# refused), and its numbers are bounded (jobs = 4096); `config list` shows
# each refusal with file and line. kcache_store_open(NULL) (a C program on
# libkcache) opens the store `kcache build` fills, by the user's `store`
# setting and by KCACHE_STORE. With HOME inherited from another user (not
# searchable), read-only commands work with one warning, and an existing
# unreadable settings file is an error naming it. `config get` of an unset
# key prints the value in effect and says it is the default.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
K=$KCACHE
mkdir -p "$KCACHE_STORE" home
export HOME=$WORK/home

note "a store's nvrtc is never loaded; the user's and --nvrtc are"
# Loading this library runs its constructor, which leaves a marker.
cat >evil.c <<EOF
#include <stdio.h>
__attribute__((constructor)) static void ran(void) {
  FILE* f = fopen("$WORK/marker", "w");
  if (f) { fputs("loaded\n", f); fclose(f); }
}
EOF
cc -shared -fPIC -o evil.so evil.c || fail "cannot build the marker library"
mkdir -p cu
printf '__global__ void k(float* x) { x[0] = 1.0f; }\n' >cu/k.cu
printf '[[kernel]]\nname = "k"\nsource = "k.cu"\nlanguage = "cuda"\narch = ["sm_80"]\n' >cu/kcache.toml
printf 'kcache-config 1\n# planted\nnvrtc = %s\n' "$WORK/evil.so" >"$KCACHE_STORE/config"
# With NVRTC on this machine the kernel compiles (exit 0); without, it fails
# (exit 1): either way the store's library is not what was loaded.
rc=0
"$K" build cu/kcache.toml >out 2>err || rc=$?
((rc == 0 || rc == 1)) || { cat err; fail "build exited $rc"; }
[[ ! -e marker ]] || fail "the store's nvrtc library was loaded: a store ran code"
expect_in err "kcache: warning: $KCACHE_STORE/config:3: nvrtc = $WORK/evil.so is not honoured: a store may not name code to run"
expect_exit 0 "$K" config list
expect_in out "(refused) nvrtc = $WORK/evil.so  # $KCACHE_STORE/config:3: a store may not name code to run"
expect_in out "(default) nvrtc = # libnvrtc.so"
expect_exit 2 "$K" config set nvrtc "$WORK/evil.so"
expect_in err "'nvrtc' is a user setting: add --user"
# The same library named by the user (a fresh store, so that it compiles):
# loaded, so the marker above would have shown a store's too.
expect_exit 0 "$K" config set --user nvrtc "$WORK/evil.so"
"$K" build cu/kcache.toml --store fresh >out 2>err || true
[[ -e marker ]] || { cat err; fail "the user's nvrtc was not loaded (the marker cannot show a load)"; }
rm -f marker
expect_exit 0 "$K" config unset --user nvrtc
"$K" build cu/kcache.toml --store fresh2 --nvrtc "$WORK/evil.so" >out 2>err || true
[[ -e marker ]] || fail "--nvrtc was not loaded"
rm -f marker
# The launcher's real glslc, likewise: never a store's.
printf 'kcache-config 1\nglslc = %s\nglslang_validator = %s\n' "$WORK/evil.so" "$WORK/evil.so" >"$KCACHE_STORE/config"
expect_exit 0 "$K" config list
expect_in out "(refused) glslc = $WORK/evil.so  # $KCACHE_STORE/config:2:"
expect_in out "(refused) glslang_validator = $WORK/evil.so  # $KCACHE_STORE/config:3:"
# An option the launcher cannot serve runs the real program: not the store's.
printf '#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n' >a.comp
rc=0
PATH=/nonexistent "$K" glslc --version-of-nothing a.comp -o a.spv >out 2>err || rc=$?
[[ ! -e marker ]] || fail "the launcher ran the store's glslc"
expect_in err "no real glslc was found on PATH"

note "a store's trust cannot replace the user's: values signed by its writer's key stay refused"
expect_exit 0 "$K" keygen -o mine
expect_exit 0 "$K" keygen -o theirs
mkdir -p p shared
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' >p/k.comp
printf '[[kernel]]\nname = "a"\nsource = "k.comp"\ndefines = { VALUE = 1 }\n[[kernel]]\nname = "b"\nsource = "k.comp"\ndefines = { VALUE = 2 }\n' >p/kcache.toml
# The store writer fills the shared remote with values signed by its key.
expect_exit 0 "$K" build p/kcache.toml --store writer --remote "file://$WORK/shared" --sign theirs.key --json
expect_exit 0 "$K" config set --user trust "$WORK/mine.pub"
expect_exit 0 "$K" config set --user remote "file://$WORK/shared"
printf 'kcache-config 1\ntrust = %s\njobs = 4096\n' "$WORK/theirs.pub" >"$KCACHE_STORE/config"
expect_exit 0 "$K" build p/kcache.toml --json --remote-read-only
[[ $(json_get out "j['counts']['compiled'], j['counts'].get('remote_hit', 0)") == "2 0" ]] ||
  fail "values signed by the store writer's key were taken: $(json_get out "j['counts']")"
# Each kernel's value is refused where it is filed by its recorded inputs
# (direct mode) and by its key, until max-failures (3) skips the remote.
[[ $(json_get out "j['remotes'][0]['refused']") -ge 2 ]] || fail "not refused: $(json_get out "j['remotes'][0]")"
expect_exit 0 "$K" config list
expect_in out "(refused) trust = $WORK/theirs.pub  # $KCACHE_STORE/config:2: a store may only narrow trust"
expect_in out "(user) trust = $WORK/mine.pub  # $WORK/config/kcache/config:"
expect_in out "(refused) jobs = 4096  # $KCACHE_STORE/config:3: a store may set at most 64"
expect_exit 0 "$K" config get jobs
[[ $(cat out) == "" ]] || fail "a store's jobs = 4096 applied: $(cat out)"
expect_in err "jobs is not set: the default applies (all cores)"
expect_exit 2 "$K" config set jobs 4096
expect_in err "a store may set at most 64"
# Nor can a store's own remote, through its URL's trust= (remote add --trust):
# that key is dropped while the user trusts another, and narrows that remote
# when the user trusts none.
expect_exit 0 "$K" remote add "file://$WORK/shared" --trust theirs.pub --store s2
expect_exit 0 "$K" build p/kcache.toml --store s2 --json --remote-read-only
[[ $(json_get out "j['counts']['compiled'], j['counts'].get('remote_hit', 0)") == "2 0" ]] ||
  fail "a store remote's trust= brought its writer's key in: $(json_get out "j['counts']")"
expect_in err "its trust="
expect_in err "a store may narrow trust, never widen it"
expect_exit 0 "$K" config unset --user trust
expect_exit 0 "$K" remote add "file://$WORK/shared" --trust theirs.pub --store s3
expect_exit 0 "$K" build p/kcache.toml --store s3 --json --remote-read-only
[[ $(json_get out "j['counts'].get('remote_hit', 0)") == 2 ]] || fail "a store remote's own trust= did not narrow it"
expect_exit 0 "$K" config set --user trust "$WORK/mine.pub"
# Narrowing to a key the user trusts applies.
printf 'kcache-config 1\ntrust = %s\n' "$WORK/mine.pub" >"$KCACHE_STORE/config"
expect_exit 0 "$K" config get --show-origin trust
[[ $(cat out) == "store $KCACHE_STORE/config:2"$'\t'"$WORK/mine.pub" ]] || fail "narrowed trust: $(cat out)"

note "config get of an unset key: the value in effect and its origin"
rm -f "$KCACHE_STORE/config"
expect_exit 0 "$K" config get namespace
[[ $(cat out) == "" ]] || fail "namespace: $(cat out)"
expect_in err "namespace is not set: the default applies (none)"
expect_exit 0 "$K" config get map_size --show-origin
[[ $(cat out) == "default"$'\t'"64G" ]] || fail "map_size: $(cat out)"
env -u KCACHE_STORE -u XDG_CACHE_HOME "$K" config get store >out 2>err || fail "config get store"
[[ $(cat out) == "$HOME/.cache/kcache" ]] || fail "default store: $(cat out)"

note "kcache_store_open(NULL) opens the store kcache build fills"
lib=$KCACHE_BUILD_DIR/lib/kcache/runtime
[[ -e $lib/libkcache.so ]] || fail "no libkcache.so in $lib (build the kcache_runtime_shared target)"
cat >capi.c <<'EOF'
#include <kcache/runtime/kcache.h>
#include <stdio.h>
/* capi NAME: looks NAME up in the default store; prints the status. */
int main(int argc, char** argv) {
  kcache_store* s = NULL;
  if (argc != 2) return 2;
  if (kcache_store_open(NULL, &s) != KCACHE_OK) { printf("open: %s\n", kcache_last_error()); return 1; }
  kcache_kernel* k = NULL;
  kcache_status st = kcache_lookup(s, argv[1], NULL, NULL, &k);
  printf("%s\n", kcache_status_name(st));
  kcache_kernel_free(k);
  kcache_store_close(s);
  return st == KCACHE_OK ? 0 : 1;
}
EOF
cc -I"$KCACHE_SOURCE_DIR/lib" capi.c -o capi -L"$lib" -lkcache -Wl,-rpath,"$lib" || fail "cannot build the C program"
printf '[[kernel]]\nname = "e"\nsource = "k.comp"\ndefines = { VALUE = 3 }\n' >p/env.toml
unset KCACHE_STORE
expect_exit 0 "$K" config set --user store "$WORK/ustore"
expect_exit 0 "$K" build p/kcache.toml --no-remote
[[ -f $WORK/ustore/data.mdb ]] || fail "kcache build did not fill the user's store"
expect_exit 0 ./capi a
expect_in out ok
KCACHE_STORE=$WORK/estore expect_exit 0 "$K" build p/env.toml --no-remote
KCACHE_STORE=$WORK/estore expect_exit 0 ./capi e
expect_exit 1 ./capi e  # not in the user's store
expect_in out not_found
# A damaged user file: the CLI and the library both refuse it.
printf 'kcache-config 1\nstore = \n' >"$WORK/config/kcache/config"
expect_exit 6 "$K" stats
expect_exit 1 ./capi a
expect_in out "open: settings $WORK/config/kcache/config:2"
rm "$WORK/config/kcache/config"
export KCACHE_STORE=$WORK/store

note "HOME inherited from another user: read-only commands warn once and use the defaults"
if [[ $(id -u) != 0 ]] || ! command -v setpriv >/dev/null; then
  note "skipped: needs root and setpriv to run as nobody"
  echo "config_trust_levels: ok"
  exit 0
fi
# A folder every user reaches, with a store and a kcache they can read.
pub=$(mktemp -d /tmp/kcache-levels-XXXXXX)
trap 'rm -rf "$pub"' EXIT
chmod 755 "$pub"
cp "$K" "$pub/kcache"
expect_exit 0 "$K" build p/kcache.toml --store "$pub/store" --no-remote
mkdir -p "$pub/private/.config/kcache"
printf 'kcache-config 1\njobs = 2\n' >"$pub/private/.config/kcache/config"
chmod 700 "$pub/private"
chmod -R a+rX "$pub/store"
as_nobody() { env -u XDG_CONFIG_HOME -u XDG_CACHE_HOME setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
HOME=$pub/private KCACHE_STORE=$pub/store as_nobody "$pub/kcache" config list >out 2>err ||
  { cat err; fail "config list failed with HOME unreachable"; }
expect_in err "kcache: warning: the user's settings: cannot reach $pub/private/.config/kcache (Permission denied)"
[[ $(grep -c warning err) == 1 ]] || fail "expected one warning: $(cat err)"
expect_in out "(default) jobs = # all cores"
HOME=$pub/private KCACHE_STORE=$pub/store as_nobody "$pub/kcache" --version >out 2>err || fail "--version: $(cat err)"
HOME=$pub/private KCACHE_STORE=$pub/store as_nobody "$pub/kcache" config get jobs >out 2>err || fail "config get: $(cat err)"
expect_in err "cannot reach"
# A settings file that is there but cannot be read is an error naming it.
chmod 755 "$pub/private" "$pub/private/.config" "$pub/private/.config/kcache"
chmod 600 "$pub/private/.config/kcache/config"
rc=0
HOME=$pub/private KCACHE_STORE=$pub/store as_nobody "$pub/kcache" config get jobs >out 2>err || rc=$?
[[ $rc == 4 ]] || { cat err; fail "an unreadable settings file: exit $rc, not 4"; }
expect_in err "cannot read $pub/private/.config/kcache/config: Permission denied"
echo "config_trust_levels: ok"
