// Reflection of compute modules into pipeline layouts and specialization maps
// (internal to the device module, tested through its internal header).
#include "kcache/device/reflect.hpp"

#include "kcache/device/limits.hpp"

#include "test_support.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

using namespace kcache;
using namespace kcache::device;
using kcache::device::detail::reflect_module;

namespace {

std::vector<std::uint32_t> compile(const test::TempDir& dir, const std::string& name, const char* source,
                                   const char* target = "vulkan1.2") {
  auto src = dir.write(name, source);
  auto spv = dir.path() / (name + ".spv");
  std::string cmd = std::string("glslangValidator -V --target-env ") + target + " -o '" + spv.string() + "' '" +
                    src.string() + "' > '" + spv.string() + ".log' 2>&1";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "glslangValidator failed, see ", spv.string(), ".log");
  std::ifstream in(spv, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

constexpr const char* k_layout = R"(#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8, local_size_y = 4) in;
layout(local_size_z_id = 7) in;
layout(constant_id = 1) const uint COUNT = 3;
layout(constant_id = 2) const bool FLAG = true;
layout(constant_id = 3) const int16_t SMALL = int16_t(-2);
layout(constant_id = 4) const uint64_t BIG = 1ul;
layout(constant_id = 5) const float RATIO = 0.5;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 3) readonly buffer B { float b[]; };
layout(set = 1, binding = 1) uniform U { vec4 u; };
layout(set = 3, binding = 0) uniform texture2D images[COUNT];
layout(set = 3, binding = 1) uniform sampler samp;
layout(set = 3, binding = 2) uniform samplerBuffer texels;
layout(set = 3, binding = 3, r32f) uniform imageBuffer storage_texels;
layout(set = 3, binding = 4, rgba8) uniform image2D storage_image;
layout(set = 3, binding = 5) uniform sampler2D combined[2][3];
layout(push_constant) uniform P { uint n; vec2 scale; } pc;   // 4 + pad 4 + 8 = 16 bytes
void main() {
  uint i = gl_GlobalInvocationID.x;
  vec4 x = texture(sampler2D(images[i % COUNT], samp), vec2(0)) + texelFetch(texels, 0) + imageLoad(storage_texels, 0)
         + imageLoad(storage_image, ivec2(0)) + texture(combined[1][2], vec2(0));
  a[i] = b[i] * u.x * pc.scale.x + float(pc.n) + x.x + float(FLAG) + float(SMALL) + float(BIG) + RATIO;
}
)";

// A library-style kernel (issue 28): the workgroup's x is spec constant 0
// through local_size_x_id, which glslang declares with its own default of 1,
// beside BLOCK, also SpecId 0, default 256; shared arrays sized by spec
// constants, subgroup operations, 16-bit storage, push constants, two sets.
constexpr const char* k_library_kernel = R"(#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint BLOCK = 256;
layout(constant_id = 1) const uint TILE = 64;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float16_t w[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float y[]; };
layout(set = 1, binding = 0) uniform P { uint n; } p;
layout(push_constant) uniform PC { uint ne00; uint ne01; uint s0; uint s1; float scale; } pc;
shared float tile[TILE];
shared float partial[BLOCK];
void main() {
  uint i = gl_GlobalInvocationID.x;
  float v = i < pc.ne00 ? x[i] * float(w[i % TILE]) : 0.0;
  v = subgroupAdd(v);
  if (gl_LocalInvocationID.x < TILE) tile[gl_LocalInvocationID.x] = v;
  partial[gl_LocalInvocationID.x] = v;
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    float s = 0;
    for (uint k = 0; k < BLOCK; ++k) s += partial[k];
    y[gl_WorkGroupID.x] = s * pc.scale + tile[0] + float(p.n);
  }
}
)";

std::uint32_t spec_u32(const kcache::device::detail::ModuleInterface& m, std::size_t i) {
  std::uint32_t v = 0;
  REQUIRE(m.spec_entries[i].size == 4);
  std::memcpy(&v, m.spec_data.data() + m.spec_entries[i].offset, 4);
  return v;
}

}  // namespace

TEST_CASE("device: a workgroup size left at its spec constant's default is the source's, stated explicitly") {
  test::TempDir dir;
  // vulkan1.2: the WorkgroupSize built-in; vulkan1.3 (SPIR-V 1.6): LocalSizeId.
  for (const char* target : {"vulkan1.2", "vulkan1.3"}) {
    CAPTURE(target);
    auto spirv = compile(dir, std::string("conv_") + target + ".comp", k_library_kernel, target);
    auto r = reflect_module(spirv, "main", {});
    REQUIRE_MESSAGE(r.has_value(), (r ? std::string() : r.error().message));
    CHECK(r->local_size == std::array<std::uint32_t, 3>{256, 1, 1});
    REQUIRE(r->spec_entries.size() == 2);
    CHECK(r->spec_entries[0].constantID == 0);
    CHECK(spec_u32(*r, 0) == 256);
    CHECK(r->spec_entries[1].constantID == 1);
    CHECK(spec_u32(*r, 1) == 64);
    CHECK(r->push_constant_size == 20);
    REQUIRE(r->bindings.size() == 4);
    CHECK(r->bindings[3].set == 1);
    CHECK(r->bindings[3].type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER);

    auto defaults = spec_defaults(spirv);
    REQUIRE(defaults.has_value());
    REQUIRE(defaults->size() == 2);
    CHECK((*defaults)[0].bits == 256);

    // The diagnosis of a refusal reads the same size, not 1×1×1.
    auto needs = compute_needs(spirv, "main", {});
    REQUIRE(needs.has_value());
    CHECK(needs->workgroup_size == std::array<std::uint32_t, 3>{256, 1, 1});
    CHECK(needs->shared_memory_bytes == (256 + 64) * 4);

    // A value the manifest sets wins for both constants of SpecId 0.
    const SpecValue set[] = {{0, 128}};
    r = reflect_module(spirv, "main", set);
    REQUIRE(r.has_value());
    CHECK(r->local_size == std::array<std::uint32_t, 3>{128, 1, 1});
    CHECK(spec_u32(*r, 0) == 128);
    CHECK(spec_u32(*r, 1) == 64);
  }
}

