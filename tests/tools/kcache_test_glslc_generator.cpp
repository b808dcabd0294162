// A shader build as many projects have one: a generator program that runs
// glslc once per variant (found on PATH, as a build's generator finds it),
// with -O, -I, -D, --target-env and -MD, outputs in a build folder. The
// launcher tests run it with the real glslc and with a link named glslc to
// kcache first on PATH, and compare what each wrote.
//
// Usage: kcache_test_glslc_generator SOURCE_DIR OUT_DIR
// Writes OUT_DIR/<kernel>_<variant>.spv (+ .spv.d) for every variant below
// and OUT_DIR/scale.h.txt (-mfmt=c); exits with the first failing glslc's code.
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

extern char** environ;

namespace {

int run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::perror("posix_spawnp glslc");
    return 127;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string src = argv[1], out = argv[2];
  struct Variant {
    std::string kernel, name, target;
    std::vector<std::string> defines;
  };
  std::vector<Variant> variants;
  for (const char* type : {"float", "int", "uint"})
    for (const char* block : {"64", "256"})
      variants.push_back({"scale",
                          std::string(type) + "_" + block,
                          "vulkan1.2",
                          {std::string("-DTYPE=") + type, std::string("-DBLOCK=") + block}});
  for (const char* op : {"ADD", "MUL"})
    for (const char* target : {"vulkan1.1", "vulkan1.3"})
      variants.push_back({"binop", std::string(op) + "_" + target, target, {std::string("-DOP_") + op}});
  for (const auto& v : variants) {
    std::vector<std::string> args{"glslc", "-O", "-I" + src + "/include", "--target-env=" + v.target, "-MD", "-c"};
    args.insert(args.end(), v.defines.begin(), v.defines.end());
    args.insert(args.end(),
                {src + "/shaders/" + v.kernel + ".comp", "-o", out + "/" + v.kernel + "_" + v.name + ".spv"});
    if (int rc = run(args)) return rc;
  }
  // The module as C text, as projects embed it.
  return run({"glslc", "-O", "-mfmt=c", "-I" + src + "/include", "-DTYPE=float", "-DBLOCK=64",
              src + "/shaders/scale.comp", "-o", out + "/scale.h.txt"});
}
