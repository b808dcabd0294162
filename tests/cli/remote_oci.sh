#!/usr/bin/env bash
# OCI registries (lib/kcache/remote/OCI.md) against the real CNCF
# distribution registry (Debian's docker-registry) on 127.0.0.1: the
# example built for the lavapipe device ships as one release, pushed as an
# artifact (checked by skopeo, an independent client), imported into an
# empty store by reference, and verify finds every entry good. A second push
# sends no blob again; a changed namespace sends only its layer. A pinned
# digest pulls the same file; a blob altered in the registry's storage is
# refused. With htpasswd auth: refused without credentials, accepted with
# docker's config.json, a wrong password refused, and no output ever shows
# the password. A registry that never answers is cut at --timeout-ms.
# Behind a bearer token service (oci_token_proxy.py): the
# token is asked with the credentials, for pull and then push scope.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/servers.bash"
command -v skopeo >/dev/null || fail "skopeo is not installed (scripts/setup installs it)"
command -v htpasswd >/dev/null || fail "htpasswd is not installed (scripts/setup installs apache2-utils)"
copy_example proj
expect_exit 0 "$KCACHE" devices --json
fp=$(json_get out '[d["fingerprint"] for d in j["devices"] if "llvmpipe" in d["name"]][0]')
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe -j 2 --store built
expect_exit 0 "$KCACHE" export --store built --for-device "$fp" -o release.kcb
start_registry reg
ref="oci://$reg_HOST/kcache/example:$fp"

note "push: config + one layer per namespace; skopeo reads kcache's artifact back"
expect_exit 0 "$KCACHE" push release.kcb "$ref" --json
[[ $(json_get out 'j["layers"], j["uploaded"], j["present"]') == "4 5 0" ]] || fail "push: $(cat out)"
digest=$(json_get out 'j["manifest_digest"]')
skopeo inspect --raw --tls-verify=false "docker://$reg_HOST/kcache/example:$fp" >manifest.json
[[ $(json_get manifest.json 'j["artifactType"], j["config"]["mediaType"], len(j["layers"])') == \
   "application/vnd.kcache.release.v1 application/vnd.kcache.release.head.v4 4" ]] || fail "manifest: $(cat manifest.json)"
[[ $(json_get manifest.json '[l["annotations"]["dev.kcache.namespace"] for l in j["layers"]]') == \
   "['spirv/vulkan1.1', 'spirv/vulkan1.2', 'spirv/vulkan1.3', 'vulkan/$fp']" ]] || fail "layers: $(cat manifest.json)"
[[ $(json_get manifest.json 'j["annotations"]["dev.kcache.fingerprint"]') == "vulkan/$fp" ]] \
  || fail "fingerprint annotation: $(cat manifest.json)"
[[ sha256:$(sha256sum <manifest.json | cut -d' ' -f1) == "$digest" ]] || fail "the manifest's digest is not $digest"

note "push again: every blob is there already (HEAD), none sent"
expect_exit 0 "$KCACHE" push release.kcb "$ref" --json
[[ $(json_get out 'j["uploaded"], j["present"], j["bytes_sent"]') == "0 5 0" ]] || fail "second push: $(cat out)"

note "import by reference into an empty store: all of it; verify finds every entry good"
export KCACHE_STORE="$WORK/fleet"
expect_exit 0 "$KCACHE" import "$ref" --device llvmpipe --json
[[ $(json_get out 'j["counts"]["imported"], j["counts"]["refused"], j["bundle"]') == "152 0 $ref" ]] \
  || fail "import: $(head -c 400 out)"
expect_exit 0 "$KCACHE" verify --json
[[ $(json_get out 'j["entries"], len(j["problems"])') == "152 0" ]] || fail "verify: $(head -c 400 out)"

note "pull by digest: the same file"
expect_exit 0 "$KCACHE" pull "oci://$reg_HOST/kcache/example@$digest" -o pulled.kcb
cmp pulled.kcb release.kcb || fail "the pulled release differs from the pushed one"

note "the next release, one kernel changed: only the changed namespaces' layers are sent"
echo 'const uint kc_changed = 1u;' >>proj/shaders/saxpy.comp
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe -j 2 --store built
expect_exit 0 "$KCACHE" export --store built --for-device "$fp" -o next.kcb
expect_exit 0 "$KCACHE" push next.kcb "oci://$reg_HOST/kcache/example:next" --json
# The config (a new release head) and spirv/vulkan1.2 (saxpy's new records)
# are new; spirv/vulkan1.1 and 1.3 (no saxpy there) and the pipelines (the
# optimised module is the same, so is each pipeline's key) are the
# registry's already.
[[ $(json_get out 'j["uploaded"], j["present"]') == "2 3" ]] || fail "next release: $(cat out)"
expect_exit 0 "$KCACHE" push next.kcb "oci://$reg_HOST/other/repo:x" --json
[[ $(json_get out 'j["uploaded"]') == 5 ]] || fail "another repository: $(cat out)"

