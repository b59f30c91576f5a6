#!/usr/bin/env bash
# The browser test of report.html: renders the fixture run, loads the page in headless chromium
# and checks the marks the page's script leaves on <body> (data-ready="1" after the first draw,
# data-errors="0", data-task-marks = the blocks the fixture ran), for a small run and a large one;
# then drives the timeline with synthetic events and takes a screenshot.
# Then real runs: `chiprt run bgemm --diag all` on both variants, whose page must hold one mark per
# block of its tasks.csv and state its tasks as the CLI does; the screenshot of the first is
# report_bgemm.png. Every page's figures (table heads, facts, key-value labels, the verdict's
# badge) must carry their definition (a title).
# Usage: check_report.sh FIXTURE OUT_DIR CHIPRT. Exits 77 (skipped) without chromium.
set -euo pipefail

fixture=$1
out_dir=$2
chiprt=$3
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

: >"$out_dir/chromium.log"
# Loads PAGE, dumps its DOM to DOM and checks the body's marks against EXPECTED task marks.
check_marks() {
  local page=$1 dom=$2 expected=$3 body fail=0
  if ! timeout 60 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$dom" 2>>"$out_dir/chromium.log"; then
    echo "FAIL: chromium --dump-dom $page failed; its log:"
    tail -20 "$out_dir/chromium.log"
    return 1
  fi
  body=$(grep -o -m1 '<body[^>]*>' "$dom" | head -1 || true)
  echo "body: $body (expected $expected task marks)"
  attr() { sed -n "s/.*$1=\"\\([^\"]*\\)\".*/\\1/p" <<<"$body"; }
  [ "$(attr data-ready)" = 1 ] || { echo "FAIL: data-ready is not 1 (the first draw did not finish)"; fail=1; }
  [ "$(attr data-errors)" = 0 ] || { echo "FAIL: data-errors is not 0 (script errors)"; fail=1; }
  [ "$(attr data-task-marks)" = "$expected" ] || { echo "FAIL: data-task-marks is not $expected"; fail=1; }
  return $fail
}
# Every figure on the page is defined there: each table head, each fact of a facts line, each
# label of a key-value table and the verdict's badge carries a tooltip (title).
check_definitions() {
  local dom=$1
  /usr/bin/python3 - "$dom" <<'PY' || return 1
import sys
from html.parser import HTMLParser

class Figures(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.missing, self.seen, self.pending = [], [], 0, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        parent = self.stack[-1] if self.stack else ("", {}, 0)
        figure = (tag == "th" or (tag == "span" and "facts" in parent[1].get("class", "").split())
                  or (tag == "span" and "badge" in a.get("class", "").split())
                  or (tag == "td" and parent[0] == "tr" and parent[2] == 0
                      and self.kv_depth() is not None))
        if tag == "td" and parent[0] == "tr":
            self.stack[-1] = (parent[0], parent[1], parent[2] + 1)
        if figure:
            self.seen += 1
            if not a.get("title"):
                self.pending = [tag, ""]
        if tag not in ("br", "img", "input", "meta", "link", "col"):
            self.stack.append((tag, a, 0))
    def kv_depth(self):
        for tag, a, _ in reversed(self.stack):
            if tag == "table":
                return 0 if "kv" in a.get("class", "").split() else None
        return None
    def handle_data(self, data):
        if self.pending is not None:
            self.pending[1] += data
    def handle_endtag(self, tag):
        if self.pending is not None and tag == self.pending[0]:
            self.missing.append(self.pending[1].strip()[:60])
            self.pending = None
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

parser = Figures()
parser.feed(open(sys.argv[1], encoding="utf-8").read())
if parser.missing:
    print("FAIL: %d of %d figures have no definition on the page: %s"
          % (len(parser.missing), parser.seen, "; ".join(parser.missing)))
    sys.exit(1)
print("definitions: all %d figures defined" % parser.seen)
PY
}
dom="$out_dir/report_dom.html"
fail=0
check_marks "$page" "$dom" "$expected" || fail=1
check_definitions "$dom" || fail=1
# Markup in a kernel symbol stays text: the fixture's "<b>x</b>" must not become an element.
if grep -q '<b>x</b>' "$dom"; then
  echo "FAIL: a kernel symbol's markup reached the DOM unescaped"
  fail=1
fi
[ "$fail" = 0 ] || exit 1

# A large run (about 230k blocks, so its timeline is sampled to every 2nd block; ~10 MB): zoomed
# out, slices are aggregated per pixel column, a path the small page never takes.
large="$out_dir/report_large.html"
large_expected=$("$fixture" "$large" 100000)
check_marks "$large" "$out_dir/report_large_dom.html" "$large_expected" || exit 1
rm -f "$large" "$out_dir/report_large_dom.html"
# A run that recorded nothing: every section says so, no script errors, no marks.
"$fixture" "$out_dir/report_empty.html" empty >/dev/null
check_marks "$out_dir/report_empty.html" "$out_dir/report_empty_dom.html" 0 || exit 1
check_definitions "$out_dir/report_empty_dom.html" || exit 1

# The timeline's handlers, driven by synthetic events from a page that frames the report (file
# pages may reach each other only with --allow-file-access-from-files).
cat >"$out_dir/report_harness.html" <<'HARNESS'
<!DOCTYPE html>
<html><body data-result="pending">
<iframe id="f" src="report_fixture.html" style="width:1400px;height:900px;border:0"></iframe>
<script>
// Drives the report's timeline with synthetic events: hover tooltip, wheel zoom, keys, drag, reset.
var f = document.getElementById('f'), fails = [];
function check(ok, what) { if (!ok) fails.push(what); }
function later(fn) { setTimeout(fn, 200); }
f.onload = function () {
  var d = f.contentDocument, w = f.contentWindow, cv = d.getElementById('tl');
  var info = function () { return d.querySelector('#tlbar span').textContent; };
  var tip = d.getElementById('tip'), r = cv.getBoundingClientRect();
  function ev(type, x, y, extra, target) {
    var o = Object.assign({ clientX: r.left + x, clientY: r.top + y, bubbles: true, cancelable: true }, extra || {});
    (target || cv).dispatchEvent(new (type === 'wheel' ? w.WheelEvent : w.MouseEvent)(type, o));
  }
  check(d.body.dataset.ready === '1', 'not ready');
  // Hover along the first core row (host, 4 AICPU rows above it) until a slice's tooltip shows.
  var y = 24 + 5 * 18 + 9, found = false;
  for (var x = 160; x < r.width && !found; x += 3) {
    ev('mousemove', x, y);
    found = tip.style.display === 'block';
  }
  check(found, 'no tooltip on the first core row');
  check(/task \d+ +block \d+/.test(tip.textContent) && /core 0\)/.test(tip.textContent), 'tooltip text: ' + tip.textContent);
  var v0 = info();
  ev('wheel', 700, 100, { deltaY: -300 });
  later(function () {
    var v1 = info();
    check(v1 !== v0, 'wheel did not zoom');
    d.dispatchEvent(new w.KeyboardEvent('keydown', { key: '-', bubbles: true }));
    later(function () {
      var v2 = info();
      check(v2 !== v1, 'key - did not zoom out');
      ev('mousedown', 700, 100);
      ev('mousemove', 600, 100, {}, w);
      ev('mouseup', 600, 100, {}, w);
      later(function () {
        check(info() !== v2, 'drag did not pan');
        d.querySelector('#tlbar button').click();
        later(function () {
          check(/^view 0 ns/.test(info()), 'reset did not show the whole run: ' + info());
          check(d.body.dataset.errors === '0', 'script errors: ' + d.body.dataset.errors);
          document.body.dataset.result = fails.length ? fails.join('; ') : 'ok';
        });
      });
    });
  });
};
</script></body></html>
HARNESS
result=$(timeout 60 "$browser" "${flags[@]}" --allow-file-access-from-files --dump-dom \
  "file://$out_dir/report_harness.html" 2>>"$out_dir/chromium.log" |
  sed -n 's/.*<body data-result="\([^"]*\)".*/\1/p' || true)
