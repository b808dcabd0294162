#include "kcache/remote/value.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/hash.hpp"
#include "test_bundle_support.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <zstd.h>

using namespace kcache;
using namespace kcache::remote;

namespace {

Entry sample() {
  Entry e;
  e.kernel = "k[T=f]";
  e.key = {util::hash_string("id"), util::hash_string("ir")};
  e.id_fields = {{"name", "k[T=f]"}};
  e.ir_fields = {{"glslang", "12.0.0"}};
  e.inputs = {{"k.comp", util::hash_string("src")}};
  e.payload = {3, 2, 35, 7, 0, 0, 1, 0};
  seal_payload(e);
  e.created = 1700000000;
  e.origin_detail = "test";
  return e;
}

bundle::KeyPair key(std::uint8_t b) {
  std::array<std::uint8_t, 32> seed{};
  seed.fill(b);
  return bundle::keypair_from_seed(seed);
}

}  // namespace

TEST_CASE("remote values round-trip, signed and unsigned") {
  auto record = encode_entry(sample());
  auto plain = encode_value("spirv/vulkan1.2", record);
  REQUIRE(plain);
  auto parts = decode_value(*plain);
  REQUIRE(parts);
  CHECK(parts->ns == "spirv/vulkan1.2");
  CHECK(std::vector<std::uint8_t>(parts->record.begin(), parts->record.end()) == record);
  CHECK_FALSE(parts->signature);
  auto signer = key(1);
  std::vector<bundle::PublicKey> trusted{signer.public_key};
  auto bad = verify_value(*parts, trusted);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("unsigned") != std::string::npos);

  auto signed_value = encode_value("spirv/vulkan1.2", record, &signer);
  REQUIRE(signed_value);
  auto sp = decode_value(*signed_value);
  REQUIRE(sp);
  REQUIRE(sp->signature);
  CHECK(verify_value(*sp, trusted));
  std::vector<bundle::PublicKey> others{key(2).public_key};
  auto untrusted = verify_value(*sp, others);
  REQUIRE_FALSE(untrusted);
  CHECK(untrusted.error().message.find("not trusted") != std::string::npos);
  // The signature covers the namespace: the same record claimed for another
  // namespace (and resealed) does not verify.
  ValueParts moved = *sp;
  moved.ns = "spirv/vulkan1.3";
  auto forged = verify_value(moved, trusted);
  REQUIRE_FALSE(forged);
  CHECK(forged.error().message.find("does not verify") != std::string::npos);
}

