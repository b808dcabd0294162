// The deployment file (lib/kcache/deploy/FORMAT.md): what encode writes reads
// back; every byte of a signed file is covered (one flipped byte anywhere is
// refused at open); a file re-digested after a record was made to point
// outside its section is refused by the structure check; keys, versions and
// truncation; and the golden file of version 1, byte for byte (set
// KCACHE_FIXTURE_OUT to a folder to write it again).
#include "kcache/deploy/deploy_file.hpp"

#include "kcache/util/file.hpp"
#include "test_support.hpp"

#include <sodium.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace kcache;
using namespace kcache::deploy;

namespace {

std::string why(const Result<std::shared_ptr<const DeployFile>>& r) { return r ? std::string() : r.error().message; }

// A module of 6 words: magic, version, generator, bound, schema, one word.
std::vector<std::uint8_t> module_bytes(std::uint8_t tag) {
  std::vector<std::uint32_t> words{0x07230203, 0x00010500, 0, 8, 0, tag};
  std::vector<std::uint8_t> out(words.size() * 4);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

// Fixed contents covering every kind of record and array.
Contents contents() {
  Contents c;
  c.device_class = "vulkan/1042e4770d085d4c";
  KernelRecord saxpy;
  saxpy.name = "saxpy[T=float]";
  saxpy.target = "vulkan1.2";
  saxpy.stage = "compute";
  saxpy.entry_point = "main";
  saxpy.key_id = "0123456789abcdef0123456789abcdef";
  saxpy.payload = module_bytes(1);
  saxpy.blob.assign(64, 0x5a);
  saxpy.has_interface = true;
  saxpy.bindings = {{0, 0, 7, 1}, {1, 2, 6, 4}};
  saxpy.push_constant_size = 16;
  saxpy.spec_entries = {{0, 0, 4}, {1, 4, 4}};
  saxpy.spec_data = {0x40, 0, 0, 0, 0xfd, 0xff, 0xff, 0xff};
  saxpy.id_fields = {{"source", "saxpy.comp"}, {"define:T", "float"}};
  KernelRecord other_target = saxpy;
  other_target.target = "vulkan1.3";
  other_target.blob.clear();
  other_target.payload = module_bytes(2);
  KernelRecord frag;
  frag.name = "blit";
  frag.target = "vulkan1.2";
  frag.stage = "fragment";
  frag.entry_point = "main";
  frag.key_id = "fedcba9876543210fedcba9876543210";
  frag.payload = module_bytes(3);
  KernelRecord ptx;
  ptx.name = "saxpy[T=float]";
  ptx.target = "compute_90";
  ptx.entry_point = "saxpy";
  ptx.key_id = "00000000000000000000000000000001";
  ptx.payload_kind = PayloadKind::ptx;
  const std::string text = ".version 8.0\n.target sm_90\n";
  ptx.payload.assign(text.begin(), text.end());
  KernelRecord cubin = ptx;
  cubin.target = "sm_90";
  cubin.payload_kind = PayloadKind::cubin;
  cubin.payload = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  c.kernels = {saxpy, other_target, frag, ptx, cubin};
  c.class_cache.assign(48, 0x3c);
  return c;
}

SigningKey key_from_seed(std::uint8_t seed_byte) {
  REQUIRE(sodium_init() >= 0);
  std::array<std::uint8_t, 32> seed{};
  seed.fill(seed_byte);
  SigningKey k;
  crypto_sign_seed_keypair(k.public_key.data(), k.secret.data(), seed.data());
  return k;
}

std::vector<std::uint8_t> encoded(const SigningKey* key) {
  auto bytes = encode(contents(), key);
  REQUIRE_MESSAGE(bytes.has_value(), bytes.error().message);
  return *bytes;
}

// The digest of FORMAT.md recomputed, for a file changed on purpose.
void redigest(std::vector<std::uint8_t>& bytes) {
  std::uint32_t leaf = 0;
  std::memcpy(&leaf, bytes.data() + 24, 4);
  const auto d = file_digest(bytes, leaf, 1);
  std::memcpy(bytes.data() + 96, d.data(), 32);
}

}  // namespace

TEST_CASE("a deployment file reads back what was encoded, in place and sorted") {
  auto file = DeployFile::from_bytes(encoded(nullptr), {});
  REQUIRE_MESSAGE(file.has_value(), why(file));
  const DeployFile& f = **file;
  CHECK(f.device_class() == "vulkan/1042e4770d085d4c");
  CHECK(std::vector<std::uint8_t>(f.class_cache().begin(), f.class_cache().end()) ==
        std::vector<std::uint8_t>(48, 0x3c));
  CHECK(!f.signer());
  REQUIRE(f.kernels().size() == 5);
  // Sorted by (name, target): "blit" first, then saxpy's four targets.
  CHECK(std::string(f.string(f.kernels()[0].name)) == "blit");
  auto saxpy = f.find("saxpy[T=float]");
  REQUIRE(saxpy.size() == 4);
  std::vector<std::string> targets;
  for (const auto& r : saxpy) targets.emplace_back(f.string(r.target));
  CHECK(targets == std::vector<std::string>{"compute_90", "sm_90", "vulkan1.2", "vulkan1.3"});
  const RawKernel& r = saxpy[2];
  CHECK(std::string(f.string(r.key_id)) == "0123456789abcdef0123456789abcdef");
  CHECK(std::vector<std::uint8_t>(f.at(r.payload_offset), f.at(r.payload_offset) + r.payload_size) == module_bytes(1));
  CHECK(r.blob_size == 64);
  CHECK(f.at(r.blob_offset)[63] == 0x5a);
  CHECK(r.flags == k_kernel_has_interface);
  REQUIRE(r.binding_count == 2);
  const auto* b = reinterpret_cast<const Binding*>(f.at(r.bindings_offset));
  CHECK(b[1] == Binding{1, 2, 6, 4});
  const auto* s = reinterpret_cast<const SpecEntry*>(f.at(r.spec_entries_offset));
  CHECK(s[1] == SpecEntry{1, 4, 4});
  CHECK(f.at(r.spec_data_offset)[4] == 0xfd);
  REQUIRE(r.id_field_count == 2);
  const auto* fields = reinterpret_cast<const std::uint32_t*>(f.at(r.id_fields_offset));
  CHECK(std::string(f.string(fields[2])) == "define:T");
  CHECK(std::string(f.string(fields[3])) == "float");
  // PTX is followed by a NUL the size does not count.
  const RawKernel& ptx = saxpy[0];
  CHECK(ptx.payload_kind == static_cast<std::uint32_t>(PayloadKind::ptx));
  CHECK(f.at(ptx.payload_offset)[ptx.payload_size] == 0);
  CHECK(f.find("nope").empty());
}

TEST_CASE("every byte of a signed deployment file is checked at open") {
  const SigningKey key = key_from_seed(7);
  const std::vector<std::uint8_t> good = encoded(&key);
  OpenOptions must_sign;
  must_sign.required_key = key.public_key;
  REQUIRE(DeployFile::from_bytes(good, must_sign).has_value());
  // One flipped bit at each offset: the head, the records, the strings, the
  // modules, the blob, the interfaces, the digest, the signer and the
  // signature: every one refused, none read past.
  std::size_t refused = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= 0x01;
    auto opened = DeployFile::from_bytes(std::move(bad), must_sign);
    if (!opened &&
        (opened.error().category == Category::corruption || opened.error().category == Category::version_mismatch))
      ++refused;
    else FAIL_CHECK("byte ", i, " flipped was ", opened ? "accepted" : opened.error().message);
  }
  CHECK(refused == good.size());
  // Without a required key, only the 32 reserved bytes after the
  // signature... are checked as zero: still every flip refused.
  auto unsigned_file = encoded(nullptr);
  for (std::size_t i :
       {std::size_t{0}, std::size_t{30}, std::size_t{200}, std::size_t{240}, unsigned_file.size() - 1}) {
    auto bad = unsigned_file;
    bad[i] ^= 0x80;
    CHECK_MESSAGE(!DeployFile::from_bytes(std::move(bad), {}), "byte ", i);
  }
}

