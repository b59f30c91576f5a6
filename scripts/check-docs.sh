#!/usr/bin/env bash
# The documentation stays true to the code it describes:
#   - docs/troubleshooting.md has a section `## Name (value)` for every status code of
#     include/chiprt/status.h (Cancelled and InheritedWorker included, and every code added
#     later), and no section for a code that does not exist;
#   - each file of examples/standalone/ that README.md shows is shown exactly: the fenced block
#     after the line "[`FILE`](examples/standalone/FILE)" equals the file, byte for byte;
#   - every code block of the Markdown pages is closed.
# Prints each difference.
#   scripts/check-docs.sh [ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
failures=0

# Status codes: the X-macro list `X(Name, value, ...` of status.h.
codes=$(sed -nE 's/^[[:space:]]*X\(([A-Za-z]+), ([0-9]+),.*/\1 \2/p' include/chiprt/status.h)
[[ -n $codes ]] || { echo "check-docs: no status codes found in include/chiprt/status.h"; exit 1; }
while read -r name value; do
  if ! grep -qxF "## $name ($value)" docs/troubleshooting.md; then
    echo "docs/troubleshooting.md: no section '## $name ($value)' for the status code $name"
    failures=$((failures + 1))
  fi
done <<<"$codes"
while IFS= read -r heading; do
  if ! grep -qxF "${heading#\#\# }" <<<"$(sed -E 's/^([A-Za-z]+) ([0-9]+)$/\1 (\2)/' <<<"$codes")"; then
    echo "docs/troubleshooting.md: section '$heading' names no status code of status.h"
    failures=$((failures + 1))
  fi
done < <(grep -E '^## ' docs/troubleshooting.md)

# README.md's copy of examples/standalone/.
shown=0
for path in examples/standalone/*; do
  file=$(basename "$path")
  marker="[\`$file\`]($path)"
  if ! grep -qF "$marker" README.md; then
    echo "README.md does not show $path (a line starting with $marker, then its fenced block)"
    failures=$((failures + 1))
    continue
  fi
  block=$(awk -v marker="$marker" '
    index($0, marker) == 1 { found = 1; next }
    found == 1 && /^```/ { found = 2; next }
    found == 2 && /^```$/ { exit }
    found == 2 { print }' README.md)
  if ! diff -u --label "$path" --label "README.md's copy" "$path" <(printf '%s\n' "$block"); then
    echo "README.md's copy of $path differs from the file (above); copy the file into README.md"
    failures=$((failures + 1))
  fi
  shown=$((shown + 1))
done
((shown > 0)) || { echo "check-docs: examples/standalone/ has no files"; failures=$((failures + 1)); }

# Code blocks: every opening ``` fence of a Markdown file is closed (an unclosed one swallows the
# rest of the page, headings included, into the block).
while IFS= read -r -d '' page; do
  unclosed=$(awk '/^[[:space:]]*```/ { if (open) open = 0; else { open = 1; line = FNR } }
                  END { if (open) print line }' "$page")
  if [[ -n $unclosed ]]; then
    echo "$page:$unclosed: a code block is never closed: paired in order, the fences leave" \
      "this one open (the missing \`\`\` line may be earlier, after the block it should end)"
    failures=$((failures + 1))
  fi
done < <(find README.md CONTRIBUTING.md CHANGELOG.md docs examples -name '*.md' -print0 2>/dev/null)

if ((failures > 0)); then
  echo "check-docs: $failures difference(s) to fix" >&2
  exit 1
fi
echo "check-docs: troubleshooting covers every status code; README.md shows examples/standalone as it is; every code block is closed"
