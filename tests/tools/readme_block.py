#!/usr/bin/env python3
"""Prints a fenced code block of README.md, as printed, for the tests that
run the README (tests/cli/readme_blocks.sh, remote_readme.sh).

Usage: readme_block.py README HEADING LANG [N]
  HEADING  the line of the section ("## A quick tour")
  LANG     the block's fence language (sh, nginx, conf, cmake, yaml)
  N        which such block of the section, from 1 (default 1)
Exits 1, naming what is missing, when there is no such block.
"""
import sys

readme, heading, lang = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 1
lines = open(readme, encoding="utf-8").read().split("\n")
try:
    start = lines.index(heading)
except ValueError:
    sys.exit(f"readme_block: no line '{heading}' in {readme}")
level = heading.split(" ")[0]
found = 0
i = start + 1
while i < len(lines):
    line = lines[i]
    if line.startswith("#") and line.split(" ")[0] in ("#", "##", "###")[: len(level)]:
        break  # the next section of the same or a higher level
    if line.startswith("```"):  # a block: its lines are no headings
        end = lines.index("```", i + 1)
        if line == "```" + lang:
            found += 1
            if found == n:
                print("\n".join(lines[i + 1 : end]))
                sys.exit(0)
        i = end
    i += 1
sys.exit(f"readme_block: section '{heading}' has no {lang} block number {n}")
