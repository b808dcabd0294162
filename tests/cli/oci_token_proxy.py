#!/usr/bin/env python3
"""A bearer-token front for a registry, for tests/cli/remote_oci.sh: the
token flow of the OCI distribution spec as registries behind a token
service speak it (Docker Hub, GHCR, Harbor).

    oci_token_proxy.py PORT_FILE REGISTRY_PORT USER PASSWORD

Listens on a free 127.0.0.1 port (written to PORT_FILE). /token answers
{"token": ...} when basic auth is USER:PASSWORD, with a token for the scope
asked. /v2/... is forwarded to the registry on REGISTRY_PORT when the
request carries "Authorization: Bearer <token>" whose scope covers the
action (pull for GET/HEAD, push for the rest); otherwise 401 with a Bearer
challenge naming the realm, service and scope, as registries do. Logs the
scopes it issued to stdout.
"""
import base64
import http.client
import http.server
import re
import sys
import urllib.parse

port_file, registry_port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
tokens = {}  # token -> set of actions


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if url.path == "/token":
            want = f"Basic {base64.b64encode(f'{user}:{password}'.encode()).decode()}"
            if self.headers.get("Authorization") != want:
                return self.reply(401)
            scope = urllib.parse.parse_qs(url.query).get("scope", [""])[0]
            token = f"t{len(tokens)}"
            tokens[token] = set(scope.rsplit(":", 1)[-1].split(","))
            print(f"issued {scope}", flush=True)
            return self.reply(200, f'{{"token": "{token}"}}'.encode(), [("Content-Type", "application/json")])
        m = re.match(r"^/v2/(.+?)/(blobs|manifests)/", url.path)
        action = "pull" if self.command in ("GET", "HEAD") else "push"
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        if m and (token not in tokens or action not in tokens[token]):
            scope = f"repository:{m.group(1)}:{'pull' if action == 'pull' else 'pull,push'}"
            realm = f"http://127.0.0.1:{self.server.server_port}/token"
            return self.reply(401, b"", [("WWW-Authenticate",
                                          f'Bearer realm="{realm}",service="test-registry",scope="{scope}"')])
        conn = http.client.HTTPConnection("127.0.0.1", registry_port)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("authorization",)}
        headers["Host"] = f"127.0.0.1:{self.server.server_port}"
        conn.request(self.command, self.path, body=body, headers=headers)
        answer = conn.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for k, v in answer.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file, "w") as f:
    f.write(str(server.server_port))
server.serve_forever()
