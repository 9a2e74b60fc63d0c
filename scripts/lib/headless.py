"""Headless Chromium through chromedriver (Selenium), the one way the web-remote scripts start
it: webremote.py (the real-time test), webpaint.py (the bench), pageresult.py (the cross-site test)."""
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def chromium(*flags):
    """A new headless Chromium with the common flags and `flags` (a window size, a profile)."""
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run") + flags:
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
