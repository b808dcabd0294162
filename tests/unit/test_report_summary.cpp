// The build summary (report::build_summary): one message per distinct
// compile error, naming every kernel it breaks; kernels and pipelines
// counted apart; remote hits on the summary line.
#include "kcache/report/report.hpp"

#include "test_support.hpp"

#include <string>

using kcache::Category;
using kcache::Error;
using kcache::engine::BuildResult;
using kcache::engine::Outcome;
using kcache::engine::Receipt;

namespace {

Receipt failed(std::string kernel, std::string message) {
  Receipt r;
  r.kernel = std::move(kernel);
  r.ns = "spirv/vulkan1.2";
  r.outcome = Outcome::failed;
  r.failed_phase = "glslang";
  r.error = Error{Category::compile_failed, std::move(message)};
  return r;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("summary: one error in several variants is printed once, naming them") {
  BuildResult result;
  const std::string error = "k.comp:5: error: 'x' : undeclared identifier";
  for (const char* v : {"k[N=1]", "k[N=2]", "k[N=3]"}) result.receipts.push_back(failed(v, error));
  result.receipts.push_back(failed("other", "other.comp:2: error: 'y' : undeclared identifier"));
  const std::string text = kcache::report::build_summary(result, false);
  CAPTURE(text);
  CHECK(occurrences(text, error) == 1);
  CHECK(text.find("FAILED k[N=1] (compile_failed in glslang); the same error in 2 more: k[N=2], k[N=3]\n" + error +
                  "\n") != std::string::npos);
  CHECK(text.find("FAILED other (compile_failed in glslang)\nother.comp:2: error:") != std::string::npos);
  CHECK(text.find("4 kernels: 0 hit, 0 compiled, 4 failed") != std::string::npos);
}

TEST_CASE("summary: a long list of variants is cut, the count kept") {
  BuildResult result;
  for (int i = 0; i < 20; ++i) result.receipts.push_back(failed("k[N=" + std::to_string(i) + "]", "same"));
  const std::string text = kcache::report::build_summary(result, false);
  CHECK(text.find("the same error in 19 more: k[N=1], ") != std::string::npos);
  CHECK(text.find(", and 11 more\nsame\n") != std::string::npos);
}

TEST_CASE("summary: kernels and pipelines apart, remote hits counted") {
  BuildResult result;
  for (const char* ns : {"spirv/vulkan1.2", "spirv/vulkan1.2", "vulkan/2fb577cce525d29c", "vulkan/2fb577cce525d29c"}) {
    Receipt r;
    r.kernel = "k";
    r.ns = ns;
    r.outcome = Outcome::hit;
    result.receipts.push_back(r);
  }
  result.receipts[1].outcome = Outcome::remote_hit;
  const std::string text = kcache::report::build_summary(result, false);
  CAPTURE(text);
  CHECK(text.find("2 kernels and 2 pipelines: 4 hit (1 from remotes), 0 compiled, 0 failed, 0 not stored\n") !=
        std::string::npos);
}

TEST_CASE("summary: a stale entry rebuilt counts as compiled, its part named") {
  BuildResult result;
  for (Outcome o : {Outcome::compiled, Outcome::stale_replaced, Outcome::stale_replaced, Outcome::hit}) {
    Receipt r;
    r.kernel = "k";
    r.ns = "spirv/vulkan1.2";
    r.outcome = o;
    result.receipts.push_back(r);
  }
  const std::string text = kcache::report::build_summary(result, false);
  CAPTURE(text);
  CHECK(text.find("4 kernels: 1 hit, 3 compiled (2 replacing stale entries), 0 failed, 0 not stored\n") !=
        std::string::npos);
}