TEST_CASE("device: reflection lays out every descriptor kind and push constants") {
  test::TempDir dir;
  auto spirv = compile(dir, "layout.comp", k_layout);
  auto r = reflect_module(spirv, "main", {});
  REQUIRE_MESSAGE(r.has_value(), (r ? std::string() : r.error().message));

  struct Expect {
    std::uint32_t set, binding;
    VkDescriptorType type;
    std::uint32_t count;
  };
  const Expect expected[] = {
      {0, 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1},
      {0, 3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1},
      {1, 1, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1},
      {3, 0, VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, 3},
      {3, 1, VK_DESCRIPTOR_TYPE_SAMPLER, 1},
      {3, 2, VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 1},
      {3, 3, VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, 1},
      {3, 4, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 1},
      {3, 5, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 6},
  };
  REQUIRE(r->bindings.size() == std::size(expected));
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    CAPTURE(i);
    CHECK(r->bindings[i].set == expected[i].set);
    CHECK(r->bindings[i].binding == expected[i].binding);
    CHECK(r->bindings[i].type == expected[i].type);
    CHECK(r->bindings[i].count == expected[i].count);
  }
  CHECK(r->push_constant_size == 16);
  CHECK(r->local_size == std::array<std::uint32_t, 3>{8, 4, 1});
  // Every declared constant is stated, at its default: 1, 2, 3, 4, 5 and 7
  // (local_size_z_id, default 1).
  REQUIRE(r->spec_entries.size() == 6);
  CHECK(r->spec_entries[0].constantID == 1);
  CHECK(r->spec_entries[5].constantID == 7);
  std::uint32_t count = 0, z = 0;
  std::memcpy(&count, r->spec_data.data() + r->spec_entries[0].offset, 4);
  std::memcpy(&z, r->spec_data.data() + r->spec_entries[5].offset, 4);
  CHECK(count == 3);
  CHECK(z == 1);
  std::int16_t small_default = 0;
  std::memcpy(&small_default, r->spec_data.data() + r->spec_entries[2].offset, 2);
  CHECK(small_default == -2);
  CHECK(r->spirv_version == 0x00010500);
}

TEST_CASE("device: specialization map follows each constant's type") {
  test::TempDir dir;
  auto spirv = compile(dir, "layout.comp", k_layout);
  const SpecValue spec[] = {{1, 5},          {2, 0}, {3, 0xffffffffffff8000ull}, {4, 0x1122334455667788ull},
                            {5, 0x3f800000}, {7, 2}};
  auto r = reflect_module(spirv, "main", spec);
  REQUIRE_MESSAGE(r.has_value(), (r ? std::string() : r.error().message));
  REQUIRE(r->spec_entries.size() == 6);
  const std::uint32_t sizes[] = {4, 4, 2, 8, 4, 4};
  std::uint32_t offset = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(r->spec_entries[i].constantID == spec[i].id);
    CHECK(r->spec_entries[i].size == sizes[i]);
    CHECK(r->spec_entries[i].offset == offset);
    offset += sizes[i];
  }
  CHECK(r->spec_data.size() == offset);
  std::int16_t small;
  std::memcpy(&small, r->spec_data.data() + 8, 2);
  CHECK(small == -32768);
  std::uint64_t big;
  std::memcpy(&big, r->spec_data.data() + 10, 8);
  CHECK(big == 0x1122334455667788ull);
  // The array sized by COUNT and the workgroup's z follow the spec values.
  CHECK(r->bindings[3].count == 5);
  CHECK(r->local_size == std::array<std::uint32_t, 3>{8, 4, 2});

  // Bits above an int16 must be zero or a sign extension of bit 15.
  const SpecValue raw_bits[] = {{3, 0x8000}};
  CHECK(reflect_module(spirv, "main", raw_bits));
  const SpecValue too_wide[] = {{3, 0x18000}};
  CHECK(!reflect_module(spirv, "main", too_wide));
  const SpecValue bad_extension[] = {{3, 0xffffffffffff7fffull}};
  CHECK(!reflect_module(spirv, "main", bad_extension));
  const SpecValue duplicate[] = {{1, 1}, {1, 2}};
  CHECK(!reflect_module(spirv, "main", duplicate));
}

TEST_CASE("device: reflection refuses what it cannot lay out") {
  test::TempDir dir;
  auto spirv = compile(dir, "layout.comp", k_layout);
  auto r = reflect_module(spirv, "other", {});
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);
  CHECK(r.error().message.find("main") != std::string::npos);  // lists the entry points there are

  auto truncated = std::span(spirv).first(spirv.size() / 2);
  r = reflect_module(truncated, "main", {});
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);

  r = reflect_module({}, "main", {});
  REQUIRE(!r);
  CHECK(r.error().category == Category::invalid_argument);

  auto vert = compile(dir, "v.vert", "#version 450\nvoid main() { gl_Position = vec4(0); }\n");
  r = reflect_module(vert, "main", {});
  REQUIRE(!r);
  CHECK(r.error().message.find("vertex") != std::string::npos);
}
