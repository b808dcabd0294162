// The process-wide registry of open LMDB environments.
//
// One environment per directory per process. LMDB forbids opening an
// environment twice in one process (closing either copy's lock-file
// descriptor drops the other's fcntl locks), so a process-wide registry keyed
// by the directory's (st_dev, st_ino) and our pid shares one Env between every
// Store opened on it; the last Store to go closes it, under the registry's
// lock so no reopen can race the close. The pid is part of the key so a
// forked child opens its own environment instead of using the parent's.
#include "kcache/store/lmdb_env_internal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <map>
#include <mutex>

namespace kcache::store::internal {
namespace {

struct Registry {
  std::mutex mutex;
  std::condition_variable closed;
  std::map<EnvKey, std::weak_ptr<Env>> envs;

  // Never destroyed: a Store may be released during static destruction.
  static Registry& instance() {
    static auto* registry = new Registry;
    return *registry;
  }
};

// The shared_ptr deleter: closes the environment under the registry lock, so
// a concurrent open of the same directory waits until the close is complete.
void release_env(Env* env) {
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  registry.envs.erase(env->key());
  delete env;
  registry.closed.notify_all();
}

}  // namespace

Result<std::shared_ptr<Env>> acquire_env(const fs::path& dir, EnvKey key, const OpenOptions& options,
                                         const EnvConfig& config) {
  auto& registry = Registry::instance();
  std::unique_lock lock(registry.mutex);
  for (;;) {
    auto it = registry.envs.find(key);
    if (it == registry.envs.end()) break;
    if (auto env = it->second.lock()) return env;
    registry.closed.wait(lock);  // its last Store is closing it right now
  }
  // Opened under the lock: a second thread opening the same directory must
  // find this Env, not open another.
  auto env = KCACHE_TRY(open_env(dir, key, options, config));
  std::shared_ptr<Env> shared(env.release(), release_env);
  registry.envs.emplace(key, shared);
  return shared;
}

bool open_in_this_process(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return false;
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  auto it = registry.envs.find(EnvKey{st.st_dev, st.st_ino, ::getpid()});
  return it != registry.envs.end() && !it->second.expired();
}

}  // namespace kcache::store::internal