TEST_CASE("every truncation and every flipped bit of a value is refused") {
  auto signer = key(3);
  auto v = encode_value("spirv/vulkan1.2", encode_entry(sample()), &signer);
  REQUIRE(v);
  for (std::size_t n = 0; n < v->size(); ++n) CHECK_FALSE(decode_value(std::span(*v).first(n)));
  for (std::size_t bit = 0; bit < v->size() * 8; bit += 7) {
    auto copy = *v;
    copy[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    auto r = decode_value(copy);
    CHECK_FALSE(r);
  }
  auto longer = *v;
  longer.push_back(0);
  CHECK_FALSE(decode_value(longer));
}

TEST_CASE("a value of a newer version is a version mismatch") {
  auto v = *encode_value("spirv/vulkan1.2", encode_entry(sample()));
  v[4] = 3;
  auto digest = util::hash_bytes(std::span(v).first(v.size() - 16));
  std::memcpy(v.data() + v.size() - 16, digest.bytes.data(), 16);
  auto r = decode_value(v);
  REQUIRE_FALSE(r);
  CHECK(r.error().category == Category::version_mismatch);
}

TEST_CASE("value keys: prefix, namespace, both key halves") {
  Key k{util::hash_string("id"), util::hash_string("ir")};
  auto plain = value_key("", "spirv/vulkan1.2", k);
  CHECK(plain == "kcache1/spirv/vulkan1.2/" + k.id.hex() + "-" + k.ir.hex());
  CHECK(value_key("proj", "spirv/vulkan1.2", k) == "proj/" + plain);
  CHECK(value_key("proj/", "spirv/vulkan1.2", k) == "proj/" + plain);
}

// The golden file of value version 1 (lib/kcache/remote/FORMAT.md): a signed
// value of sample() under a fixed key. Regenerate only on purpose, with
// KCACHE_WRITE_GOLDEN=1, when a new version is added (old files stay).
TEST_CASE("golden: value version 1 decodes and is encoded byte for byte") {
  auto path = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/remote/value-v1-signed.kcv";
  auto signer = key(7);
  auto now = encode_value("spirv/vulkan1.2", encode_entry(sample()), &signer, 1);
  REQUIRE(now);
  if (const char* w = std::getenv("KCACHE_WRITE_GOLDEN"); w && std::string(w) == "1")
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(now->data()), static_cast<std::streamsize>(now->size()));
  auto golden = util::read_file(path);
  REQUIRE(golden);
  std::vector<std::uint8_t> bytes(golden->begin(), golden->end());
  auto parts = decode_value(bytes);
  REQUIRE(parts);
  CHECK(parts->version == 1);
  std::vector<bundle::PublicKey> trusted{signer.public_key};
  CHECK(verify_value(*parts, trusted));
  auto entry = decode_entry(parts->record);
  REQUIRE(entry);
  CHECK(entry->kernel == "k[T=f]");
  // The envelope has one encoding: the same parts give the same bytes (the
  // record inside may be an older entry version than encode_entry writes now).
  auto again = encode_value(parts->ns, parts->record, &signer, 1);
  REQUIRE(again);
  CHECK(bytes == *again);
}

namespace {

/// A record that compresses like a SPIR-V module's: sample() with a payload
/// of repeated instruction words.
std::vector<std::uint8_t> big_record() {
  Entry e = sample();
  e.payload.clear();
  for (std::uint32_t i = 0; i < 4000; ++i) {
    std::uint32_t w[3] = {0x00040015u, 6 + i % 7, 32};
    e.payload.insert(e.payload.end(), reinterpret_cast<std::uint8_t*>(w), reinterpret_cast<std::uint8_t*>(w) + 12);
  }
  seal_payload(e);
  return encode_entry(e);
}

/// A version-2 value with these fields, digest right (FORMAT.md).
std::vector<std::uint8_t> manual_v2(std::span<const std::uint8_t> field, std::uint8_t compression,
                                    std::uint32_t record_size) {
  util::ByteWriter w;
  w.raw(std::array<std::uint8_t, 4>{'K', 'C', 'V', 1});
  w.u16(2);
  w.str("spirv/vulkan1.2");
  w.blob(field);
  w.u8(0);
  w.u8(compression);
  w.u32(record_size);
  w.raw(util::hash_bytes(w.bytes()).bytes);
  return w.take();
}

std::vector<std::uint8_t> zstd_frame(std::span<const std::uint8_t> data) {
  std::vector<std::uint8_t> out(ZSTD_compressBound(data.size()));
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3));
  return out;
}

/// One zstd frame of `size` zero bytes, made 1 MiB at a time (a bomb: a few
/// KiB that decompress to `size`), its content size in the header.
std::vector<std::uint8_t> zstd_bomb(std::size_t size) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setPledgedSrcSize(c, size);
  std::vector<std::uint8_t> zeros(1u << 20), out, buf(ZSTD_CStreamOutSize());
  for (std::size_t done = 0; done < size;) {
    std::size_t n = std::min(zeros.size(), size - done);
    done += n;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    const auto mode = done == size ? ZSTD_e_end : ZSTD_e_continue;
    for (std::size_t left = 1; left != 0 && (in.pos < in.size || mode == ZSTD_e_end);) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      left = ZSTD_compressStream2(c, &o, &in, mode);
      REQUIRE_FALSE(ZSTD_isError(left));
      out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(o.pos));
      if (mode == ZSTD_e_continue) left = in.pos < in.size;
    }
  }
  ZSTD_freeCCtx(c);
  return out;
}

}  // namespace

