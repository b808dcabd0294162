// The pipeline worker's protocol and the parent's handling of workers that
// die or misbehave. Real pipeline creation (and a real crash in it) is
// tested end to end on lavapipe by tests/cli/dev_crash.sh; here the worker
// command is replaced by small shell scripts, so no Vulkan is needed.
#include "kcache/worker/pipeline_worker.hpp"
#include "kcache/worker/protocol.hpp"

#include "test_support.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

using namespace kcache;
using namespace kcache::worker;
namespace protocol = kcache::worker::protocol;

namespace {

std::vector<std::uint8_t> body_of(const std::vector<std::uint8_t>& whole) {
  protocol::FrameReader r;
  r.append(whole);
  auto f = r.next();
  REQUIRE(f);
  REQUIRE(f->has_value());
  return (*f)->body;
}

/// A module spirv-val accepts: the parent validates every job's module before
/// any worker sees it, and refuses one it rejects without starting a worker.
std::vector<std::uint8_t> valid_module(const test::TempDir& dir) {
  auto src = dir.write("empty.comp", "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n");
  auto spv = dir.path() / "empty.spv";
  const std::string cmd =
      "glslangValidator -V --target-env vulkan1.2 -o '" + spv.string() + "' '" + src.string() + "' > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(spv, std::ios::binary);
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

device::DeviceInfo fake_device() {
  device::DeviceInfo d;
  d.name = "fake";
  d.seal_fingerprint();
  return d;
}

}  // namespace

TEST_CASE("worker protocol: a JOB frame round-trips") {
  std::vector<std::uint8_t> spirv = {1, 2, 3, 4}, blob = {9, 8};
  std::vector<device::SpecValue> spec = {{0, 256}, {3, ~std::uint64_t{0}}};
  auto f = protocol::job_frame(7, protocol::Mode::verify, true, "k[T=f]", "vulkan1.2", "main", spec, spirv, blob);
  auto job = protocol::decode_job(body_of(f));
  REQUIRE(job);
  CHECK(job->index == 7);
  CHECK(job->mode == protocol::Mode::verify);
  CHECK(job->validated);
  CHECK_FALSE(protocol::decode_job(body_of(protocol::job_frame(7, protocol::Mode::build, false, "k", "vulkan1.2",
                                                               "main", spec, spirv, blob)))
                  ->validated);
  CHECK(job->kernel == "k[T=f]");
  CHECK(job->target == "vulkan1.2");
  CHECK(job->entry == "main");
  REQUIRE(job->spec.size() == 2);
  CHECK(job->spec[1].id == 3);
  CHECK(job->spec[1].bits == ~std::uint64_t{0});
  CHECK(job->spirv == spirv);
  CHECK(job->wrapped_blob == blob);
}

TEST_CASE("worker protocol: RESULT, READY, FATAL and BEGIN round-trip") {
  protocol::JobResult r;
  r.index = 3;
  r.create_ms = 1.5;
  r.cpu_ms = 2.25;
  r.empty_cache_ms = 7;
  r.outcome = device::VerifyOutcome::miss;
  r.blob_refused = true;
  r.message = "refused";
  r.blob = {1, 2, 3};
  auto back = protocol::decode_result(body_of(protocol::result_frame(r)));
  REQUIRE(back);
  CHECK(back->index == 3);
  CHECK(!back->error);
  CHECK(back->create_ms == 1.5);
  CHECK(back->cpu_ms == 2.25);
  CHECK(back->empty_cache_ms == 7);
  CHECK(back->outcome == device::VerifyOutcome::miss);
  CHECK(back->blob_refused);
  CHECK(back->message == "refused");
  CHECK(back->blob == r.blob);

  r.error = Error{Category::device_unavailable, "device lacks shaderFloat64"};
  back = protocol::decode_result(body_of(protocol::result_frame(r)));
  REQUIRE(back);
  REQUIRE(back->error);
  CHECK(back->error->category == Category::device_unavailable);
  CHECK(back->error->message == "device lacks shaderFloat64");

  auto ready = protocol::decode_ready(body_of(protocol::ready_frame("llvmpipe")));
  REQUIRE(ready);
  CHECK(ready->first == protocol::k_protocol_version);
  CHECK(ready->second == "llvmpipe");
  auto fatal = protocol::decode_fatal(body_of(protocol::fatal_frame(Error{Category::not_found, "gone"})));
  REQUIRE(fatal);
  CHECK(fatal->category == Category::not_found);
  CHECK(protocol::decode_begin(body_of(protocol::begin_frame(42))).value() == 42);
}

TEST_CASE("worker protocol: truncated, oversized and unknown frames are refused") {
  auto f = protocol::result_frame(protocol::JobResult{});
  for (std::size_t cut = 0; cut + 8 < f.size(); ++cut) {
    std::vector<std::uint8_t> body(f.begin() + 8, f.begin() + 8 + static_cast<std::ptrdiff_t>(cut));
    CHECK_FALSE(protocol::decode_result(body));
  }
  protocol::FrameReader partial;
  partial.append(std::span(f).first(f.size() - 1));
  auto none = partial.next();
  REQUIRE(none);
  CHECK_FALSE(none->has_value());  // waits for the last byte

  protocol::FrameReader unknown;
  std::vector<std::uint8_t> bad = {99, 0, 0, 0, 0, 0, 0, 0};
  unknown.append(bad);
  CHECK(unknown.next().error().category == Category::corruption);

  protocol::FrameReader huge;
  std::vector<std::uint8_t> big = {104, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  huge.append(big);
  CHECK(huge.next().error().category == Category::corruption);
}

TEST_CASE("worker: a worker that keeps dying at start fails every job after two tries") {
  test::TempDir dir;
  const std::vector<std::uint8_t> spirv = valid_module(dir);
  std::vector<PipelineJob> jobs(3, PipelineJob{"k", "vulkan1.2", "main", {}, spirv, {}});
  WorkerOptions options;
  options.command = {"/bin/sh", "-c", "echo 'driver says no' >&2; exit 3", "worker"};
  options.threads = 2;
  std::vector<int> seen(jobs.size(), 0);
  std::string message;
  auto ran = run_pipeline_jobs(fake_device(), JobMode::build, jobs, options, [&](std::size_t i, PipelineOutcome&& o) {
    ++seen.at(i);
    REQUIRE(o.error);
    CHECK(o.error->category == Category::device_unavailable);
    message = o.error->message;
  });
  REQUIRE(ran);
  CHECK(seen == std::vector<int>{1, 1, 1});
  CHECK(message.find("exited with status 3") != std::string::npos);
  CHECK(message.find("driver says no") != std::string::npos);
}

TEST_CASE("worker: a worker that breaks the protocol is treated as crashed") {
  test::TempDir dir;
  const std::vector<std::uint8_t> spirv = valid_module(dir);
  std::vector<PipelineJob> jobs(1, PipelineJob{"k", "vulkan1.2", "main", {}, spirv, {}});
  WorkerOptions options;
  options.command = {"/bin/sh", "-c", "printf 'garbage!garbage!'; sleep 5", "worker"};
  std::string message;
  auto ran = run_pipeline_jobs(fake_device(), JobMode::build, jobs, options, [&](std::size_t, PipelineOutcome&& o) {
    REQUIRE(o.error);
    message = o.error->message;
  });
  REQUIRE(ran);
  CHECK(message.find("broke the protocol") != std::string::npos);
}

TEST_CASE("worker: a module spirv-val rejects fails in the parent, and no worker starts") {
  std::vector<std::uint8_t> spirv = {0, 0, 0, 0};
  std::vector<PipelineJob> jobs(2, PipelineJob{"k", "vulkan1.2", "main", {}, spirv, {}});
  WorkerOptions options;
  options.command = {"/bin/sh", "-c", "echo started >&2; exit 3", "worker"};
  std::vector<int> seen(jobs.size(), 0);
  auto ran = run_pipeline_jobs(fake_device(), JobMode::build, jobs, options, [&](std::size_t i, PipelineOutcome&& o) {
    ++seen.at(i);
    REQUIRE(o.error);
    CHECK(o.error->category != Category::device_unavailable);  // the module's fault, remembered
    CHECK(o.error->message.find("started") == std::string::npos);
    CHECK_FALSE(o.crashed);
  });
  REQUIRE(ran);
  CHECK(seen == std::vector<int>{1, 1});
}

TEST_CASE("worker: a worker that never answers is killed after the stall limit") {
  test::TempDir dir;
  const std::vector<std::uint8_t> spirv = valid_module(dir);
  std::vector<PipelineJob> jobs(1, PipelineJob{"k", "vulkan1.2", "main", {}, spirv, {}});
  WorkerOptions options;
  options.command = {"/bin/sh", "-c", "exec sleep 30", "worker"};
  options.stall_timeout = std::chrono::milliseconds(300);
  std::string message;
  auto ran = run_pipeline_jobs(fake_device(), JobMode::build, jobs, options, [&](std::size_t, PipelineOutcome&& o) {
    REQUIRE(o.error);
    message = o.error->message;
  });
  REQUIRE(ran);
  CHECK(message.find("was killed") != std::string::npos);
}
