#!/usr/bin/env bash
# The CI recipes (ci/github-actions.yml, included by the README, and
# ci/gitlab-ci.yml) are valid YAML and a valid pipeline shape, and every
# `kcache SUBCOMMAND --option` they run exists in this kcache: each
# subcommand's --help must succeed and list each option a recipe passes. The
# README's old recipe (a flow mapping holding "${{ }}") must fail this parse:
# the check is not a rubber stamp. The GitHub workflow's build and merge jobs
# then run as printed, in two pipeline runs with each shard's store carried
# over as its cache step carries it: the second run compiles nothing.
source "$(dirname "$0")/lib.bash"
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"
python3 - "$KCACHE" "$KCACHE_SOURCE_DIR/ci/github-actions.yml" "$KCACHE_SOURCE_DIR/ci/gitlab-ci.yml" <<'PY'
import re, shlex, subprocess, sys, yaml
kcache, path, gitlab_path = sys.argv[1:4]
wf = yaml.safe_load(open(path))
assert isinstance(wf, dict) and wf.get("name") and isinstance(wf.get("jobs"), dict), "not a workflow"
assert True in wf or "on" in wf, "no trigger (on:)"
runs = []
for job_name, job in wf["jobs"].items():
    assert isinstance(job.get("steps"), list) and job["steps"], f"job {job_name}: no steps"
    assert "runs-on" in job, f"job {job_name}: no runs-on"
    for step in job["steps"]:
        assert isinstance(step, dict) and ("run" in step) != ("uses" in step), f"job {job_name}: bad step {step}"
        if "with" in step:
            assert isinstance(step["with"], dict), f"job {job_name}: 'with' is not a mapping"
            for k, v in step["with"].items():
                assert isinstance(v, (str, bool, int)), f"job {job_name}: with.{k} is {type(v).__name__}"
        if "run" in step:
            runs.append(step["run"])
def kcache_commands(runs, recipe):
    """Checks every `kcache SUB ...` of `runs` against this kcache's --help:
    up to the end of its command (a separator, a closing parenthesis, the
    line's end), wherever it stands: in a loop, in $(...), after &&."""
    found = []
    for run in runs:
        text = re.sub(r"\$\{\{[^}]*\}\}", "X", run)
        for m in re.finditer(r"(?:^|[\s;&|(])kcache\s+([a-z][a-z-]*)([^;&|)\n]*)", text):
            words = ["kcache", m.group(1)] + m.group(2).split()
            sub = words[1]
            help_text = subprocess.run([kcache, sub, "--help"], capture_output=True, text=True)
            assert help_text.returncode == 0, f"{recipe}: `kcache {sub}` does not exist: {help_text.stderr}"
            for w in words[2:]:
                if w.startswith("-"):
                    option = w.split("=")[0]
                    assert re.search(r"(^|[ ,])" + re.escape(option) + r"\b", help_text.stdout, re.M), \
                        f"{recipe}: `kcache {sub}` has no option {option}"
            found.append(" ".join(words[:2]))
    return found


checked = kcache_commands(runs, "github")
assert len(checked) >= 3, f"only {len(checked)} kcache commands found"
print("ci recipe:", len(runs), "run steps,", len(checked), "kcache commands checked:", ", ".join(checked))
# The GitHub workflow caches the package and each shard's store, the store
# keyed on the manifest and the package (the toolchain).
caches = [s["with"] for j in wf["jobs"].values() for s in j["steps"] if s.get("uses", "").startswith("actions/cache")]
store_keys = [c["key"] for c in caches if c["path"] == "store"]
assert store_keys and "kcache.toml" in store_keys[0] and "kcache_*.deb" in store_keys[0], f"store cache key: {store_keys}"
assert any(c["path"] == "kcache-src/pkg" for c in caches), "the package is not cached"
assert "KCACHE_TESTS=OFF" in " ".join(runs), "the recipe builds kcache's tests"

# The GitLab pipeline: stages, jobs with a stage and a script, its kcache
# commands and options checked the same way, its store cached per shard.
gl = yaml.safe_load(open(gitlab_path))
assert isinstance(gl.get("stages"), list) and gl["stages"], "gitlab: no stages"
jobs = {k: v for k, v in gl.items() if isinstance(v, dict) and "script" in v}
assert set(jobs) == {"kcache", "build", "merge"}, f"gitlab jobs: {sorted(jobs)}"
gitlab_runs = []
for name, job in jobs.items():
    assert job.get("stage") in gl["stages"], f"gitlab job {name}: stage {job.get('stage')}"
    assert isinstance(job["script"], list) and all(isinstance(x, str) for x in job["script"]), f"gitlab {name}: script"
    gitlab_runs += job["script"]
gitlab_checked = kcache_commands(gitlab_runs, "gitlab")
assert len(gitlab_checked) >= 4, f"gitlab: only {len(gitlab_checked)} kcache commands found"
assert "kcache.toml" in jobs["build"]["cache"]["key"]["files"] and jobs["build"]["cache"]["paths"] == ["store/"], \
    "gitlab: the store is not cached on the manifest"
print("gitlab recipe:", len(gitlab_checked), "kcache commands checked:", ", ".join(gitlab_checked))
PY
# The flow-mapping spelling the README had is rejected by the same parser.
printf 'steps:\n  - with: { name: shard-${{ matrix.shard }}, path: x }\n' >old.yml
if python3 -c 'import yaml,sys; yaml.safe_load(open(sys.argv[1]))' old.yml 2>"$WORK/err"; then
  fail "the parser accepted the old flow mapping: the check cannot catch invalid YAML"
fi
note "ok"

