#!/usr/bin/env bash
# The project's documentation stays inside the repository: README.md and docs/**/*.md may not point
# at paths outside it (`../` above the repository root), and every relative Markdown link must
# name a file or folder that exists (outside code blocks, where a C++ lambda reads as a link).
# Prints each offending line.
#   scripts/check-doc-links.sh [ROOT]
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"
failures=0
for doc in README.md docs/*.md docs/*/*.md; do
  [[ -f $doc ]] || continue
  dir=$(dirname "$doc")
  # The document with its fenced code blocks blanked (line numbers kept).
  prose=$(awk '/^[[:space:]]*```/ { fenced = !fenced; print ""; next } { print fenced ? "" : $0 }' "$doc")
  # Paths in backticks or link targets that climb out of the repository.
  while IFS= read -r hit; do
    number=${hit%%:*}
    for target in $(grep -oE '(\]\(|`)(\.\./)+[^)` ]*' <<<"${hit#*:}" | sed -E 's/^(\]\(|`)//'); do
      resolved=$(realpath -m "$dir/$target")
      if [[ $resolved != "$root"/* && $resolved != "$root" ]]; then
        echo "$doc:$number: '$target' points outside the repository; carry the text in docs/"
        failures=$((failures + 1))
      fi
    done
  done < <(grep -nE '(\]\(|`)\.\./' "$doc" || true)
  # Relative Markdown links must resolve.
  while IFS= read -r hit; do
    number=${hit%%:*}
    for target in $(grep -oE '\]\([^)#[:space:]]+' <<<"${hit#*:}" | sed -E 's/^\]\(//'); do
      [[ $target == *://* || $target == mailto:* ]] && continue
      if [[ ! -e $dir/$target ]]; then
        echo "$doc:$number: link target '$target' does not exist"
        failures=$((failures + 1))
      fi
    done
  done < <(grep -nE '\]\([^)]+\)' <<<"$prose" || true)
done
if ((failures > 0)); then
  echo "check-doc-links: $failures link(s) to fix" >&2
  exit 1
fi
echo "check-doc-links: README.md and docs/ (the guide included) link only inside the repository"