note "a blob altered in the registry's storage is refused by its digest; nothing written"
layer=$(json_get manifest.json 'j["layers"][1]["digest"].split(":")[1]')
data=$(find "$reg_ROOT" -path "*/blobs/sha256/${layer:0:2}/$layer/data")
printf 'X' | dd of="$data" bs=1 seek=100 conv=notrunc status=none
expect_exit 6 "$KCACHE" pull "$ref" -o bad.kcb
expect_in err "layer 2 (spirv/vulkan1.2) does not match its digest"
[[ ! -e bad.kcb ]] || fail "a refused pull left a file"
expect_exit 6 "$KCACHE" import "$ref" --store "$WORK/other-store"
[[ ! -e $WORK/other-store ]] || fail "a refused import left a store"

note "a registry that accepts and never answers: the whole pull ends at --timeout-ms"
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
conns = []
while True:
    conns.append(s.accept())' >stall.port &
SERVER_PIDS+=($!)
for _ in $(seq 200); do [[ -s stall.port ]] && break; sleep 0.05; done
start=$(date +%s%N)
expect_exit 4 "$KCACHE" pull "oci://127.0.0.1:$(cat stall.port)/kcache/x:y" -o stalled.kcb --timeout-ms 700
ms=$((($(date +%s%N) - start) / 1000000))
expect_in err "timed out after 700 ms"
((ms < 5000)) || fail "the stalled pull took $ms ms"
[[ ! -e stalled.kcb ]] || fail "a stalled pull left a file"

note "references: a bad one is refused before any request"
expect_exit 2 "$KCACHE" pull "oci://$reg_HOST/Bad_Repo:x" -o x.kcb
expect_in err "a repository is lowercase"
expect_exit 3 "$KCACHE" pull "oci://$reg_HOST/kcache/none:x" -o x.kcb

note "htpasswd auth: no credentials refused; docker's config.json accepted; a wrong password refused"
htpasswd -Bbc htpasswd fleet 'p4ss:w0rd-s3cret' 2>/dev/null
start_registry auth "$WORK/htpasswd"
aref="oci://$auth_HOST/kcache/example:$fp"
export DOCKER_CONFIG="$WORK/docker"
mkdir -p "$DOCKER_CONFIG"
expect_exit 4 "$KCACHE" push release.kcb "$aref"
expect_in err "credentials are needed"
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$auth_HOST" "$(printf '%s' 'fleet:p4ss:w0rd-s3cret' | base64 -w0)" \
  >"$DOCKER_CONFIG/config.json"
expect_exit 0 "$KCACHE" push release.kcb "$aref"
expect_exit 0 "$KCACHE" pull "$aref" -o authed.kcb
cmp authed.kcb release.kcb || fail "pulled with auth, the release differs"
skopeo inspect --raw --tls-verify=false --creds 'fleet:p4ss:w0rd-s3cret' "docker://$auth_HOST/kcache/example:$fp" \
  | grep -q application/vnd.kcache.release.v1 || fail "skopeo cannot read the authenticated push"
printf '{"auths": {"%s": {"username": "fleet", "password": "wrong-s3cret"}}}\n' "$auth_HOST" >"$DOCKER_CONFIG/config.json"
expect_exit 4 "$KCACHE" pull "$aref" -o x.kcb
expect_in err "the credentials were refused"
if grep -rq 's3cret' out err; then fail "a password was printed"; fi

note "bearer tokens: the challenge's realm asked with the credentials, pull then push scope"
start_registry tok  # a clean one: a blob of reg was altered above
python3 "$KCACHE_SOURCE_DIR/tests/cli/oci_token_proxy.py" token.port "$tok_PORT" fleet 'p4ss:w0rd-s3cret' >token.log &
SERVER_PIDS+=($!)
for _ in $(seq 200); do [[ -s token.port ]] && break; sleep 0.05; done
tref="oci://127.0.0.1:$(cat token.port)/kcache/token:$fp"
printf '{"auths": {"127.0.0.1:%s": {"auth": "%s"}}}\n' "$(cat token.port)" \
  "$(printf '%s' 'fleet:p4ss:w0rd-s3cret' | base64 -w0)" >"$DOCKER_CONFIG/config.json"
expect_exit 0 "$KCACHE" push release.kcb "$tref"
expect_in token.log "issued repository:kcache/token:pull"
expect_in token.log "issued repository:kcache/token:pull,push"
expect_exit 0 "$KCACHE" pull "$tref" -o token.kcb
cmp token.kcb release.kcb || fail "pulled through the token service, the release differs"
rm "$DOCKER_CONFIG/config.json"
expect_exit 4 "$KCACHE" pull "$tref" -o x.kcb
expect_in err "the token service answered HTTP 401"
if grep -rq 's3cret' out err; then fail "a password was printed"; fi
