#!/usr/bin/python3
"""Drives the daemon's web remote in a real headless Chromium (Selenium, chromedriver), for
WebRemoteRealtimeTests. Plays the page as a person would, step by step, and prints one JSON line
per step with the moment it happened (time.monotonic(): the test's clock too), so the test can
hold each step against its recording of the sink:

  webremote.py URL BACKLINE SOCKET ARTIFACTS_DIR

Steps: the page shows the title and cover (screenshots at phone and desktop sizes); pause and
play by clicking; a seek by dragging the progress bar; another client's `ctl next` reaching the
page; a queue row dragged to the top; a search that plays what it finds. Exits 1 with
"webremote.py: …" on stderr when a step fails (the test prints it).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from headless import chromium
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

URL, BACKLINE, SOCKET, ARTIFACTS = sys.argv[1:5]


def say(step, **fields):
    print(json.dumps(dict(step=step, t=time.monotonic(), **fields)), flush=True)


def fail(message):
    print("webremote.py: " + message, file=sys.stderr, flush=True)
    sys.exit(1)


def until(what, check, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            value = check()
            if value:
                return value
        except Exception:  # (an element replaced while read: try again)
            pass
        time.sleep(0.02)
    fail("timed out waiting for " + what)


profile = tempfile.mkdtemp(prefix="webremote-profile-")
driver = chromium("--window-size=390,844", "--user-data-dir=" + profile)
driver.set_script_timeout(10)
try:
    os.makedirs(ARTIFACTS, exist_ok=True)
    started = time.monotonic()
    driver.get(URL)
    title = until("the title", lambda: driver.find_element(By.ID, "title").text.strip() == "Web Noise" and "Web Noise")
    cover = until("the cover", lambda: driver.execute_script(
        "const i = document.getElementById('cover'); return i && i.complete && i.naturalWidth > 0 ? i.naturalWidth : 0"))
    artist = driver.find_element(By.ID, "artist").text.strip()
    say("shown", title=title, artist=artist, cover=cover, seconds=time.monotonic() - started)
    driver.save_screenshot(os.path.join(ARTIFACTS, "web-remote-phone.png"))
    driver.set_window_size(1280, 800)
    time.sleep(0.5)
    driver.save_screenshot(os.path.join(ARTIFACTS, "web-remote-desktop.png"))

    def tab(name):
        button = driver.find_element(By.ID, "tab-" + name)
        if button.is_displayed():
            button.click()

    # Pause, then play, by clicking.
    tab("now")
    button = driver.find_element(By.ID, "play-pause")
    time.sleep(1.0)
    say("pause")  # (stamped before the click: the test's windows start after it)
    button.click()
    until("the button to say Play", lambda: "play" in (button.get_attribute("aria-label") or "").lower())
    time.sleep(2.0)
    say("play")
    button.click()
    until("the button to say Pause", lambda: "pause" in (button.get_attribute("aria-label") or "").lower())
    time.sleep(1.5)

    # A seek by dragging the progress bar to 60 % of its width.
    bar = driver.find_element(By.ID, "progress")
    width = bar.size["width"]
    actions = ActionChains(driver)
    actions.move_to_element_with_offset(bar, int(width * 0.3) - width // 2, 0).click_and_hold()
    actions.move_by_offset(int(width * 0.2), 0).move_by_offset(int(width * 0.1), 0).release().perform()
    value = float(bar.get_attribute("value"))
    say("seek", value=value, max=float(bar.get_attribute("max")), title=driver.find_element(By.ID, "title").text.strip())
    time.sleep(2.0)

    # No polling: while it plays untouched for 3 s, the page sends the daemon nothing (its bar
    # runs from the last position it was told; position events re-anchor it).
    driver.execute_script("""
        window.__sent = 0;
        const send = WebSocket.prototype.send;
        WebSocket.prototype.send = function (data) { window.__sent += 1; return send.call(this, data); };""")
    time.sleep(3.0)
    say("idle", sent=driver.execute_script("return window.__sent"),
        elapsed=driver.find_element(By.ID, "elapsed").text.strip())

    # Another client's `ctl next`: the page follows through its events (no polling).
    driver.execute_script("""
        window.__changed = null;
        new MutationObserver(() => { if (window.__changed === null) window.__changed = performance.timeOrigin + performance.now(); })
            .observe(document.getElementById('title'), {childList: true, characterData: true, subtree: true});""")
    before = time.time() * 1000
    subprocess.run([BACKLINE, "ctl", "--socket", SOCKET, "next"], check=True, capture_output=True)
    answered = time.time() * 1000
    new_title = until("the next title", lambda: (lambda t: t if t and t != "Web Noise" else None)(
        driver.find_element(By.ID, "title").text.strip()))
    changed = driver.execute_script("return window.__changed")
    say("next", title=new_title, after_command_ms=changed - before, after_reply_ms=changed - answered)

    # The rating: chosen on the page, it is the song's sticker; set by another client, the page
    # shows it (through the sticker event).
    def ctl(*args):
        return subprocess.run([BACKLINE, "ctl", "--socket", SOCKET, *args], capture_output=True, text=True).stdout.strip()
    until("the rating menu", lambda: driver.find_element(By.ID, "rating").is_displayed())
    Select(driver.find_element(By.ID, "rating")).select_by_value("8")
    by_page = until("the rating sticker", lambda: (lambda v: v if v == "rating=8" else None)(ctl("sticker", "get", "02-second.mp3", "rating")))
    ctl("sticker", "set", "02-second.mp3", "rating", "4")
    shown = until("the page to show the other client's rating",
                  lambda: (lambda v: v if v == "4" else None)(driver.find_element(By.ID, "rating").get_attribute("value")))
    say("rating", page=by_page, shown=shown)

    # The queue: drag the last row's handle to the top.
    tab("queue")
    rows = lambda: [r.get_attribute("data-id") for r in driver.find_elements(By.CSS_SELECTOR, "#queue li[data-id]")]
    before_order = until("the queue", lambda: rows() if len(rows()) >= 3 else None)
    last = driver.find_elements(By.CSS_SELECTOR, "#queue li[data-id]")[-1]
    first = driver.find_elements(By.CSS_SELECTOR, "#queue li[data-id]")[0]
    handle = last.find_element(By.CSS_SELECTOR, ".handle")
    # Past the first row's middle by half a row, in eight steps whose sum is exactly that.
    dy = first.location["y"] - last.location["y"] - first.size["height"] // 2
    steps = [dy // 8] * 7
    steps.append(dy - sum(steps))
    actions = ActionChains(driver)
    actions.click_and_hold(handle)
    for step in steps:
        actions.move_by_offset(0, step)
    actions.pause(0.2).release().perform()
    after_order = until("the queue to change", lambda: rows() if rows() != before_order else None)
    say("reorder", before=before_order, after=after_order)

    # Search as you type, and play what it finds.
    tab("library")
    search = driver.find_element(By.ID, "search")
    search.click()
    search.send_keys("glove")
    result = until("a search result", lambda: driver.find_elements(By.CSS_SELECTOR, "#results li"))[0]
    text = result.text
    result.find_element(By.CSS_SELECTOR, ".play-now").click()
    tab("now")
    playing = until("the found song to play", lambda: (lambda t: t if "Glove" in t else None)(
        driver.find_element(By.ID, "title").text.strip()))
    say("search", result=text, playing=playing)
    # The library by rating: the song rated above, with its rating.
    tab("library")
    driver.execute_script("const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input'));")
    until("the browse view", lambda: driver.find_element(By.ID, "browse-rated").is_displayed())
    driver.find_element(By.ID, "browse-rated").click()
    rated = until("the top rated songs", lambda: [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#browse li")] or None)
    say("rated", rows=rated)
    tab("now")
    # The terminal player's keys: `p` pauses and plays again (the button follows the daemon's state).
    body = driver.find_element(By.TAG_NAME, "body")
    button = driver.find_element(By.ID, "play-pause")
    body.send_keys("p")
    until("`p` to pause", lambda: "play" in (button.get_attribute("aria-label") or "").lower())
    body.send_keys("p")
    until("`p` to play again", lambda: "pause" in (button.get_attribute("aria-label") or "").lower())
    say("keys")

    # For screen readers: every button and every control has a name, the tabs are tabs.
    unnamed = driver.execute_script("""
        const name = (e) => (e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') && 'x' || e.textContent || '').trim()
            || (e.id && document.querySelector('label[for="' + e.id + '"]')) || e.closest('label');
        return [...document.querySelectorAll('button, input, select, [role=button]')]
            .filter((e) => !name(e)).map((e) => e.outerHTML.slice(0, 80));""")
    tabs = driver.execute_script("return document.querySelectorAll('[role=tab]').length")
    say("accessible", unnamed=unnamed, tabs=tabs)

    driver.save_screenshot(os.path.join(ARTIFACTS, "web-remote-after.png"))
    logs = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    say("done", errors=[e.get("message") for e in logs], sent=driver.execute_script("return window.__sent"))
finally:
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)
