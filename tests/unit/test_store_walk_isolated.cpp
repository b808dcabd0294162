// store::walk_isolated: a walk that crashes as a damaged LMDB page makes it
// crash (SIGSEGV, SIGBUS, SIGABRT) is a corruption error naming the store,
// not a dead caller; its status comes back; another signal is 128 + it.
#include "kcache/store/walk_isolated.hpp"

#include "test_support.hpp"

#include <csignal>

using namespace kcache;

TEST_CASE("walk_isolated: a crash in the walk is the store's corruption, not the caller's death") {
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) {
    CAPTURE(sig);
    auto crashed = store::walk_isolated("/some/store", [sig] {
      std::signal(sig, SIG_DFL);
      std::raise(sig);
      return 0;
    });
    REQUIRE(!crashed);
    CHECK(crashed.error().category == Category::corruption);
    CHECK(crashed.error().message.find("store /some/store is damaged: reading it crashed") != std::string::npos);
  }
  CHECK(store::walk_isolated("/s", [] { return 0; }) == 0);
  CHECK(store::walk_isolated("/s", [] { return 6; }) == 6);
  auto killed = store::walk_isolated("/s", [] {
    std::signal(SIGTERM, SIG_DFL);
    std::raise(SIGTERM);
    return 0;
  });
  REQUIRE(killed.has_value());
  CHECK(*killed == 128 + SIGTERM);
}
