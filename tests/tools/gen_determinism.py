#!/usr/bin/env python3
"""Writes a GLSL project whose kernels stress what made glslang's output
depend on the heap (issue 39): element types of 8, 16 and 64 bits chosen
through a #define, conversions of literals to them (`D_TYPE(0)`, `D_TYPE(-2)`,
`D_TYPE(1.5)`) stored in branches, constant folding over them (sign() of a
64-bit constant, which glslang 12.0.0 folds from memory it never wrote),
constant tables of narrow types, and a large shared include (about 116 KB,
as a real ML library's type header), every kernel a variant of the manifest.

Usage: gen_determinism.py DIR [--kernels N] [--only NAME]... [--reverse]
                          [--alone ROOT]
Writes DIR/kcache.toml, DIR/shaders/*.comp, DIR/shaders/include/types.glsl
and prints the manifest's kernel names, one per line. --only keeps the
named kernels in the manifest (NAME and NAME_opt for a base name),
--reverse lists them last first. --alone ROOT also writes, for each base
kernel, two projects of that kernel alone at folder depths 1 to 6 under
ROOT (ROOT/d1/d2/.../<base>), and prints "ALONE <project> <base>" lines.
Deterministic: the same arguments write the same bytes.
"""
import argparse
import functools
import pathlib

# (D_TYPE, its vector of 4); the kernels enable every arithmetic type
# through GL_EXT_shader_explicit_arithmetic_types.
TYPES = [
    ("float16_t", "f16vec4"),
    ("int16_t", "i16vec4"),
    ("uint16_t", "u16vec4"),
    ("int8_t", "i8vec4"),
    ("uint8_t", "u8vec4"),
    ("float", "vec4"),
    ("double", "dvec4"),
    ("int64_t", "i64vec4"),
]


@functools.lru_cache(maxsize=None)
def types_header():
    """About 130 KB of block structs, narrow-type tables and helpers."""
    out = [
        "#ifndef TYPES_GLSL\n#define TYPES_GLSL\n",
        "#extension GL_EXT_shader_explicit_arithmetic_types : require\n",
        "#extension GL_EXT_shader_16bit_storage : require\n",
        "#extension GL_EXT_shader_8bit_storage : require\n",
    ]
    for i in range(180):
        out.append(
            f"struct block_q{i} {{\n  float16_t d;\n  float16_t m;\n  uint8_t qs[{16 + i % 16}];\n"
            f"  int16_t scales[{4 + i % 4}];\n}};\n"
        )
        out.append(
            f"const int8_t kvalues_{i}[16] = int8_t[16]("
            + ", ".join(f"int8_t({(j * 17 + i) % 255 - 127})" for j in range(16))
            + ");\n"
        )
        out.append(
            f"const float16_t kscale_{i}[8] = float16_t[8]("
            + ", ".join(f"float16_t({(j - 4) * 0.25 + i % 3})" for j in range(8))
            + ");\n"
        )
        out.append(
            f"float16_t dequant_{i}(uint8_t q, float16_t d) {{\n"
            f"  return d * float16_t(int(q) - {i % 8}) + float16_t(0) * kscale_{i}[q & uint8_t(7)];\n}}\n"
        )
    out.append("#endif\n")
    return "".join(out)