TEST_CASE("a damaged file names what is wrong: damaged bytes, truncation, another version") {
  const auto good = encoded(nullptr);
  auto flipped = good;
  flipped[good.size() / 2] ^= 0xff;
  auto damaged = DeployFile::from_bytes(flipped, {});
  REQUIRE(!damaged);
  CHECK(damaged.error().category == Category::corruption);
  CHECK(damaged.error().message.find("digest does not match") != std::string::npos);
  auto truncated = DeployFile::from_bytes(std::vector<std::uint8_t>(good.begin(), good.end() - 1), {});
  REQUIRE(!truncated);
  CHECK(truncated.error().message.find("truncated or damaged") != std::string::npos);
  CHECK(!DeployFile::from_bytes({}, {}));
  CHECK(!DeployFile::from_bytes(std::vector<std::uint8_t>(4096, 0), {}));
  auto newer = good;
  newer[8] = 2;
  auto v2 = DeployFile::from_bytes(newer, {});
  REQUIRE(!v2);
  CHECK(v2.error().category == Category::version_mismatch);
}

TEST_CASE("a validly digested file whose records point outside their sections is refused, not read") {
  const auto good = encoded(nullptr);
  std::uint32_t count = 0;
  std::memcpy(&count, good.data() + 28, 4);
  auto patch64 = [&](std::size_t record, std::size_t field, std::uint64_t value, std::string_view expect) {
    auto bad = good;
    std::memcpy(bad.data() + k_head_size + record * sizeof(RawKernel) + field, &value, 8);
    redigest(bad);
    auto opened = DeployFile::from_bytes(std::move(bad), {});
    REQUIRE(!opened);
    CHECK(opened.error().category == Category::corruption);
    CHECK_MESSAGE(opened.error().message.find(expect) != std::string::npos, opened.error().message);
  };
  patch64(3, offsetof(RawKernel, payload_offset), good.size() - 8, "payload is out of bounds");
  patch64(3, offsetof(RawKernel, payload_size), std::uint64_t{1} << 40, "payload is out of bounds");
  patch64(3, offsetof(RawKernel, blob_offset), 3, "blob is out of bounds");
  patch64(3, offsetof(RawKernel, bindings_offset), good.size(), "bindings are out of bounds");
  patch64(3, offsetof(RawKernel, spec_data_offset), good.size() - 2, "specialization is out of bounds");
  patch64(3, offsetof(RawKernel, id_fields_offset), 1, "id fields are out of bounds");
  // A string offset past the strings section, and records out of order.
  auto bad = good;
  const std::uint32_t far = 1u << 30;
  std::memcpy(bad.data() + k_head_size, &far, 4);
  redigest(bad);
  CHECK(!DeployFile::from_bytes(bad, {}));
  bad = good;
  std::swap_ranges(bad.begin() + k_head_size, bad.begin() + k_head_size + sizeof(RawKernel),
                   bad.begin() + k_head_size + sizeof(RawKernel));
  redigest(bad);
  auto unsorted = DeployFile::from_bytes(bad, {});
  REQUIRE(!unsorted);
  CHECK(unsorted.error().message.find("not sorted") != std::string::npos);
  CHECK(count == 5);
  // The class cache's offset in the head, past the file.
  bad = good;
  const std::uint64_t past = good.size() - 16;
  std::memcpy(bad.data() + 80, &past, 8);
  redigest(bad);
  auto cache = DeployFile::from_bytes(bad, {});
  REQUIRE(!cache);
  CHECK(cache.error().message.find("class pipeline cache is out of bounds") != std::string::npos);
}

