"""Headless Chromium for the report tests: Debian's /usr/bin/chromium driven by Playwright.

No browser is ever downloaded: Playwright launches the system Chromium
(`AGENTSPEC_CHROMIUM` overrides the path). A missing browser or Playwright is
a test failure with the command that fixes it, not a skip: CI installs both.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
]


def chromium_path() -> str:
    override = os.environ.get("AGENTSPEC_CHROMIUM")
    for candidate in (override, "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail(
        "headless Chromium is required for the report tests and was not found: "
        "install it with `apt-get install -y chromium` (make test does this), "
        "or set AGENTSPEC_CHROMIUM to a Chromium binary",
        pytrace=False,
    )


@contextmanager
def browser_page() -> Iterator[tuple[Any, list[str]]]:
    """A page of a fresh headless Chromium (Playwright gives it a new empty profile)
    and the list its console errors, page errors and network requests go to."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the report tests need Playwright's Python client (`pip install playwright`; "
            "no browser download: the system Chromium is used)",
            pytrace=False,
        )
    executable = chromium_path()
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable,
            headless=True,
            args=CHROMIUM_FLAGS,
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on(
                "console",
                lambda msg: errors.append(msg.text) if msg.type in ("error", "assert") else None,
            )
            page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
            page.on(
                "request",
                lambda req: (
                    None
                    if req.url.startswith(("file:", "data:", "about:"))
                    else errors.append(f"network request: {req.url}")
                ),
            )
            yield page, errors
        finally:
            browser.close()
