#!/usr/bin/env python3
"""Test helper: one line per entry of a store namespace, for comparing with
bundles/golden/*.expected:  KERNEL ID IR CREATED SHA256-OF-MODULE

    bundle_golden_list.py KCACHE STORE NAMESPACE
"""
import hashlib
import json
import subprocess
import sys

kcache, store, ns = sys.argv[1:4]
j = json.loads(subprocess.run([kcache, "inspect", "--store", store, "--json"], check=True, capture_output=True).stdout)
for e in sorted((e for e in j["entries"] if e["namespace"] == ns), key=lambda e: e["kernel"]):
    detail = json.loads(subprocess.run([kcache, "inspect", e["kernel"], "--store", store, "--json"], check=True,
                                       capture_output=True).stdout)
    created = next(d["created"] for d in detail["entries"] if d["namespace"] == ns)
    module = subprocess.run([kcache, "get", e["kernel"], "--namespace", ns, "--store", store, "-o", "-"], check=True,
                            capture_output=True).stdout
    print(e["kernel"], e["id"], e["ir"], created, hashlib.sha256(module).hexdigest())