TEST_CASE("a required key refuses an unsigned file and another key's, and an altered signed head") {
  const SigningKey ours = key_from_seed(1), theirs = key_from_seed(2);
  OpenOptions must_sign;
  must_sign.required_key = ours.public_key;
  auto unsigned_file = DeployFile::from_bytes(encoded(nullptr), must_sign);
  REQUIRE(!unsigned_file);
  CHECK(unsigned_file.error().message.find("and is unsigned") != std::string::npos);
  auto other = DeployFile::from_bytes(encoded(&theirs), must_sign);
  REQUIRE(!other);
  CHECK(other.error().message.find("signed by the public key") != std::string::npos);
  auto signed_ok = DeployFile::from_bytes(encoded(&ours), must_sign);
  REQUIRE(signed_ok.has_value());
  CHECK((*signed_ok)->signer() == ours.public_key);
  // Re-digested after a change, the digest matches but the signature, over
  // the old digest, does not.
  auto forged = encoded(&ours);
  forged[forged.size() - 1] ^= 1;
  redigest(forged);
  auto bad_signature = DeployFile::from_bytes(forged, {});
  REQUIRE(!bad_signature);
  CHECK(bad_signature.error().message.find("signature does not verify") != std::string::npos);
}

TEST_CASE("encode refuses what a reader could not serve") {
  Contents twice = contents();
  twice.kernels.push_back(twice.kernels.front());
  CHECK(!encode(twice, nullptr));
  Contents bad_spec = contents();
  bad_spec.kernels[0].spec_entries.push_back({9, 6, 4});  // past the 8 bytes of data
  CHECK(!encode(bad_spec, nullptr));
  Contents not_spirv = contents();
  not_spirv.kernels[0].payload.resize(6);
  CHECK(!encode(not_spirv, nullptr));
  Contents nul = contents();
  nul.kernels[0].name += std::string(1, '\0');
  CHECK(!encode(nul, nullptr));
  Contents short_cache = contents();
  short_cache.class_cache.resize(8);
  CHECK(!encode(short_cache, nullptr));
  // Empty: a file of no kernels is valid and reads back empty.
  auto empty = encode(Contents{}, nullptr);
  REQUIRE(empty.has_value());
  auto opened = DeployFile::from_bytes(*empty, {});
  REQUIRE(opened.has_value());
  CHECK((*opened)->kernels().empty());
}

