"""A real headless Chromium (Debian's package) driven by Playwright, for tests of the web page.

Playwright uses the system browser (``executable_path``) and never downloads one of its own; each
launch gets a fresh, empty profile. The flags keep Chromium off the network it would otherwise
try to reach at start (this machine has none) and out of the GPU and sandbox it cannot use here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.async_api import Page

CHROMIUM = Path("/usr/bin/chromium")
HEADLESS_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
APT_TIMEOUT_S = 900


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's chromium, installed with apt-get when missing (as root); skips when it cannot be."""
    if not CHROMIUM.exists():
        _install_chromium()
    return CHROMIUM


def _install_chromium() -> None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip(f"{CHROMIUM} is missing and cannot be installed: needs root and apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    failure = ""
    for commands in (
        [["apt-get", "install", "-y", "-q", "chromium"]],
        [["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]],
    ):
        for command in commands:
            try:
                done = subprocess.run(
                    command, env=env, capture_output=True, text=True, timeout=APT_TIMEOUT_S
                )
            except subprocess.TimeoutExpired:
                pytest.skip(f"`{' '.join(command)}` did not finish in {APT_TIMEOUT_S} s")
            if done.returncode != 0:
                failure = (done.stderr or done.stdout).strip()[-500:]
                break
        if CHROMIUM.exists():
            return
    pytest.skip(f"could not install Debian's chromium with apt-get: {failure}")


@pytest.fixture
async def page(chromium: Path) -> AsyncIterator[Page]:
    """A new page of a new headless browser. Fails the test on any uncaught JavaScript error or
    Content-Security-Policy violation the page reports."""
    async_api = pytest.importorskip(
        "playwright.async_api", reason="the `playwright` package drives the browser tests"
    )
    problems: list[str] = []
    async with async_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(chromium), headless=True, args=HEADLESS_FLAGS
        )
        try:
            # A short window, so that the passages start below the fold and scrolling matters.
            context = await browser.new_context(viewport={"width": 1000, "height": 600})
            opened = await context.new_page()
            opened.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
            opened.on(
                "console",
                lambda message: (
                    "Content Security Policy" in message.text and problems.append(message.text)
                ),
            )
            yield opened
        finally:
            await browser.close()
    assert not problems, problems
