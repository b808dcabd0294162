#!/usr/bin/env bash
# The CI recipe (ci/github-actions.yml, included by the README) is valid YAML
# and a valid workflow shape, and every `kcache SUBCOMMAND --option` it runs
# exists in this kcache: each subcommand's --help must succeed and list each
# option the recipe passes. The README's old recipe (a flow mapping holding
# "${{ }}") must fail this parse: the check is not a rubber stamp.
source "$(dirname "$0")/lib.bash"
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"
python3 - "$KCACHE" "$KCACHE_SOURCE_DIR/ci/github-actions.yml" <<'PY'
import re, shlex, subprocess, sys, yaml
kcache, path = sys.argv[1:3]
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
checked = []
for run in runs:
    text = re.sub(r"\$\{\{[^}]*\}\}", "X", run)
    for part in re.split(r"&&|\|\||;|\|", text):
        words = shlex.split(part, comments=True)
        if not words or words[0] != "kcache":
            continue
        sub = words[1]
        help_text = subprocess.run([kcache, sub, "--help"], capture_output=True, text=True)
        assert help_text.returncode == 0, f"`kcache {sub}` does not exist: {help_text.stderr}"
        for w in words[2:]:
            if w.startswith("-"):
                option = w.split("=")[0]
                assert re.search(r"(^|[ ,])" + re.escape(option) + r"\b", help_text.stdout, re.M), \
                    f"`kcache {sub}` has no option {option}"
        checked.append(" ".join(words[:2]))
assert len(checked) >= 3, f"only {len(checked)} kcache commands found"
print("ci recipe:", len(runs), "run steps,", len(checked), "kcache commands checked:", ", ".join(checked))
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
