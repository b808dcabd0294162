#!/usr/bin/env bash
# A store's own remotes (`kcache remote add | list | remove`, docs/design.md
# "Remote caches") on real redis-servers: a build with that store asks them
# without a flag; --remote beats KCACHE_REMOTE, which beats the store's
# setting; --no-remote turns all off; passwords are kept in the file (mode
# 0600, plain text, as --help says) and never shown; a damaged setting is
# refused naming the file and line.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
copy_example proj
# Three kernels are enough to tell which remote answered.
cat >proj/small.toml <<'TOML'
[defaults]
target = "vulkan1.2"
include_dirs = ["include"]
[[kernel]]
name = "saxpy"
source = "shaders/saxpy.comp"
[kernel.variants]
T = ["float", "int"]
WIDTH = [1]
[[kernel]]
name = "axpy4"
source = "shaders/saxpy.comp"
defines = { T = "float", WIDTH = 4 }
TOML
M=proj/small.toml
N=3
start_redis R
start_redis Q
# remote_name FILE: the URL of the first remote a build --json asked.
remote_name() { json_get "$1" "j['remotes'][0]['remote']"; }

note "runner A fills both remotes"
expect_exit 0 "$KCACHE" build $M --store A -j2 --remote "$R_URL" --remote "$Q_URL" --json
[[ $(outcome out compiled) == "$N" && $(redis R DBSIZE) == "$N" && $(redis Q DBSIZE) == "$N" ]] || fail "A did not fill both"

note "add, list, remove"
expect_exit 0 "$KCACHE" remote list --store S
expect_in out "no remotes of its own"
expect_exit 0 "$KCACHE" remote add "$R_URL" --store S
expect_in out "added remote $R_URL"
expect_exit 0 "$KCACHE" remote add "$Q_URL" --read-only --store S
expect_exit 0 "$KCACHE" remote list --store S --json
[[ $(json_get out "[r['url'] for r in j['remotes']]") == "['$R_URL', '$Q_URL?read-only']" ]] || fail "list: $(cat out)"
[[ $(json_get out "[r['read_only'] for r in j['remotes']]") == "[False, True]" ]] || fail "list read-only: $(cat out)"
head -1 S/remotes | grep -qx 'kcache-remotes 1' || fail "setting header: $(head -1 S/remotes)"
# Adding the same remote again replaces it in place (order kept).
expect_exit 0 "$KCACHE" remote add "$R_URL?timeout-ms=900" --store S
expect_in out "updated remote"
expect_exit 0 "$KCACHE" remote list --store S
[[ $(sed -n 1p out) == "$R_URL" && $(sed -n 2p out) == "$Q_URL?read-only  (read-only)" ]] || fail "list after update: $(cat out)"
grep -qx "$R_URL?timeout-ms=900" S/remotes || fail "the updated URL was not written as given"

note "a build with the store asks its remotes, in order, without a flag"
expect_exit 0 "$KCACHE" build $M --store S -j2 --json
[[ $(outcome out remote_hit) == "$N" && $(remote_name out) == "$R_URL" ]] || fail "store setting: $(outcome out remote_hit) remote hits from $(remote_name out)"
[[ $(json_get out "j['remotes'][1]['writable']") == False ]] || fail "the read-only remote is writable"

note "precedence: --remote > KCACHE_REMOTE > the store's; --no-remote: none"
for s in T1 T2 T3; do expect_exit 0 "$KCACHE" remote add "$R_URL" --store $s; done
KCACHE_REMOTE="$Q_URL" expect_exit 0 "$KCACHE" build $M --store T1 -j2 --json
[[ $(remote_name out) == "$Q_URL" && $(json_get out "len(j['remotes'])") == 1 && $(outcome out remote_hit) == "$N" ]] ||
  fail "KCACHE_REMOTE did not win over the store: $(json_get out "j['remotes']")"
KCACHE_REMOTE="$R_URL" expect_exit 0 "$KCACHE" build $M --store T2 -j2 --json --remote "$Q_URL"
[[ $(remote_name out) == "$Q_URL" && $(json_get out "len(j['remotes'])") == 1 ]] || fail "--remote did not win"
KCACHE_REMOTE="$R_URL" expect_exit 0 "$KCACHE" build $M --store T3 -j2 --json --no-remote
[[ $(json_get out "'remotes' in j") == False && $(outcome out compiled) == "$N" ]] || fail "--no-remote asked a remote"
expect_exit 2 "$KCACHE" build $M --store T3 --no-remote --remote "$R_URL"
expect_exit 2 "$KCACHE" build $M --store T3 --no-remote --trust x.pub
expect_in err "without --no-remote"

