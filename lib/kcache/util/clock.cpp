#include "kcache/util/clock.hpp"

#include <chrono>

namespace kcache::util {
namespace {

class SystemClock final : public Clock {
 public:
  std::uint64_t now() const override {
    auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count());
  }
};

}  // namespace

const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace kcache::util
