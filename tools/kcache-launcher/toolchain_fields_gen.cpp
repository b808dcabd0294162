// Build-time generator for kcache-launcher: writes the toolchain fields of
// the glslang and SPIRV-Tools linked into this build (compile::Toolchain::
// installed(), the same static libraries `kcache` links) as a C++ table,
// so that the launcher's hit path judges entries by today's toolchain
// without linking a compiler. Usage: kcache-toolchain-fields OUTPUT.
#include "kcache/compile/compiler.hpp"

#include <cstdio>
#include <string>

namespace {

/// `text` as a C++ string literal.
std::string literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c < 0x20 || c > 0x7e) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kcache-toolchain-fields OUTPUT\n");
    return 2;
  }
  std::string text =
      "// Generated at build time by kcache-toolchain-fields (toolchain_fields_gen.cpp): do not edit.\n"
      "#include \"toolchain_fields.hpp\"\n\nnamespace kcache::launcher_tool {\n\n"
      "std::vector<Field> toolchain_fields(definition::Optimize level) {\n  switch (level) {\n";
  using kcache::definition::Optimize;
  for (Optimize level : {Optimize::none, Optimize::size, Optimize::performance}) {
    text += std::string("    case definition::Optimize::") + std::string(kcache::definition::optimize_name(level)) +
            ":\n      return {";
    for (const auto& [name, value] : kcache::compile::Toolchain::installed().fields(level))
      text += "{" + literal(name) + ", " + literal(value) + "}, ";
    text += "};\n";
  }
  text += "  }\n  return {};\n}\n\n}  // namespace kcache::launcher_tool\n";
  std::FILE* f = std::fopen(argv[1], "w");
  if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  return 0;
}