note "remove"
expect_exit 3 "$KCACHE" remote remove "redis://127.0.0.1:1/0" --store S
expect_in err "has no remote redis://127.0.0.1:1/0"
expect_exit 0 "$KCACHE" remote remove "$Q_URL" --store S
expect_in out "1 left"
expect_exit 0 "$KCACHE" remote remove "$R_URL" --store S
[[ ! -e S/remotes ]] || fail "an empty setting file was left"
expect_exit 0 "$KCACHE" build $M --store S -j2 --json
[[ $(json_get out "'remotes' in j") == False ]] || fail "removed remotes still asked"

note "passwords: kept in plain text (mode 0600), never shown"
expect_exit 0 "$KCACHE" remote add "redis://ci:hunter2@127.0.0.1:$R_PORT/0?max-failures=1" --store P
expect_in out "redis://ci:***@127.0.0.1:$R_PORT/0"
grep -q "hunter2" out && fail "add showed the password"
[[ $(stat -c %a P/remotes) == 600 ]] || fail "setting mode $(stat -c %a P/remotes)"
grep -q "ci:hunter2@" P/remotes || fail "the password was not kept"
expect_exit 0 "$KCACHE" remote list --store P
expect_in out "redis://ci:***@127.0.0.1:$R_PORT/0"
expect_exit 0 "$KCACHE" remote list --store P --json
grep -q "hunter2" out && fail "list --json showed the password"
# This Redis has no password: AUTH fails, a warning, the kernels compiled;
# the password is in no message.
expect_exit 0 "$KCACHE" build $M --store P -j2
grep -q "hunter2" out err && fail "build showed the password"
expect_in out "redis://ci:***@127.0.0.1:$R_PORT/0"
expect_exit 0 "$KCACHE" remote remove "redis://ci@127.0.0.1:$R_PORT/0" --store P
expect_exit 0 "$KCACHE" remote --help
expect_in out "plain text"
expect_exit 0 "$KCACHE" remote add --help
expect_in out "plain text"

note "trust is saved with the remote: remote add --trust, and KCACHE_REMOTE's trust="
# R and Q hold A's values, which nobody signed.
expect_exit 0 "$KCACHE" keygen -o ci
hex=$(sed -n 's/^public-key //p' ci.pub)
[[ ${#hex} == 64 ]] || fail "no public key in ci.pub"
expect_exit 0 "$KCACHE" remote add "$R_URL" --trust ci.pub --store U
grep -qx "$R_URL?trust=$hex" U/remotes || fail "trust not saved: $(cat U/remotes)"
expect_exit 0 "$KCACHE" remote list --store U
expect_in out "signed values only: 1 trusted key"
expect_exit 0 "$KCACHE" build $M --store U -j2 --json --remote-read-only
[[ $(json_get out "j['remotes'][0]['refused']") == "$N" && $(outcome out compiled) == "$N" ]] ||
  fail "a trusting remote served unsigned values: $(json_get out "j['remotes'][0]")"
[[ $(json_get out "j['remotes'][0]['authenticated']") == True ]] || fail "not reported as authenticated"
KCACHE_REMOTE="$R_URL?trust=$hex" expect_exit 0 "$KCACHE" build $M --store U2 -j2 --json --remote-read-only
[[ $(json_get out "j['remotes'][0]['refused']") == "$N" && $(outcome out compiled) == "$N" ]] ||
  fail "KCACHE_REMOTE's trust= was not applied: $(json_get out "j['remotes'][0]")"
# Signed values in an empty Q: a store trusting the key hits them.
redis Q FLUSHALL >/dev/null
expect_exit 0 "$KCACHE" build $M --store U4 -j2 --json --remote "$Q_URL?trust=$hex" --sign ci.key
# By key and by recorded inputs (direct mode): two writes a kernel.
[[ $(json_get out "j['remotes'][0]['writes']") == $((2 * N)) ]] || fail "signed values not written: $(json_get out "j['remotes'][0]")"
expect_exit 0 "$KCACHE" remote add "$Q_URL" --trust ci.pub --store U3
expect_exit 0 "$KCACHE" build $M --store U3 -j2 --json
[[ $(outcome out remote_hit) == "$N" ]] || fail "signed values were not served: $(json_get out "j['remotes'][0]")"
expect_exit 2 "$KCACHE" remote add "$R_URL?trust=abc" --store U
expect_in err "trust needs a public key"

note "a damaged setting is refused naming the file and line"
mkdir -p D
printf 'kcache-remotes 1\n%s\nredis://h:99999/0\n' "$R_URL" >D/remotes
expect_exit 6 "$KCACHE" build $M --store D
expect_in err "D/remotes:3"
expect_in err "the port must be a number"
expect_exit 6 "$KCACHE" remote list --store D
printf 'kcache-remotes 9\n' >D/remotes
expect_exit 6 "$KCACHE" build $M --store D
expect_in err "version 9 is newer"
# --no-remote does not read it: a build that asks no remote still works.
expect_exit 0 "$KCACHE" build $M --store D --no-remote
echo "ok"
