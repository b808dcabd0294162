#!/usr/bin/env python3
"""Generates kcache's man page and bash completion from the CLI's own --help.

    gen_cli_docs.py KCACHE [--man OUT.1 [--man-sections FILE]] [--bash OUT] [--zsh OUT]

KCACHE is the built binary. Every fact in both outputs (subcommands, options,
positionals, descriptions, the environment and exit-code sections) comes from
`kcache --help` and `kcache SUBCOMMAND --help`, so the documentation cannot
disagree with the program: the build regenerates them whenever kcache changes
(cmake/install.cmake). The man page's hand-written sections (MANIFEST,
FILES, EXAMPLES, SEE ALSO: docs/man/kcache-sections.1) are appended. The zsh
completion is the bash one run through zsh's bashcompinit. Parses CLI11's help layout: a description, "Usage:",
then sections ("Positionals:", "Options:", "Subcommands:") whose entries
start with two spaces and whose descriptions start in a fixed column; text
after the last section, up to the end, is the footer.
"""
import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field

SECTIONS = ("Positionals:", "Options:", "Subcommands:")


@dataclass
class Entry:
    names: str  # "-j,--jobs UINT", "manifest TEXT=kcache.toml", "build"
    text: str


@dataclass
class Help:
    description: str
    usage: str
    sections: dict = field(default_factory=dict)  # section -> [Entry]
    footer: str = ""


# The launcher's subcommands (`kcache glslc ARGS`): no help of their own.
LAUNCHERS = {"glslc", "glslangValidator"}


def run_help(kcache, *words):
    out = subprocess.run([kcache, *words, "--help"], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    return out.stdout


def parse(text):
    lines = text.rstrip("\n").split("\n")
    usage_at = next(i for i, l in enumerate(lines) if l.startswith("Usage: "))
    h = Help(description="\n".join(lines[:usage_at]).strip(), usage=lines[usage_at][len("Usage: "):])
    section, entries, rest = None, None, []
    for line in lines[usage_at + 1:]:
        if line in SECTIONS:
            section, entries = line[:-1], []
            h.sections[section] = entries
            continue
        if section is None or (line and not line.startswith(" ")):
            section = None
            rest.append(line)
            continue
        if not line.strip():
            continue
        if re.match(r"^  \S", line):  # a new entry: names, 2+ spaces, description
            m = re.match(r"^  (\S(?:.*?\S)?)(?:\s{2,}(.*))?$", line)
            entries.append(Entry(m.group(1), m.group(2) or ""))
        else:  # continuation of the previous entry's description
            entries[-1].text = (entries[-1].text + " " + line.strip()).strip()
    h.footer = "\n".join(rest).strip()
    return h


def option_words(names):
    """'-j,--jobs UINT' -> (['-j', '--jobs'], True); '--json' -> (['--json'], False)."""
    spec = names.split(" ")[0]
    spec = re.sub(r"\{[^}]*\}$", "", spec)  # CLI11's flag default, e.g. {false}
    words = [w for w in spec.split(",") if w.startswith("-")]
    takes_value = len(names.split(" ")) > 1 and not names.split(" ")[1].startswith("{")
    return words, takes_value


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + l if l.startswith((".", "'")) else l) for l in text.split("\n"))


def bold_opts(names):
    words, _ = option_words(names)
    rest = names[len(names.split(" ")[0]):].strip()
    head = ", ".join("\\fB" + roff(w) + "\\fR" for w in words) or "\\fB" + roff(names.split(" ")[0]) + "\\fR"
    return head + (" \\fI" + roff(rest) + "\\fR" if rest else "")


def man_page(version, top, subs):
    out = [f'.TH KCACHE 1 "" "kcache {roff(version)}" "User Commands"', ".SH NAME"]
    first, _, more = top.description.partition("\n")
    out.append(roff(first.replace("\u2014", "-")))
    out += [".SH SYNOPSIS", f"\\fBkcache\\fR {roff(top.usage[len('kcache '):])}"]
    out += [".SH DESCRIPTION", roff(more.strip()) or roff(first)]
    out += [".SH OPTIONS"] + [f".TP\n{bold_opts(e.names)}\n{roff(e.text)}" for e in top.sections.get("Options", [])]
    out.append(".SH COMMANDS")
    for name, h in subs:
        out += [f".SS kcache {roff(name)}", f"\\fBUsage:\\fR {roff(h.usage)}", ".PP", roff(h.description)]
        for section in ("Positionals", "Options"):
            items = [e for e in h.sections.get(section, []) if e.names.split(" ")[0] != "-h,--help"]
            if items:
                out += [".PP", f"\\fI{section}:\\fR"]
                out += [f".TP\n{bold_opts(e.names)}\n{roff(e.text)}" for e in items]
    # The top-level footer holds the environment and exit-code paragraphs;
    # "Title:" lines become sections.
    for block in re.split(r"\n(?=[A-Z][A-Za-z -]*:\n)", top.footer):
        title, _, body = block.partition("\n")
        if title.endswith(":") and body:
            out += [f".SH {roff(title[:-1].upper())}", ".nf", roff(body), ".fi"]
        else:
            out += [".SH NOTES", roff(block)]
    return "\n".join(out) + "\n"


