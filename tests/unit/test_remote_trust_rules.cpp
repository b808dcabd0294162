// The rules issue 40 shares between the remote tier and bundle import, held
// together here while each module states its own: the origin a fetched
// value is stored with is the one `export --sign` recognises as a remote's
// (transfer::is_remote_origin), and the clock skew a remote value and a
// bundle entry may have is one figure (core k_max_future_seconds).
#include "kcache/engine/stage.hpp"
#include "kcache/remote/tier.hpp"
#include "kcache/remote/value.hpp"
#include "kcache/transfer/transfer.hpp"

#include "test_support.hpp"

#include <filesystem>

using namespace kcache;
namespace fs = std::filesystem;

TEST_CASE("a value fetched from a remote is stored with an origin export --sign recognises") {
  auto reader = bundle::BundleReader::open_file(fs::path(KCACHE_SOURCE_DIR) / "bundles/golden/example-v1.kcb");
  REQUIRE_MESSAGE(reader.has_value(), reader.error().message);
  auto e = reader->next();
  REQUIRE(e.has_value());
  REQUIRE(e->has_value());
  const Entry& entry = **e;
  CHECK_FALSE(transfer::is_remote_origin(entry));
  const Namespace ns = spirv_namespace("vulkan1.2");
  auto value = remote::encode_value(ns.name(), encode_entry(entry));
  REQUIRE(value.has_value());
  auto fetched = remote::RemoteTier::check_value(*value, ns, entry.kernel, entry.key, {}, "redis://cache:6379");
  REQUIRE_MESSAGE(fetched.has_value(), fetched.error().message);
  CHECK(transfer::is_remote_origin(*fetched));
  fetched->origin_kind = OriginKind::confirmed;  // what a build that confirms its key stores
  CHECK(transfer::is_remote_origin(*fetched));
}

TEST_CASE("remote values and bundle entries allow one clock skew") {
  CHECK(engine::k_remote_clock_skew_seconds == k_max_future_seconds);
}