TEST_CASE("version 2 compresses the record; version 1 values are still read") {
  auto record = big_record();
  auto v2 = encode_value("spirv/vulkan1.2", record);
  REQUIRE(v2);
  CHECK(v2->size() * 10 < record.size());  // repeated words: far smaller
  auto p2 = decode_value(*v2);
  REQUIRE(p2);
  CHECK(p2->version == 2);
  CHECK(p2->compression == ValueCompression::zstd);
  CHECK(p2->record == record);
  auto v1 = encode_value("spirv/vulkan1.2", record, nullptr, 1);
  REQUIRE(v1);
  CHECK(v1->size() > record.size());
  auto p1 = decode_value(*v1);
  REQUIRE(p1);
  CHECK(p1->version == 1);
  CHECK(p1->record == record);
  // A record zstd cannot shrink is kept as it is.
  std::vector<std::uint8_t> tiny{1, 2, 3};
  auto small = decode_value(*encode_value("spirv/vulkan1.2", tiny));
  REQUIRE(small);
  CHECK(small->compression == ValueCompression::none);
  CHECK(small->record == tiny);
  CHECK_FALSE(encode_value("spirv/vulkan1.2", tiny, nullptr, 3));
}

TEST_CASE("a signature covers the decompressed record, whatever the frame") {
  auto signer = key(4);
  std::vector<bundle::PublicKey> trusted{signer.public_key};
  auto record = big_record();
  auto v = decode_value(*encode_value("spirv/vulkan1.2", record, &signer));
  REQUIRE(v);
  CHECK(verify_value(*v, trusted));
  // The same signature over another record does not verify.
  ValueParts changed = *v;
  changed.record.back() ^= 1;
  CHECK_FALSE(verify_value(changed, trusted));
  // Nor does a version-1 signature passed off as version 2's.
  ValueParts older = *v;
  older.version = 1;
  CHECK_FALSE(verify_value(older, trusted));
}

TEST_CASE("compressed records are bounded before anything is allocated: bombs are refused") {
  auto record = big_record();
  auto frame = zstd_frame(record);
  const auto size = static_cast<std::uint32_t>(record.size());
  REQUIRE(decode_value(manual_v2(frame, 1, size)));
  auto refused = [](const std::vector<std::uint8_t>& v, std::string_view why) {
    auto r = decode_value(v);
    REQUIRE_FALSE(r);
    CHECK(r.error().category == Category::corruption);
    INFO(r.error().message);
    CHECK(r.error().message.find(why) != std::string::npos);
  };
  // A 1 GiB run of zeros is a few KiB of zstd: its declared size is refused.
  auto bomb = zstd_bomb(std::size_t{1} << 30);
  REQUIRE(bomb.size() < 100000);
  REQUIRE(ZSTD_getFrameContentSize(bomb.data(), bomb.size()) == std::size_t{1} << 30);
  refused(manual_v2(bomb, 1, std::uint32_t{1} << 30), "over the limit");
  // The frame says 1 GiB, the value claims less: refused before decompressing.
  refused(manual_v2(bomb, 1, size), "does not declare");
  refused(manual_v2(frame, 1, size - 1), "does not declare");
  refused(manual_v2(frame, 1, size + 1), "does not declare");
  // Two frames, trailing bytes after the frame, an unknown method, a raw
  // record whose size is not the declared one.
  auto two = frame;
  two.insert(two.end(), frame.begin(), frame.end());
  refused(manual_v2(two, 1, size), "not exactly one zstd frame");
  auto trailing = frame;
  trailing.push_back(0);
  refused(manual_v2(trailing, 1, size), "not exactly one zstd frame");
  refused(manual_v2(frame, 2, size), "unknown compression 2");
  refused(manual_v2(record, 0, size + 1), "declares a record of");
  // A damaged frame (resealed, so the value's digest passes) either does not
  // decompress or gives a record whose own digests refuse it (decode_entry):
  // the record is what is trusted, never the frame.
  for (std::size_t at = 0; at < frame.size(); at += 3) {
    auto damaged = frame;
    damaged[at] ^= 0x55;
    auto r = decode_value(manual_v2(damaged, 1, size));
    if (r) CHECK_FALSE(decode_entry(r->record));
  }
}

