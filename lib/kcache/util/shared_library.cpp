#include "kcache/util/shared_library.hpp"

#include <dlfcn.h>

#include <mutex>

namespace kcache::util {
namespace {
// dlerror()'s text is per thread in glibc but not required to be so by
// POSIX; one lock keeps open() and its message together everywhere.
std::mutex g_dl_mutex;
}  // namespace

Result<SharedLibrary> SharedLibrary::open(const std::string& name, Lifetime lifetime) {
  std::lock_guard lock(g_dl_mutex);
  dlerror();
  int flags = RTLD_NOW | RTLD_LOCAL | (lifetime == Lifetime::process ? RTLD_NODELETE : 0);
  void* handle = dlopen(name.c_str(), flags);
  if (!handle) {
    const char* why = dlerror();
    return fail(Category::not_found, "{}", why ? why : name + ": cannot be loaded");
  }
  SharedLibrary lib;
  lib.m_handle = handle;
  lib.m_name = name;
  return lib;
}

SharedLibrary::~SharedLibrary() {
  if (m_handle) dlclose(m_handle);
}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& o) noexcept {
  if (this != &o) {
    if (m_handle) dlclose(m_handle);
    m_handle = o.m_handle;
    m_name = std::move(o.m_name);
    o.m_handle = nullptr;
  }
  return *this;
}

void* SharedLibrary::address_of(const char* symbol) const { return m_handle ? dlsym(m_handle, symbol) : nullptr; }

}  // namespace kcache::util