def bash_completion(top, subs):
    top_opts = [w for e in top.sections.get("Options", []) for w in option_words(e.names)[0]]
    nested = {}  # "manifest" -> ["from-commands"]
    for name, _ in subs:
        if " " in name:
            outer, inner = name.split(" ", 1)
            nested.setdefault(outer, []).append(inner)
    parents = sorted(nested)
    inner_cases = [f'          {p}) COMPREPLY=($(compgen -W "{" ".join(nested[p])}" -- "$cur")) ;;' for p in parents]
    cases, valued, choices = [], [], {}
    for name, h in subs:
        words, takes = [], []
        for e in h.sections.get("Options", []):
            ws, tv = option_words(e.names)
            words += ws
            m = re.search(r":\{([^}]*)\}", e.names)  # CLI11's value set, e.g. TEXT:{spirv,vulkan}
            if m:
                choices.setdefault(" ".join(m.group(1).split(",")), set()).update(ws)
            elif tv:
                takes += ws
        cases.append(f'    "{name}") opts="{" ".join(words)}" ;;')
        valued += takes
    valued = sorted(set(valued) - set().union(*choices.values()))
    choice_cases = "".join(f'    {"|".join(sorted(ws))})\n      COMPREPLY=($(compgen -W "{c}" -- "$cur"))\n      return ;;\n'
                           for c, ws in sorted(choices.items()))
    return f"""# bash completion for kcache, generated by scripts/gen_cli_docs.py from
# `kcache --help` and `kcache SUBCOMMAND --help`; do not edit.
# The names the store of this command line holds (--store DIR, else the
# default store): `kcache __complete kernels|namespaces`.
_kcache_names() {{
  local i store=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ ${{COMP_WORDS[i]}} == --store ]] && store=(--store "${{COMP_WORDS[i+1]}}")
  done
  "${{COMP_WORDS[0]}}" __complete "$1" "${{store[@]}}" 2>/dev/null
}}
_kcache() {{
  local cur prev sub i opts
  cur=${{COMP_WORDS[COMP_CWORD]}}
  prev=${{COMP_WORDS[COMP_CWORD-1]}}
  sub=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${{COMP_WORDS[i]}} in -*) ;; *) sub=${{COMP_WORDS[i]}}; break ;; esac
  done
  # A subcommand with subcommands of its own ("manifest from-commands"):
  # the next word that is not an option names the inner one.
  case $sub in
    {'|'.join(parents) or '--'})
      local inner=""
      for ((i = i + 1; i < COMP_CWORD; i++)); do
        case ${{COMP_WORDS[i]}} in -*) ;; *) inner=${{COMP_WORDS[i]}}; break ;; esac
      done
      if [[ -z $inner && $cur != -* ]]; then
        case $sub in
{chr(10).join(inner_cases)}
        esac
        return
      fi
      [[ -n $inner ]] && sub="$sub $inner" ;;
  esac
  if [[ -z $sub ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "{' '.join(top_opts)}" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "{' '.join(n for n, _ in subs if " " not in n)}" -- "$cur"))
    fi
    return
  fi
  case $prev in
    --namespace)
      COMPREPLY=($(compgen -W "$(_kcache_names namespaces)" -- "$cur"))
      return ;;
{choice_cases}    {'|'.join(valued) or '--'})
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
  esac
  case $sub in
{chr(10).join(cases)}
    *) opts="" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ $sub == get || $sub == inspect ]]; then
    # A kernel the store holds (inspect: or a bundle file).
    COMPREPLY=($(compgen -W "$(_kcache_names kernels)" -- "$cur"))
    [[ $sub == inspect ]] && COMPREPLY+=($(compgen -f -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -F _kcache kcache
"""


def zsh_completion(bash):
    """The bash completion as a zsh completion function (#compdef), run by
    zsh's bashcompinit: one generated source for both shells."""
    body = bash.replace("_kcache()", "_kcache_bash()").replace("complete -o filenames -F _kcache kcache\n", "")
    body = "\n".join(l for l in body.split("\n") if not l.startswith("#"))
    return f"""#compdef kcache
# zsh completion for kcache, generated by scripts/gen_cli_docs.py: the bash
# completion (subcommands, options, and the store's kernel and namespace
# names) through zsh's bashcompinit; do not edit.
autoload -U +X bashcompinit && bashcompinit
{body}
_bash_complete -o filenames -F _kcache_bash
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kcache")
    ap.add_argument("--man")
    ap.add_argument("--man-sections", help="roff text appended to the man page")
    ap.add_argument("--bash")
    ap.add_argument("--zsh")
    a = ap.parse_args()
    top = parse(run_help(a.kcache))
    # Hidden subcommands (internal workers) are not in the list, so not
    # documented. A subcommand's own subcommands ("manifest from-commands")
    # follow it, named by both words.
    subs = []
    for e in top.sections.get("Subcommands", []):
        if e.names in LAUNCHERS:
            # Their options are the tools' own: `kcache glslc --help` is glslc's help.
            subs.append((e.names, Help(description=e.text, usage=f"kcache {e.names} [ARGS...]")))
            continue
        h = parse(run_help(a.kcache, e.names))
        subs.append((e.names, h))
        for inner in h.sections.get("Subcommands", []):
            subs.append((f"{e.names} {inner.names}", parse(run_help(a.kcache, e.names, inner.names))))
    if not subs:
        sys.exit("gen_cli_docs: no subcommands found in `kcache --help`")
    version = subprocess.run([a.kcache, "--version"], capture_output=True, text=True, check=True)
    version = version.stdout.split("\n")[0].split(" ")[-1]
    if a.man:
        with open(a.man, "w") as f:
            f.write(man_page(version, top, subs))
            if a.man_sections:
                f.write(open(a.man_sections).read())
    if a.bash:
        with open(a.bash, "w") as f:
            f.write(bash_completion(top, subs))
    if a.zsh:
        with open(a.zsh, "w") as f:
            f.write(zsh_completion(bash_completion(top, subs)))


if __name__ == "__main__":
    main()