TEST_CASE("a bomb inside the size limit is refused by its ratio, before anything is allocated") {
  // 256 MiB of zeros, truthfully declared, in a few KiB: within
  // k_max_value_bytes, so only the ratio of declared to compressed bytes
  // tells it from a record (the 8.7 KB value cost 830 MB).
  const std::size_t size = std::size_t{256} << 20;
  auto bomb = zstd_bomb(size);
  REQUIRE(bomb.size() < 64 * 1024);
  auto value = manual_v2(bomb, 1, static_cast<std::uint32_t>(size));
  const auto base = test::begin_peak_measure();
  auto r = decode_value(value);
  const auto grew_kib = test::peak_growth_kib(base);
  REQUIRE_FALSE(r);
  CHECK(r.error().category == Category::corruption);
  CHECK(r.error().message.find("more than") != std::string::npos);
  if (base != 0) CHECK(grew_kib < 8 * 1024);
  // The writer never makes such a value: a record that compresses past the
  // ratio is kept as it is.
  std::vector<std::uint8_t> zeros(std::size_t{8} << 20, 0);
  auto written = encode_value("spirv/vulkan1.2", zeros);
  REQUIRE(written);
  auto back = decode_value(*written);
  REQUIRE(back);
  CHECK(back->compression == ValueCompression::none);
  CHECK(back->record == zeros);
}

TEST_CASE("decompression stops at the caller's allowed size, whatever the value declares") {
  auto record = big_record();
  auto value = encode_value("spirv/vulkan1.2", record);
  REQUIRE(value);
  REQUIRE(decode_value(*value, record.size()));
  auto r = decode_value(*value, record.size() - 1);
  REQUIRE_FALSE(r);
  CHECK(r.error().category == Category::corruption);
  CHECK(r.error().message.find("over the limit of " + std::to_string(record.size() - 1)) != std::string::npos);
  // Uncompressed records are held to it too.
  auto v1 = encode_value("spirv/vulkan1.2", record, nullptr, 1);
  CHECK_FALSE(decode_value(*v1, record.size() - 1));
}

// The golden file of value version 2 (lib/kcache/remote/FORMAT.md): a signed,
// zstd-compressed value of big_record(). Regenerate only on purpose, with
// KCACHE_WRITE_GOLDEN=1. Not compared byte for byte with a new encoding:
// another zstd release may pick other matches; the content must be the same.
TEST_CASE("golden: value version 2 decodes, verifies and holds the record") {
  auto path = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/remote/value-v2-signed-zstd.kcv";
  auto signer = key(7);
  auto record = big_record();
  if (const char* w = std::getenv("KCACHE_WRITE_GOLDEN"); w && std::string(w) == "1") {
    auto now = encode_value("spirv/vulkan1.2", record, &signer);
    REQUIRE(now);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(now->data()), static_cast<std::streamsize>(now->size()));
  }
  auto golden = util::read_file(path);
  REQUIRE(golden);
  std::vector<std::uint8_t> bytes(golden->begin(), golden->end());
  auto parts = decode_value(bytes);
  REQUIRE(parts);
  CHECK(parts->version == 2);
  CHECK(parts->compression == ValueCompression::zstd);
  CHECK(parts->record == record);
  CHECK(bytes.size() * 10 < record.size());
  std::vector<bundle::PublicKey> trusted{signer.public_key};
  CHECK(verify_value(*parts, trusted));
  auto entry = decode_entry(parts->record);
  REQUIRE(entry);
  CHECK(entry->kernel == "k[T=f]");
}
