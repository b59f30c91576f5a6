#!/usr/bin/env bash
# The browser test of report.html: renders the fixture run, loads the page in headless chromium
# and checks the marks the page's script leaves on <body> (data-ready="1" after the first draw,
# data-errors="0", data-task-marks = the blocks the fixture ran), then takes a screenshot.
# Usage: check_report.sh FIXTURE OUT_DIR. Exits 77 (skipped) without chromium.
set -euo pipefail

fixture=$1
out_dir=$2
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$(command -v "$b")
    break
  fi
done
if [ -z "$browser" ]; then
  echo "skip: no chromium installed (scripts/install-deps.sh installs it)"
  exit 77
fi

mkdir -p "$out_dir"
page="$out_dir/report_fixture.html"
expected=$("$fixture" "$page")
[[ "$expected" =~ ^[0-9]+$ ]] || { echo "FAIL: fixture printed '$expected'"; exit 1; }

# A profile of its own (no state shared with other runs, nothing written to $HOME); no sandbox
# (containers and CI run as root); no GPU. The virtual time budget lets the page's script finish
# before the DOM is dumped.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless=new --no-sandbox --disable-gpu --no-first-run --no-default-browser-check
       --disable-extensions --hide-scrollbars "--user-data-dir=$profile"
       --virtual-time-budget=5000)

dom="$out_dir/report_dom.html"
if ! timeout 60 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$dom" 2>"$out_dir/chromium.log"; then
  echo "FAIL: chromium --dump-dom failed; its log:"
  tail -20 "$out_dir/chromium.log"
  exit 1
fi
body=$(grep -o '<body[^>]*>' "$dom" | head -1 || true)
echo "body: $body (expected $expected task marks)"
attr() { sed -n "s/.*$1=\"\\([^\"]*\\)\".*/\\1/p" <<<"$body"; }
fail=0
[ "$(attr data-ready)" = 1 ] || { echo "FAIL: data-ready is not 1 (the first draw did not finish)"; fail=1; }
[ "$(attr data-errors)" = 0 ] || { echo "FAIL: data-errors is not 0 (script errors)"; fail=1; }
[ "$(attr data-task-marks)" = "$expected" ] || { echo "FAIL: data-task-marks is not $expected"; fail=1; }
# Markup in a kernel symbol stays text: the fixture's "<b>x</b>" must not become an element.
if grep -q '<b>x</b>' "$dom"; then
  echo "FAIL: a kernel symbol's markup reached the DOM unescaped"
  fail=1
fi
[ "$fail" = 0 ] || exit 1

shot="$out_dir/report_screenshot.png"
rm -f "$shot"
timeout 60 "$browser" "${flags[@]}" --window-size=1400,900 "--screenshot=$shot" "file://$page" \
  >>"$out_dir/chromium.log" 2>&1 || { echo "FAIL: chromium --screenshot failed"; exit 1; }
size=$(stat -c %s "$shot" 2>/dev/null || echo 0)
# A blank 1400x900 PNG is a few KB; the drawn page is tens of KB.
if [ "$size" -lt 20000 ]; then
  echo "FAIL: screenshot $shot missing or near empty ($size bytes)"
  exit 1
fi
echo "ok: $shot ($size bytes)"
