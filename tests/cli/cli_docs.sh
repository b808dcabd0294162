#!/usr/bin/env bash
# The man page and bash completion generated from --help (scripts/gen_cli_docs.py)
# document every subcommand, a subcommand's own subcommands included
# ("manifest from-commands", "remote check"), with their options; the
# completion offers those inner subcommands and their options, and (bash and
# zsh) the kernel and namespace names of the store the command line names.
# README "Environment", --help and the man page list the same variables.
source "$(dirname "$0")/lib.bash"

python3 "$KCACHE_SOURCE_DIR/scripts/gen_cli_docs.py" "$KCACHE" --man "$WORK/kcache.1" --bash "$WORK/kcache.bash" \
  --zsh "$WORK/_kcache" ||
  fail "gen_cli_docs failed"

note "the man page has every inner subcommand with its options"
expect_in "$WORK/kcache.1" '.SS kcache manifest from\-commands'
expect_in "$WORK/kcache.1" '.SS kcache remote check'
# An option only `manifest from-commands` has, under its own heading.
awk '/^\.SS kcache manifest from\\-commands/{on=1; next} /^\.SS/{on=0} on' "$WORK/kcache.1" >"$WORK/from_commands.1"
expect_in "$WORK/from_commands.1" '\-\-no\-variants'
if grep -qF -- '\-\-no\-variants' <(awk '/^\.SS kcache manifest$/{on=1; next} /^\.SS/{on=0} on' "$WORK/kcache.1"); then
  fail "--no-variants is listed under 'kcache manifest' itself"
fi

# complete WORDS...: what the generated completion offers after WORDS (the
# last word is the one being completed).
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kcache; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$WORK/kcache.bash" "$@"
}

note "completion: top level, inner subcommands, inner options"
complete_words kcache ma >"$WORK/c1"
expect_in "$WORK/c1" manifest
complete_words kcache manifest "" >"$WORK/c2"
[[ $(cat "$WORK/c2") == from-commands ]] || { cat "$WORK/c2"; fail "kcache manifest <TAB> should offer from-commands"; }
complete_words kcache manifest from-commands --no >"$WORK/c3"
expect_in "$WORK/c3" --no-variants
complete_words kcache remote check --js >"$WORK/c4"
expect_in "$WORK/c4" --json
complete_words kcache build --ba >"$WORK/c5"
expect_in "$WORK/c5" --backend
note "completion: kernel and namespace names from the store of the command line"
mkdir -p p bin
printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() {}\n' >p/k.comp
printf '[[kernel]]\nname = "saxpy"\nsource = "k.comp"\n[kernel.variants]\nT = ["float", "int"]\n' >p/kcache.toml
expect_exit 0 "$KCACHE" build p/kcache.toml --store S
ln -sf "$KCACHE" bin/kcache
PATH="$WORK/bin:$PATH" complete_words kcache get --store S sa >"$WORK/c6"
[[ $(cat "$WORK/c6") == $'saxpy[T=float]\nsaxpy[T=int]' ]] || { cat "$WORK/c6"; fail "get <TAB> should offer the store's kernels"; }
PATH="$WORK/bin:$PATH" complete_words kcache inspect --store S --namespace sp >"$WORK/c7"
[[ $(cat "$WORK/c7") == spirv/vulkan1.2 ]] || { cat "$WORK/c7"; fail "--namespace <TAB> should offer the store's namespaces"; }
PATH="$WORK/bin:$PATH" complete_words kcache get --store nowhere sa >"$WORK/c8"
[[ -z $(tr -d "\n" <"$WORK/c8") ]] || fail "a missing store completed something"

note "zsh completion: the same names, through zsh's bashcompinit"
command -v zsh >/dev/null || fail "zsh is not installed (scripts/setup installs it)"
# compadd is zsh's completion builtin: outside a completion widget, a stub
# prints the array of candidates it is given.
PATH="$WORK/bin:$PATH" zsh -f -c 'compadd() { print -l -- ${(P)${@[-1]}} }; compset() { return 1 }
  words=(kcache get --store S sa); CURRENT=5; source "$1"' _ "$WORK/_kcache" >"$WORK/z1" 2>"$WORK/z1.err" ||
  { cat "$WORK/z1.err"; fail "the zsh completion failed"; }
[[ $(cat "$WORK/z1") == $'saxpy[T=float]\nsaxpy[T=int]' ]] || { cat "$WORK/z1" "$WORK/z1.err"; fail "zsh: get <TAB>"; }

note "README, --help and the man page list the same environment variables"
# names VAR-LIKE words of a section: KCACHE_*, NO_COLOR, XDG_* at a line's start.
"$KCACHE" --help >"$WORK/help"
awk '/^Environment:/{on=1; next} /^[A-Z][A-Za-z -]*:$/{on=0} on' "$WORK/help" |
  grep -oE '^  [A-Z][A-Z_]+' | tr -d ' ' | sort -u >"$WORK/env_help"
awk '/^\.SH ENVIRONMENT/{on=1; next} /^\.SH/{on=0} on' "$WORK/kcache.1" |
  grep -oE '^  [A-Z][A-Z\\_]+' | tr -d ' \\' | sort -u >"$WORK/env_man"
awk '/^### Environment/{on=1; next} /^##/{on=0} on' "$KCACHE_SOURCE_DIR/README.md" |
  grep -oE '^\| `[A-Z][A-Z_]+`' | tr -d '|` ' | sort -u >"$WORK/env_readme"
(($(wc -l <"$WORK/env_help") >= 10)) || { cat "$WORK/env_help"; fail "--help lists too few variables"; }
diff "$WORK/env_help" "$WORK/env_man" || fail "--help and the man page list different environment variables"
diff "$WORK/env_help" "$WORK/env_readme" || fail "--help and README \"Environment\" list different variables"
echo "PASS"