TEST_CASE("golden: the version 1 file, byte for byte") {
  const SigningKey key = key_from_seed(42);
  const auto bytes = encoded(&key);
  const std::filesystem::path golden = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/deploy/v1.kcdeploy";
  if (const char* out = std::getenv("KCACHE_FIXTURE_OUT")) {
    std::filesystem::create_directories(out);
    REQUIRE(util::write_file_atomic(std::filesystem::path(out) / "v1.kcdeploy", bytes).has_value());
  }
  auto stored = util::read_file(golden);
  REQUIRE_MESSAGE(stored.has_value(), stored.error().message);
  // What this kcache writes is the golden file exactly, and the golden file
  // opens under its key: a format change fails here first.
  CHECK(std::vector<std::uint8_t>(stored->begin(), stored->end()) == bytes);
  OpenOptions must_sign;
  must_sign.required_key = key.public_key;
  auto opened = DeployFile::from_bytes(std::vector<std::uint8_t>(stored->begin(), stored->end()), must_sign);
  REQUIRE_MESSAGE(opened.has_value(), why(opened));
  CHECK((*opened)->kernels().size() == 5);
}

TEST_CASE("a file on disk maps and opens; a folder or a missing file is refused") {
  test::TempDir dir;
  const auto bytes = encoded(nullptr);
  REQUIRE(util::write_file_atomic(dir.path() / "k.kcdeploy", bytes).has_value());
  auto opened = DeployFile::open(dir.path() / "k.kcdeploy", {});
  REQUIRE_MESSAGE(opened.has_value(), why(opened));
  CHECK((*opened)->bytes().size() == bytes.size());
  CHECK(DeployFile::open(dir.path() / "missing", {}).error().category == Category::not_found);
  CHECK(DeployFile::open(dir.path(), {}).error().category == Category::invalid_argument);
  // The digest on several threads is the digest on one.
  std::vector<std::uint8_t> big(9u << 20, 0x11);
  std::memcpy(big.data(), bytes.data(), k_head_size);
  CHECK(file_digest(big, k_leaf_size, 1) == file_digest(big, k_leaf_size, 4));
}
