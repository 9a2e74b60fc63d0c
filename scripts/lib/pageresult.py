#!/usr/bin/python3
"""Opens URL in headless Chromium and prints the page's body text once it starts with "result:"
(waiting in real time, a minute at most; else what it says then), for the web remote's
cross-site test:

  pageresult.py URL PROFILE_DIR
"""
import sys
import time

from headless import chromium

driver = chromium("--user-data-dir=" + sys.argv[2])
try:
    driver.get(sys.argv[1])
    end = time.monotonic() + 60
    text = ""
    while time.monotonic() < end:
        text = driver.execute_script("return document.body.textContent")
        if text.startswith("result:"):
            break
        time.sleep(0.05)
    print(text)
finally:
    driver.quit()
