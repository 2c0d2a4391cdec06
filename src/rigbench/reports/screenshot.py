"""A PNG of the report page as a browser draws it (the docs' screenshot): headless Chromium
driven by playwright, offline, after every chart has been drawn."""

from __future__ import annotations

from pathlib import Path

from rigbench.errors import UsageError

#: Debian's and Ubuntu's Chromium; elsewhere playwright's own (`playwright install chromium`).
SYSTEM_CHROMIUM = "/usr/bin/chromium"
#: --no-sandbox: Chromium refuses to start as root with its sandbox (containers, CI).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
WIDTH = 1400
#: The first this many pixels of the page: the summary, the machines and the speed panels.
HEIGHT = 2000
INSTALL = ("the screenshot needs playwright and Chromium: pip install playwright, then "
           "apt-get install chromium (or: playwright install chromium)")


def check_png_path(png_path: str | Path) -> None:
    """UsageError unless `png_path` can name a new PNG: Chromium picks the format from the
    name's suffix, and a name without one, or a folder, failed there as a traceback."""
    path = Path(png_path)
    if path.suffix.lower() != ".png" or path.is_dir():
        raise UsageError(f"--screenshot {png_path} is not a PNG file name: give a file ending in .png, e.g. report.png")


def screenshot(page_path: str | Path, png_path: str | Path, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """Open `page_path` offline in headless Chromium at `width` px and write the top `height`
    px (less when the page is shorter) to `png_path`. UsageError naming what to install when
    playwright or a Chromium is missing."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ModuleNotFoundError:
        raise UsageError(INSTALL) from None
    out = Path(png_path)
    executable = SYSTEM_CHROMIUM if Path(SYSTEM_CHROMIUM).exists() else None
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except Error:
            raise UsageError(INSTALL) from None
        try:
            page = browser.new_page(viewport={"width": width, "height": min(height, 1000)})
            # nothing but the file itself: the report is self-contained
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
                       else route.abort())
            page.goto(Path(page_path).resolve().as_uri())
            page.wait_for_function("Array.from(document.querySelectorAll('.chart'))"
                                   ".every(el => el.classList.contains('js-plotly-plot'))")
            full = page.evaluate("document.documentElement.scrollHeight")
            try:
                page.screenshot(path=str(out), full_page=True,
                                clip={"x": 0, "y": 0, "width": width, "height": min(height, full)})
            except OSError as exc:
                raise UsageError(f"cannot write --screenshot {out}: {exc.strerror}") from None
        finally:
            browser.close()
    return out
