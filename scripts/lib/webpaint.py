#!/usr/bin/python3
"""First paint of the web remote, for `scripts/bench --only web`: loads URL RUNS times in a fresh
headless Chromium with the cache off, and prints one JSON object: the median milliseconds from
navigation start until the title and the cover are shown, and the bytes transferred by then.

  webpaint.py URL RUNS
"""
import json
import statistics
import sys
import time

from headless import chromium

URL, RUNS = sys.argv[1], int(sys.argv[2])
SHOWN = """
const t = document.getElementById('title'), c = document.getElementById('cover');
if (!t || !t.textContent.trim() || !c || !c.complete || !c.naturalWidth) return null;
const bytes = performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
    .reduce((n, e) => n + (e.transferSize || 0), 0);
return [performance.now(), bytes];
"""

times, sizes = [], []
for run in range(RUNS):
    driver = chromium("--window-size=1280,800")
    try:
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        driver.get(URL)
        end = time.monotonic() + 20
        shown = None
        while shown is None and time.monotonic() < end:
            shown = driver.execute_script(SHOWN)
            if shown is None:
                time.sleep(0.005)
        if shown is None:
            print("webpaint.py: the title and cover were not shown in 20 s", file=sys.stderr)
            sys.exit(1)
        times.append(shown[0])
        sizes.append(shown[1])
    finally:
        driver.quit()
print(json.dumps({"paint_ms": statistics.median(times), "bytes": statistics.median(sizes)}))