if [ "$result" != ok ]; then
  echo "FAIL: timeline interaction: ${result:-no result}"
  exit 1
fi
echo "interaction: hover tooltip, wheel zoom, keys, drag, reset ok"

# Real runs of the bgemm example, one per runtime variant: every block of tasks.csv is a mark.
for runtime in host_build_graph tensormap_ringbuffer; do
  diag="$out_dir/bgemm_$runtime"
  rm -rf "$diag"
  "$chiprt" run bgemm --runtime "$runtime" --diag all --diag-dir "$diag" >"$out_dir/bgemm_$runtime.log" 2>&1 ||
    { echo "FAIL: chiprt run bgemm --runtime $runtime --diag all failed:"; tail -20 "$out_dir/bgemm_$runtime.log"; exit 1; }
  blocks=$(awk -F, 'NR > 1 && $2 != "" && $10 != ""' "$diag/run-0001/tasks.csv" | wc -l)
  [ "$blocks" -gt 0 ] || { echo "FAIL: $diag/run-0001/tasks.csv has no executed block"; exit 1; }
  check_marks "$diag/run-0001/report.html" "$out_dir/bgemm_${runtime}_dom.html" "$blocks" || exit 1
  check_definitions "$out_dir/bgemm_${runtime}_dom.html" || exit 1
  # The task count as the CLI and the docs state it.
  grep -q '<b>tasks </b>128 kernel tasks<' "$out_dir/bgemm_${runtime}_dom.html" ||
    { echo "FAIL: the bgemm page does not state its tasks as '128 kernel tasks'"; exit 1; }
done

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
bgemm_shot="$out_dir/report_bgemm.png"
timeout 60 "$browser" "${flags[@]}" --window-size=1400,900 "--screenshot=$bgemm_shot" \
  "file://$out_dir/bgemm_host_build_graph/run-0001/report.html" >>"$out_dir/chromium.log" 2>&1 ||
  { echo "FAIL: chromium --screenshot of the bgemm report failed"; exit 1; }
echo "ok: $bgemm_shot ($(stat -c %s "$bgemm_shot") bytes)"