KERNEL = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#include "include/types.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A {{ A_TYPE data_a[]; }};
layout(std430, binding = 1) writeonly buffer D {{ D_TYPE data_d[]; }};
layout(push_constant) uniform P {{ uint n; uint k; }} p;
const D_TYPE folded = D_TYPE(0) + D_TYPE(1) * D_TYPE(3) - D_TYPE(2);
const D_VEC zero4 = D_VEC(0);
void main() {{
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.n) {{
    return;
  }}
  if (i % {m} == 0u) {{
    data_d[i] = D_TYPE(0);
  }} else if (i % {m} == 1u) {{
    data_d[i] = D_TYPE(-2) + folded;
  }} else if (i % {m} == 2u) {{
    data_d[i] = D_TYPE(1.5) * D_TYPE(data_a[i]) + zero4.y;
  }} else if (i % {m} == 3u) {{
    // glslang 12.0.0 folds sign() of a 64-bit constant from 4 bytes it
    // wrote and 4 its pool page held before (issue 39).
    data_d[i] = D_TYPE(sign(int64_t(-5)) + int64_t(sign(int16_t(-3))));
  }} else {{
    data_d[i] = D_TYPE(data_a[i]) + D_TYPE(dequant_{q}(uint8_t(i & 255u), float16_t(0)));
  }}
}}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--kernels", type=int, default=len(TYPES) * 2)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--reverse", action="store_true")
    ap.add_argument("--alone")
    a = ap.parse_args()
    write_project(pathlib.Path(a.dir), a.kernels, a.only, a.reverse)
    if a.alone:
        for n in list(range(a.kernels)) + [-1]:
            base = kernel_name(n)
            # Two depths per kernel, so that every depth from 1 to 6 is used.
            for depth in sorted({n % 6 + 1, (n + 3) % 6 + 1}):
                project = pathlib.Path(a.alone, *[f"d{k}" for k in range(1, depth + 1)], base)
                write_project(project, a.kernels, [base], False, quiet=True)
                print(f"ALONE {project} {base}")


# A small kernel of its own (no include): glslang's pool pages are then
# fresh from operator new[] when it folds sign() of 64-bit constants, so
# what a page held before (another kernel's compile, in the same process)
# is what an unset constant half would show.
SIGN_KERNEL = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer D { int64_t d64[]; };
layout(std430, binding = 1) buffer E { int e[]; };
void main() {
  d64[0] = sign(int64_t(-5));
  d64[1] = sign(int64_t(7)) + sign(int64_t(0)) * int64_t(3);
  e[0] = int(sign(int16_t(-5))) + int(sign(int8_t(-5)));
}
"""
SIGN_NAME = "zz_sign_fold"


def kernel_name(n):
    return SIGN_NAME if n < 0 else f"k{n:02d}_{TYPES[n % len(TYPES)][0]}"


def write_project(root, kernels, only, reverse, quiet=False):
    (root / "shaders/include").mkdir(parents=True, exist_ok=True)
    (root / "shaders/include/types.glsl").write_text(types_header())
    toml = []
    names = []
    (root / f"shaders/{SIGN_NAME}.comp").write_text(SIGN_KERNEL)
    for n in list(range(kernels)) + [-1]:
        if n < 0:  # last in the manifest: compiled after every other kernel
            if only and SIGN_NAME not in only:
                continue
            src = f"shaders/{SIGN_NAME}.comp"
            toml.append(f'[[kernel]]\nname = "{SIGN_NAME}"\nsource = "{src}"\noptimize = "none"\nstrip = false\n')
            toml.append(f'[[kernel]]\nname = "{SIGN_NAME}_opt"\nsource = "{src}"\noptimize = "performance"\n')
            names += [SIGN_NAME, f"{SIGN_NAME}_opt"]
            continue
        d_type, d_vec = TYPES[n % len(TYPES)]
        a_type = TYPES[(n // len(TYPES) + n + 3) % len(TYPES)][0]
        name = kernel_name(n)
        src = f"shaders/{name}.comp"
        (root / src).write_text(KERNEL.format(m=3 + n % 4, q=(n * 37) % 180))
        defines = f'D_TYPE = "{d_type}", D_VEC = "{d_vec}", A_TYPE = "{a_type}"'
        if only and name not in only and f"{name}_opt" not in only:
            continue
        # glslang's own output, unoptimised and unstripped (what glslc
        # writes without -O), and optimised: spirv-opt folds what it left.
        toml.append(
            f'[[kernel]]\nname = "{name}"\nsource = "{src}"\noptimize = "none"\nstrip = false\n'
            f"defines = {{ {defines} }}\n"
        )
        toml.append(
            f'[[kernel]]\nname = "{name}_opt"\nsource = "{src}"\noptimize = "performance"\n'
            f"defines = {{ {defines} }}\n"
        )
        names += [name, f"{name}_opt"]
    if reverse:
        toml.reverse()
        names.reverse()
    (root / "kcache.toml").write_text("\n".join(toml))
    if not quiet:
        print("\n".join(names))


if __name__ == "__main__":
    main()
