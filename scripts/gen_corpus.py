#!/usr/bin/env python3
"""Generate the kcache benchmark corpus: an ML-kernel-library-shaped set of
GLSL compute shaders and a kcache.toml that expands to N kernel variants.

    scripts/gen_corpus.py OUT_DIR [--variants N]      (default N = 1600)
    scripts/gen_corpus.py OUT_DIR --set library       (the library-like set)

--set library writes instead a small set shaped like a public ML shader
library's hardest kernels (scripts/corpus/library/*.comp, 30 variants):
workgroup sizes and shared arrays sized by specialization constants left
at their defaults (glslang's local_size_x_id beside constant_id, one SpecId
with two defaults), 16-bit and 8-bit storage, subgroup arithmetic and
shuffles, up to eight bindings over two sets, push-constant blocks of up
to 48 bytes; a few entries set the spec constants, some target vulkan1.3
(LocalSizeId). scripts/bench_gpu requires every one of its pipelines stored.

Writes into OUT_DIR:
  kcache.toml            manifest ([defaults]: target vulkan1.2, include_dirs)
  shaders/*.comp         templated kernels (matmul, GEMV, flash attention,
                         convolutions, dequantisation, norms, RoPE, softmax,
                         elementwise, copies, reductions, ...)
  include/*.glsl         shared includes, each used by a different subset
  commands.txt           one glslc command per variant (per-process baseline,
                         run with cwd OUT_DIR; writes spv/<safe_name>.spv)
  commands_glslang.txt   the same through glslangValidator + spirv-opt -O
                         (writes spv_g/<safe_name>.spv; glslangValidator
                         needs -Iinclude without a space)
  corpus.json            {"variants", "touch_include", "affected_variants",
                          "kernels"}
  spv/, spv_g/           empty output folders for the two command lists

<safe_name> is the kernel name with every non-alphanumeric character
replaced by '_'. The full catalogue holds more variants than the default;
a smaller N keeps every one-of-a-kind kernel plus a proportional,
deterministic share of the bulk entries (per quant format, per elementwise
op, per type pair), topped up with single-variant entries to hit N exactly
when possible; N above the catalogue size (1652) yields the whole
catalogue. touch_include is the include file whose users (files actually
opened by a variant's compile, #if-guarded includes honoured) are closest
to 10% of the variants. Output is byte-for-byte deterministic for the
same arguments. Python 3 standard library only.

The shader and include sources are real files next to this script,
scripts/corpus/shaders/*.comp and scripts/corpus/include/*.glsl, copied
into OUT_DIR verbatim (only those the chosen variants use); the
variants differ only by -D defines from the manifest. The catalogue of
[[kernel]] entries is catalogue() below. See scripts/corpus/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import sys
from pathlib import Path

# ---------------------------------------------------------------------------
# Shader and include sources (scripts/corpus/, copied verbatim)
# ---------------------------------------------------------------------------

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


def load_sources(sub, suffix):
    """{file name: text} of every CORPUS_DIR/sub/*suffix, read byte-exact."""
    files = sorted((CORPUS_DIR / sub).glob("*" + suffix))
    if not files:
        raise SystemExit(f"gen_corpus.py: no *{suffix} files in {CORPUS_DIR / sub}")
    return {p.name: p.read_bytes().decode("utf-8") for p in files}


INCLUDES = load_sources("include", ".glsl")  # include/<name> -> text
SHADERS = load_sources("shaders", ".comp")   # shaders/<name> -> text
LIBRARY = load_sources("library", ".comp")   # library/<name> -> text (--set library)


# ---------------------------------------------------------------------------
# Catalogue
# ---------------------------------------------------------------------------

F = ["float", "float16_t"]
QUANTS = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl", "q2_k", "q4_k", "q5_k", "q6_k"]
LEGACY_QUANTS = QUANTS[:6]
STORAGE_TYPES = ["float", "float16_t", "int", "uint", "int16_t", "uint16_t", "int8_t", "uint8_t"]
SHORT = {"float": "f32", "float16_t": "f16", "int": "i32", "uint": "u32",
         "int16_t": "i16", "uint16_t": "u16", "int8_t": "i8", "uint8_t": "u8"}

UNARY_OPS = ["abs", "neg", "sqr", "sqrt", "sin", "cos", "log", "exp", "expm1", "tanh", "sigmoid",
             "log_sigmoid", "relu", "leaky_relu", "gelu", "gelu_erf", "gelu_quick", "silu",
             "hardswish", "hardsigmoid", "elu", "selu", "softplus", "softsign", "mish", "step",
             "floor", "ceil", "round", "trunc", "sgn"]
GLU_OPS = ["swiglu", "geglu", "geglu_erf", "geglu_quick", "reglu", "swiglu_oai"]
BINARY_OPS = ["add", "sub", "mul", "div", "max", "min"]


def E(name, source, defines=None, variants=None, spec=None, bulk=False, target=None):
    """One [[kernel]] entry. bulk: one of many same-shaped entries (a quant
    format, an elementwise op, a type pair); a smaller --variants thins
    these first and keeps the one-of-a-kind kernels. target: the entry's
    own SPIR-V target (default: the manifest's vulkan1.2)."""
    return {"name": name, "source": source, "defines": dict(defines or {}),
            "variants": dict(variants or {}), "spec": dict(spec or {}), "bulk": bulk, "target": target}


def library_catalogue():
    """The --set library entries: spec constants mostly left at their defaults."""
    return [
        E("lib_conv2d", "lib_conv2d.comp", {}, {"A_TYPE": F, "KSIZE": [1, 3, 5, 7]}),
        E("lib_conv2d_wide", "lib_conv2d.comp", {}, {"A_TYPE": F, "KSIZE": [3, 5]}, {"0": 32, "1": 4}),
        E("lib_conv_transpose3d", "lib_conv_transpose3d.comp", {}, {"A_TYPE": F, "KSIZE": [2, 3, 4]}),
        E("lib_reduce", "lib_reduce.comp", {}, {"A_TYPE": F, "OP": [0, 1, 2]}, target="vulkan1.3"),
        E("lib_reduce_512", "lib_reduce.comp", {}, {"A_TYPE": F, "OP": [0, 1, 2]}, {"0": 512}),
    ]


def qdef(q, **extra):
    d = {"QUANTIZED": 1, "DATA_A_" + q.upper(): 1}
    d.update(extra)
    return d


def catalogue():
    """All [[kernel]] entries, in manifest order."""
    out = []
    # --- GEMM -------------------------------------------------------------
    out.append(E("matmul", "matmul.comp", {},
                 {"A_TYPE": F, "B_TYPE": F, "D_TYPE": F, "ACC_TYPE": F,
                  "TILE": ["S", "M", "L", "XL"], "ALIGNED": [0, 1]}))
    out.append(E("matmul_id", "matmul.comp", {"MUL_MAT_ID": 1, "D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F, "TILE": ["S", "M", "L"], "ALIGNED": [0, 1]}))
    for q in QUANTS:
        out.append(E(f"matmul_{q}", "matmul.comp", qdef(q, D_TYPE="float"),
                     {"B_TYPE": F, "TILE": ["S", "M", "L", "XL"], "ALIGNED": [0, 1], "ACC_TYPE": F}, bulk=True))
    for q in QUANTS:
        out.append(E(f"matmul_id_{q}", "matmul.comp", qdef(q, MUL_MAT_ID=1, D_TYPE="float"),
                     {"B_TYPE": F, "TILE": ["S", "M", "L"]}, bulk=True))
    # --- GEMV -------------------------------------------------------------
    out.append(E("mul_mat_vec", "mul_mat_vec.comp", {"D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F, "NUM_ROWS": [1, 2, 4], "NUM_COLS": [1, 4],
                  "USE_SUBGROUP": [0, 1]}, {"0": 64}))
    for q in QUANTS:
        out.append(E(f"mul_mat_vec_{q}", "mul_mat_vec.comp", qdef(q, D_TYPE="float"),
                     {"B_TYPE": F, "NUM_ROWS": [1, 2, 4], "NUM_COLS": [1, 4], "USE_SUBGROUP": [0, 1]},
                     {"0": 64}, bulk=True))
    out.append(E("mul_mat_vec_nc", "mul_mat_vec_nc.comp", {"P021": 0, "D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F}, {"0": 32}))
    out.append(E("mul_mat_vec_p021", "mul_mat_vec_nc.comp", {"P021": 1, "D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F}, {"0": 32}))
    # --- quantisation -----------------------------------------------------
    for q in QUANTS:
        out.append(E(f"dequant_{q}", "dequant.comp", qdef(q), {"D_TYPE": F}, bulk=True))
    out.append(E("get_rows", "get_rows.comp", {}, {"A_TYPE": ["float", "float16_t", "int"], "D_TYPE": F}))
    for q in QUANTS:
        out.append(E(f"get_rows_{q}", "get_rows.comp", qdef(q), {"D_TYPE": F}, bulk=True))
    for q in LEGACY_QUANTS:
        out.append(E(f"quantize_{q}", "quantize.comp", qdef(q), {"B_TYPE": F}, bulk=True))
    out.append(E("set_rows", "set_rows.comp", {"A_TYPE": "float"},
                 {"D_TYPE": F, "IDX_TYPE": ["int", "uint"]}, {"0": 512}))
    # --- convolution ------------------------------------------------------
    out.append(E("conv2d", "conv2d.comp", {},
                 {"A_TYPE": F, "KSIZE": [1, 3, 5, 7], "STRIDE": [1, 2], "BLOCK": [8, 16]}))
    out.append(E("conv2d_gemm", "conv2d_gemm.comp", {}, {"A_TYPE": F, "TILE": ["S", "M", "L"]}))
    out.append(E("conv2d_dw", "conv2d_dw.comp", {},
                 {"A_TYPE": F, "KSIZE": [3, 5, 7], "LAYOUT": [0, 1]}, {"0": 256}))
    out.append(E("conv_transpose_1d", "conv_transpose.comp", {"DIMS": 1}, {"A_TYPE": F}, {"0": 256}))
    out.append(E("conv_transpose_2d", "conv_transpose.comp", {"DIMS": 2},
                 {"A_TYPE": F, "KSIZE": [2, 3, 4]}, {"0": 256}))
    out.append(E("im2col", "im2col.comp", {}, {"A_TYPE": F, "D_TYPE": F, "IS_3D": [0, 1]}, {"0": 256}))
    out.append(E("pool2d", "pool2d.comp", {}, {"A_TYPE": F, "POOL_MAX": [0, 1], "KSIZE": [2, 3]}, {"0": 256}))
    # --- attention --------------------------------------------------------
    out.append(E("flash_attn", "flash_attn.comp", {},
                 {"KV_TYPE": F, "HEAD_DIM": [64, 80, 96, 112, 128, 256], "BR": [1, 4],
                  "MASK": [0, 1], "SOFTCAP": [0, 1]}))
    out.append(E("flash_attn_split", "flash_attn.comp", {"SPLIT_K": 1, "MASK": 1},
                 {"KV_TYPE": F, "HEAD_DIM": [64, 128, 256]}))
    out.append(E("flash_attn_split_reduce", "flash_attn_split_reduce.comp", {},
                 {"D_TYPE": F}, {"0": 64}))
    for q in LEGACY_QUANTS:
        out.append(E(f"flash_attn_{q}", "flash_attn.comp", qdef(q),
                     {"HEAD_DIM": [64, 128, 256], "BR": [1, 4], "MASK": [0, 1]}, bulk=True))
    out.append(E("soft_max", "soft_max.comp", {"D_TYPE": "float"},
                 {"A_TYPE": F, "MASK": [0, 1, 2], "SINKS": [0, 1]}, {"0": 256}))
    out.append(E("soft_max_back", "soft_max_back.comp", {"D_TYPE": "float"}, {"A_TYPE": F}, {"0": 128}))
    # --- normalisation, RoPE ----------------------------------------------
    for mode, nm in enumerate(["rms_norm", "norm", "l2_norm", "group_norm"]):
        out.append(E(nm, "norm.comp", {"NORM_MODE": mode, "D_TYPE": "float"},
                     {"A_TYPE": F, "FUSE_MUL": [0, 1]}, {"0": 512}))
    out.append(E("rms_norm_back", "rms_norm_back.comp", {"D_TYPE": "float"}, {"A_TYPE": F}, {"0": 512}))
    for mode, nm in enumerate(["rope_norm", "rope_neox", "rope_multi", "rope_vision"]):
        out.append(E(nm, "rope.comp", {"ROPE_MODE": mode}, {"A_TYPE": F, "D_TYPE": F, "ROPE_FF": [0, 1]}))
    # --- elementwise ------------------------------------------------------
    for op in BINARY_OPS:
        out.append(E(op, "binary.comp", {"OP": op},
                     {"A_TYPE": F, "B_TYPE": F, "D_TYPE": F, "ELEMS": [1, 2, 4]}, {"0": 512}, bulk=True))
    out.append(E("multi_add", "multi_add.comp", {"A_TYPE": "float", "D_TYPE": "float"},
                 {"N_SRC": [2, 3, 4, 6, 8]}, {"0": 512}))
    out.append(E("add_id", "add_id.comp", {"B_TYPE": "float", "D_TYPE": "float"}, {"A_TYPE": F}))
    for op in UNARY_OPS:
        out.append(E(op, "unary.comp", {"OP": op}, {"A_TYPE": F, "D_TYPE": F}, {"0": 512}, bulk=True))
    for op in GLU_OPS:
        out.append(E(op, "glu.comp", {"OP": op, "D_TYPE": "float"}, {"A_TYPE": F, "SPLIT": [0, 1]}, {"0": 512}, bulk=True))
    for op in ["silu", "gelu", "relu"]:
        out.append(E(f"{op}_back", "act_back.comp", {"OP": op, "D_TYPE": "float"}, {"A_TYPE": F}, {"0": 512}))
    for mode, nm in enumerate(["scale", "clamp", "fill"]):
        out.append(E(nm, "scalar_op.comp", {"OP_MODE": mode, "D_TYPE": "float"},
                     {"A_TYPE": F, "ELEMS": [1, 4]}, {"0": 512}))
    # --- reductions, misc -------------------------------------------------
    out.append(E("sum", "sum.comp", {}, {"A_TYPE": F, "USE_SUBGROUP": [0, 1]}, {"0": 256}))
    out.append(E("sum_rows", "sum_rows.comp", {"D_TYPE": "float"}, {"A_TYPE": F, "MEAN": [0, 1]}, {"0": 256}))
    out.append(E("argmax", "argmax.comp", {}, {"A_TYPE": F}, {"0": 256}))
    out.append(E("argsort", "argsort.comp", {"A_TYPE": "float"},
                 {"ORDER": [0, 1], "NCOLS_PADDED": [128, 256, 512, 1024]}))
    out.append(E("cumsum", "cumsum.comp", {"D_TYPE": "float"}, {"A_TYPE": F}, {"0": 256}))
    out.append(E("count_equal", "count_equal.comp", {}, {"A_TYPE": ["int", "float"]}, {"0": 256}))
    out.append(E("concat", "concat.comp", {}, {"A_TYPE": ["float", "float16_t", "int"], "DIM": [0, 1, 2, 3]},
                 {"0": 512}))
    for mode, nm in enumerate(["pad", "repeat", "roll"]):
        out.append(E(nm, "pad_repeat.comp", {"MODE": mode}, {"A_TYPE": F}, {"0": 512}))
    for mode, nm in enumerate(["upscale_nearest", "upscale_bilinear", "upscale_bicubic"]):
        out.append(E(nm, "upscale.comp", {"MODE": mode, "D_TYPE": "float"}, {"A_TYPE": F}, {"0": 512}))
    out.append(E("diag_mask_inf", "diag_mask_inf.comp", {"D_TYPE": "float"}, {"A_TYPE": F}))
    out.append(E("timestep_embedding", "timestep_embedding.comp", {}, {"D_TYPE": F}))
    out.append(E("arange", "timestep_embedding.comp", {"ARANGE": 1, "D_TYPE": "float"}))
    out.append(E("ssm_scan", "ssm_scan.comp", {}, {"D_STATE": [16, 128]}))
    out.append(E("ssm_conv", "ssm_conv.comp", {}, {"D_CONV": [3, 4]}))
    out.append(E("rwkv_wkv6", "rwkv_wkv.comp", {"VERSION": 6}))
    out.append(E("rwkv_wkv7", "rwkv_wkv.comp", {"VERSION": 7}))
    out.append(E("opt_step_adamw", "opt_step_adamw.comp"))
    # --- type conversions: single-variant entries (also the exact-N filler)
    out.append(E("cpy", "cpy.comp", {"CONTIG": 0},
                 {"A_TYPE": ["float", "float16_t", "int"], "D_TYPE": ["float", "float16_t", "int"]}, {"0": 512}))
    for a in STORAGE_TYPES:
        for d in STORAGE_TYPES:
            out.append(E(f"cpy_{SHORT[a]}_{SHORT[d]}", "cpy.comp",
                         {"CONTIG": 1, "A_TYPE": a, "D_TYPE": d}, None, {"0": 512}, bulk=True))
    return out


# ---------------------------------------------------------------------------
# Expansion, selection
# ---------------------------------------------------------------------------

def entry_size(e):
    n = 1
    for vals in e["variants"].values():
        n *= len(vals)
    return n


def expand(e):
    """(name, defines) of every variant of an entry, kcache's expansion."""
    keys = sorted(e["variants"])
    for point in itertools.product(*(e["variants"][k] for k in keys)):
        name = e["name"]
        if keys:
            name += "[" + ",".join(f"{k}={v}" for k, v in zip(keys, point)) + "]"
        d = dict(e["defines"])
        d.update(zip(keys, point))
        yield name, d


def thin(entries, n):
    """Whole entries from `entries`, in order, totalling about n variants,
    spread proportionally over the list (Bresenham-style)."""
    total = sum(entry_size(e) for e in entries)
    if n >= total:
        return list(entries)
    ratio = n / total
    kept = []
    count = cum = 0
    for e in entries:
        s = entry_size(e)
        cum += s
        if count + s / 2 <= cum * ratio and count + s <= n:
            kept.append(e)
            count += s
    return kept


def select(entries, n):
    """Deterministic subset of whole entries totalling n variants (or as
    close as entry sizes allow): every one-of-a-kind entry, then a
    proportional share of the bulk entries; if even the former exceed n,
    a proportional share of everything."""
    total = sum(entry_size(e) for e in entries)
    if n >= total:
        return list(entries), total
    core = [e for e in entries if not e["bulk"]]
    core_size = sum(entry_size(e) for e in core)
    if core_size <= n:
        keep = {id(e) for e in core}
        keep |= {id(e) for e in thin([e for e in entries if e["bulk"]], n - core_size)}
    else:
        keep = {id(e) for e in thin(entries, n)}
    count = sum(entry_size(e) for e in entries if id(e) in keep)
    # Top up, in order, with entries that still fit (the single-variant
    # cpy_* entries at the end make the total exact in practice).
    for e in entries:
        if id(e) not in keep and count + entry_size(e) <= n:
            keep.add(id(e))
            count += entry_size(e)
    return [e for e in entries if id(e) in keep], count


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(v)


def toml_inline(d):
    return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in d.items()) + " }"


DIRECTIVE_RE = re.compile(r"^\s*#\s*(\w+)\s*(.*?)\s*(?://.*)?$")
IDENT_RE = re.compile(r"\b[A-Za-z_]\w*\b")


def pp_eval(expr, macros):
    """Evaluate a preprocessor #if expression (the subset the corpus uses)."""
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", expr)
    for _ in range(16):
        new = IDENT_RE.sub(lambda m: macros.get(m.group(0)) or "0", expr)
        if new == expr:
            break
        expr = new
    expr = re.sub(r"(\d+)[uU]\b", r"\1", expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    return bool(eval(expr, {"__builtins__": {}}, {}))


def included_files(source_text, defines):
    """include/ files a compile of source_text with these defines opens:
    a small preprocessor honouring #if/#ifdef/#elif/#else, #define, #undef
    (object-like macros) and quoted #include."""
    macros = {k: str(v) for k, v in defines.items()}
    used = []

    def run(text):
        stack = []  # [parent_active, active, taken]
        for line in text.splitlines():
            m = DIRECTIVE_RE.match(line)
            if not m:
                continue
            d, rest = m.group(1), m.group(2)
            active = not stack or stack[-1][1]
            if d in ("if", "ifdef", "ifndef"):
                if not active:
                    stack.append([False, False, True])
                    continue
                if d == "if":
                    cond = pp_eval(rest, macros)
                else:
                    cond = (rest.split()[0] in macros) == (d == "ifdef")
                stack.append([True, cond, cond])
            elif d == "elif":
                top = stack[-1]
                cond = top[0] and not top[2] and pp_eval(rest, macros)
                top[1] = cond
                top[2] = top[2] or cond
            elif d == "else":
                top = stack[-1]
                top[1] = top[0] and not top[2]
                top[2] = True
            elif d == "endif":
                stack.pop()
            elif not active:
                continue
            elif d == "define":
                dm = re.match(r"(\w+)(\()?\s*(.*)", rest)
                macros[dm.group(1)] = "" if dm.group(2) else dm.group(3)
            elif d == "undef":
                macros.pop(rest.split()[0], None)
            elif d == "include":
                inc = re.match(r'"([^"]+)"', rest).group(1)
                if inc not in INCLUDES:
                    raise SystemExit(f"unknown include {inc}")
                if inc not in used:
                    used.append(inc)
                run(INCLUDES[inc])
        assert not stack, "unbalanced #if"

    run(source_text)
    return used


def main():
    ap = argparse.ArgumentParser(description="Generate the kcache benchmark corpus.")
    ap.add_argument("out_dir")
    ap.add_argument("--variants", type=int, default=1600, help="number of kernel variants (default 1600)")
    ap.add_argument("--set", choices=["corpus", "library"], default="corpus",
                    help="corpus (default) or the library-like set (every variant; --variants ignored)")
    args = ap.parse_args()

    global SHADERS
    if args.set == "library":
        SHADERS = LIBRARY
        entries = library_catalogue()
        args.variants = sum(entry_size(e) for e in entries)
    else:
        entries = catalogue()
    total = sum(entry_size(e) for e in entries)
    names = [e["name"] for e in entries]
    assert len(set(names)) == len(names), "duplicate entry names"
    for e in entries:
        assert e["source"] in SHADERS, e["source"]
    if args.variants < 1:
        raise SystemExit("--variants must be >= 1")
    chosen, count = select(entries, args.variants)
    if count != args.variants:
        print(f"note: {count} variants (catalogue holds {total}; asked for {args.variants})", file=sys.stderr)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("shaders", "include"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
        (out / sub).mkdir()
    (out / "spv").mkdir(exist_ok=True)
    (out / "spv_g").mkdir(exist_ok=True)

    # Expand every variant and record the include files it opens.
    variants = []  # (entry, name, defines, includes)
    for e in chosen:
        for name, defines in expand(e):
            variants.append((e, name, defines, included_files(SHADERS[e["source"]], defines)))
    sources = sorted({e["source"] for e in chosen})
    used_includes = sorted({inc for v in variants for inc in v[3]})
    for s in sources:
        (out / "shaders" / s).write_text(SHADERS[s])
    for inc in used_includes:
        (out / "include" / inc).write_text(INCLUDES[inc])

    # Manifest.
    lines = [
        "# kcache benchmark corpus (generated by scripts/gen_corpus.py; do not edit).",
        f"# {len(chosen)} kernel entries, {count} variants.",
        "",
        "[defaults]",
        'target = "vulkan1.2"',
        'optimize = "performance"',
        'include_dirs = ["include"]',
        "",
    ]
    for e in chosen:
        lines.append("[[kernel]]")
        lines.append(f'name = "{e["name"]}"')
        lines.append(f'source = "shaders/{e["source"]}"')
        if e["target"]:
            lines.append(f'target = "{e["target"]}"')
        if e["defines"]:
            lines.append(f"defines = {toml_inline(e['defines'])}")
        if e["spec"]:
            lines.append("spec_constants = { " + ", ".join(f'"{k}" = {v}' for k, v in e["spec"].items()) + " }")
        if e["variants"]:
            lines.append("[kernel.variants]")
            for k, vals in e["variants"].items():
                lines.append(f"{k} = [" + ", ".join(toml_value(v) for v in vals) + "]")
        lines.append("")
    (out / "kcache.toml").write_text("\n".join(lines))

    # Command lists and the per-include usage.
    glslc_lines = []
    glslang_lines = []
    kernels = []
    usage = {inc: 0 for inc in used_includes}
    safe_seen = set()
    for e, name, defines, incs in variants:
        sn = safe_name(name)
        assert sn not in safe_seen, f"safe name clash: {sn}"
        safe_seen.add(sn)
        kernels.append(name)
        dflags = " ".join(f"-D{k}={defines[k]}" for k in sorted(defines))
        src = f"shaders/{e['source']}"
        env = e["target"] or "vulkan1.2"
        glslc_lines.append(
            f"glslc -O --target-env={env} -fshader-stage=compute -I include {dflags} -o spv/{sn}.spv {src}")
        glslang_lines.append(
            f"glslangValidator -V --target-env {env} -S comp -Iinclude {dflags} -o spv_g/{sn}.spv {src}"
            f" && spirv-opt -O spv_g/{sn}.spv -o spv_g/{sn}.spv")
        for inc in incs:
            usage[inc] += 1
    (out / "commands.txt").write_text("\n".join(glslc_lines) + "\n")
    (out / "commands_glslang.txt").write_text("\n".join(glslang_lines) + "\n")

    # The include whose users are closest to a tenth of the corpus (ties: name).
    touch = min(used_includes, key=lambda inc: (abs(usage[inc] / count - 0.10), inc)) if used_includes else None
    corpus = {
        "variants": count,
        "touch_include": f"include/{touch}" if touch else None,
        "affected_variants": usage[touch] if touch else 0,
        "kernels": kernels,
    }
    (out / "corpus.json").write_text(json.dumps(corpus, indent=1) + "\n")

    print(f"{out}: {len(chosen)} entries, {count} variants, {len(sources)} shaders, {len(used_includes)} includes")
    if touch:
        print(f"touch_include include/{touch}: {usage[touch]} variants ({100.0 * usage[touch] / count:.1f}%)")
    for inc in used_includes:
        print(f"  include/{inc}: {usage[inc]} variants ({100.0 * usage[inc] / count:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
