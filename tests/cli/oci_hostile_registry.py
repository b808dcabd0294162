#!/usr/bin/env python3
"""A hostile OCI registry in front of a real one, for tests/cli/remote_oci_hostile.sh.

    oci_hostile_registry.py PORT_FILE UPSTREAM REPO TAG MODE

Reads the artifact REPO:TAG that `kcache push` wrote to the registry at
UPSTREAM (host:port, plain http), then serves it on a free 127.0.0.1 port
(written to PORT_FILE) as MODE says:

  long   the release head (the config) and the manifest declare the first
         layer 64 MiB longer than it is, with a valid head digest; its
         download sends the real section and 1 MiB of zeros, then nothing
         (a layer "bigger than the release would need", as a registry
         serving 1 GiB would start);
  slow   the artifact as it is, but a layer's download sends its first
         1 KiB and then nothing (for a SIGTERM mid-download).

A layer's connection is then held open for 120 s (the test kills the
server before). Logs each request ("GET /v2/...") to stdout.
"""
import hashlib
import http.client
import http.server
import json
import socketserver
import struct
import sys
import time

port_file, upstream, repo, tag, mode = sys.argv[1:6]
PAD = 64 << 20


def fetch(path, accept=None):
    c = http.client.HTTPConnection(upstream, timeout=10)
    c.request("GET", path, headers={"Accept": accept} if accept else {})
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit(f"upstream {path}: HTTP {r.status}")
    return body


manifest = json.loads(fetch(f"/v2/{repo}/manifests/{tag}", "application/vnd.oci.image.manifest.v1+json"))
config = fetch(f"/v2/{repo}/blobs/{manifest['config']['digest']}")
layers = {l["digest"]: fetch(f"/v2/{repo}/blobs/{l['digest']}") for l in manifest["layers"]}


def longer_first_section(head):
    """The release head (lib/kcache/bundle/FORMAT.md "Release bundles") with
    section 1's size grown by PAD and its BLAKE2b-256 head digest redone."""
    size = struct.unpack_from("<I", head, 8)[0]
    body = bytearray(head[12:12 + size])
    pos = 8 + 4  # created u64, section_count u32

    def skip_str(p):
        return p + 4 + struct.unpack_from("<I", body, p)[0]

    pos = skip_str(skip_str(pos))  # backend, fingerprint
    fields = struct.unpack_from("<I", body, pos)[0]
    pos += 4
    for _ in range(fields):
        pos = skip_str(skip_str(pos))
    pos += 4  # entry_count
    struct.pack_into("<Q", body, pos, struct.unpack_from("<Q", body, pos)[0] + PAD)
    out = head[:12] + bytes(body)
    return out + hashlib.blake2b(out, digest_size=32).digest()


if mode == "long":
    config = longer_first_section(config)
    manifest["config"]["digest"] = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest["config"]["size"] = len(config)
    manifest["layers"][0]["size"] += PAD
manifest_bytes = json.dumps(manifest).encode()
blobs = {manifest["config"]["digest"]: config}
first_layer = manifest["layers"][0]["digest"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", content_type=None):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def hold(self):
        self.wfile.flush()
        time.sleep(120)

    def do_GET(self):
        print(f"GET {self.path}", flush=True)
        if self.path == f"/v2/{repo}/manifests/{tag}":
            return self.reply(200, manifest_bytes, manifest["mediaType"])
        digest = self.path.rsplit("/", 1)[-1]
        if digest in blobs:
            return self.reply(200, blobs[digest])
        if digest not in layers:
            return self.reply(404)
        data = layers[digest]
        declared = len(data) + (PAD if mode == "long" and digest == first_layer else 0)
        self.send_response(200)
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        try:
            if mode == "long":
                self.wfile.write(data + bytes(1 << 20))
            else:
                self.wfile.write(data[:1024])
        except OSError:
            return
        self.hold()

    do_HEAD = do_GET


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
with open(port_file, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
