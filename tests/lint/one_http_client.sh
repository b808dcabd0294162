#!/usr/bin/env bash
# One libcurl configuration in the tree (issue 40): every HTTP request goes
# through remote's one HTTP client, so exactly one source file sets libcurl
# options (curl_easy_setopt, called through the loaded table as
# easy_setopt): lib/kcache/remote/http_client.cpp. A second file that does
# would bring back a second policy (deadlines, stall rule, bounds,
# protocols, redirects, credentials).
set -euo pipefail
root=${1:?usage: one_http_client.sh SOURCE_DIR}
cd "$root"
mapfile -t files < <(grep -rlE 'curl_easy_setopt|easy_setopt' lib tools tests \
  --include='*.cpp' --include='*.hpp' --include='*.c' --include='*.h' | sort)
if [[ ${#files[@]} -ne 1 || ${files[0]} != lib/kcache/remote/http_client.cpp ]]; then
  echo "FAIL (lint.one_http_client): libcurl options are set in ${#files[@]} files, not only" \
    "lib/kcache/remote/http_client.cpp:" >&2
  printf '  %s\n' "${files[@]}" >&2
  exit 1
fi
echo "one HTTP client: ${files[0]}"