note "the README shows the recipe exactly as the file has it (from 'name:' on)"
python3 - "$KCACHE_SOURCE_DIR/README.md" "$KCACHE_SOURCE_DIR/ci/github-actions.yml" <<'PY' || fail "README's CI recipe differs from ci/github-actions.yml"
import sys
readme, recipe = (open(p).read() for p in sys.argv[1:3])
section = readme[readme.index("### CI recipe (GitHub Actions)"):]
block = section[section.index("```yaml\n") + len("```yaml\n"):]
block = block[:block.index("```")]
body = recipe[recipe.index("name: kernels"):]
sys.exit(0 if block == body else 1)
PY

note "the build and merge jobs run as printed: 4 shards, the empty ones succeed, 2 namespaces"
# The project the recipe checks out: 2 kernels in each of two targets; their
# name hashes leave some of the four shards empty.
mkdir -p project
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = 1u; }\n' >project/k.comp
printf '[[kernel]]\nname = "a"\nsource = "k.comp"\ntarget = "vulkan1.2"\n[kernel.variants]\nN = [1]\n' >project/kcache.toml
printf '[[kernel]]\nname = "b"\nsource = "k.comp"\ntarget = "vulkan1.3"\n[kernel.variants]\nN = [1]\n' >>project/kcache.toml
mkdir -p bin && ln -sf "$KCACHE" bin/kcache
"$KCACHE" keygen -o "$WORK/ci" >/dev/null
PATH="$WORK/bin:$PATH" python3 - "$KCACHE_SOURCE_DIR/ci/github-actions.yml" "$WORK" <<'PY' || fail "the CI recipe's jobs failed"
import glob, os, re, shutil, subprocess, sys, yaml
path, work = sys.argv[1:3]
jobs = yaml.safe_load(open(path))["jobs"]
artifacts = os.path.join(work, "artifacts")
os.makedirs(artifacts)
key = open(os.path.join(work, "ci.key")).read().strip()

caches = os.path.join(work, "caches")  # what actions/cache keeps between pipeline runs


def run_job(name, cwd, shard=None):
    saves = []
    for step in jobs[name]["steps"]:
        if "run" in step:
            if "apt-get" in step["run"]:
                continue  # kcache is installed here: it is the kcache under test
            script = step["run"].replace("${{ matrix.shard }}", str(shard))
            script = script.replace("${{ secrets.KCACHE_SIGNING_KEY }}", key)
            # A repository variable left unset is empty, which kcache reads as unset.
            env = dict(os.environ, **{k: re.sub(r"\$\{\{[^}]*\}\}", "", str(v)) for k, v in step.get("env", {}).items()})
            r = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
            print(f"[{name} {shard or ''}] {script.strip().splitlines()[0]} -> {r.returncode}")
            assert r.returncode == 0, f"{name}: step failed:\n{script}\n{r.stdout}{r.stderr}"
        elif step["uses"].startswith("actions/cache"):
            # Restored now, saved when the job ends, per shard (the key
            # holds the shard; the manifest and package are the same here).
            kept = os.path.join(caches, f"{name}-{shard}", step["with"]["path"])
            if os.path.isdir(kept):
                shutil.copytree(kept, os.path.join(cwd, step["with"]["path"]))
            saves.append((os.path.join(cwd, step["with"]["path"]), kept))
        elif step["uses"].startswith("actions/upload-artifact"):
            for f in glob.glob(os.path.join(cwd, step["with"]["path"])):
                shutil.copy(f, artifacts)
        elif step["uses"].startswith("actions/download-artifact") and "pattern" in step.get("with", {}):
            for f in glob.glob(os.path.join(artifacts, "*.kcb")):
                shutil.copy(f, cwd)
    for path, kept in saves:
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(path, kept)

assert jobs["build"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
import json
for pipeline in (1, 2):
    counts, compiled = [], 0
    for shard in [1, 2, 3, 4]:
        cwd = os.path.join(work, f"run{pipeline}-runner-{shard}")  # a fresh runner each time
        shutil.copytree(os.path.join(work, "project"), cwd)
        run_job("build", cwd, shard)
        report = json.load(open(os.path.join(cwd, "report.json")))
        counts.append(len(report["kernels"]))
        compiled += sum(1 for k in report["kernels"] if k["outcome"] != "hit")
    assert sum(counts) == 2 and counts.count(0) >= 1, f"kernels per shard: {counts}"
    # The second pipeline run starts from the stores the first one cached.
    assert compiled == (2 if pipeline == 1 else 0), f"pipeline run {pipeline}: {compiled} kernels not hits"
    print(f"pipeline run {pipeline}: kernels per shard {counts}, {compiled} compiled")
shutil.rmtree(artifacts)
os.makedirs(artifacts)
for shard in [1, 2, 3, 4]:  # the second run's shard bundles, as its upload step left them
    for f in glob.glob(os.path.join(work, f"run2-runner-{shard}", "shard-*.kcb")):
        shutil.copy(f, artifacts)
merge = os.path.join(work, "merge")
os.makedirs(merge)
run_job("merge", merge)
out = sorted(os.path.basename(f) for f in glob.glob(os.path.join(artifacts, "kernels-*.kcb")))
assert out == ["kernels-spirv_vulkan1.2.kcb", "kernels-spirv_vulkan1.3.kcb"], out
print("kernels per shard:", counts, "bundles:", out)
PY
for ns in spirv_vulkan1.2 spirv_vulkan1.3; do
  expect_exit 0 "$KCACHE" import "artifacts/kernels-$ns.kcb" --trust ci.pub --store imported
done
expect_exit 0 "$KCACHE" inspect --store imported --json
[[ $(json_get out 'len(j["entries"])') == 2 ]] || fail "the merged bundles do not hold both kernels"
note "ok"
