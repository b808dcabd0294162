// libcurl, loaded at run time (util::SharedLibrary) on the first HTTP
// request rather than linked: libcurl pulls in some thirty libraries (TLS,
// Kerberos, LDAP, SSH, ...) whose loading and relocation cost every kcache
// process about 3.5 ms at start, which is most of a warm no-op build's
// budget, while only remote HTTP caches and HTTP bundles use it. The header
// still gives the types and constants, so the code reads as libcurl's own.
#pragma once

#include "kcache/util/error.hpp"

#include <curl/curl.h>

namespace kcache::remote::internal {

/// The libcurl functions kcache calls, resolved from the loaded library.
struct Curl {
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_reset)(CURL*) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  curl_version_info_data* (*version_info)(CURLversion) = nullptr;
};

/// libcurl, loaded and initialised (curl_global_init) by the first call of
/// the process, from any thread; later calls return the same table or the
/// same error. The library stays loaded for the process's life.
/// not_found, naming what was tried, when no libcurl loads or one lacks a
/// function; io_error when curl_global_init fails.
Result<const Curl*> load_curl();

}  // namespace kcache::remote::internal
