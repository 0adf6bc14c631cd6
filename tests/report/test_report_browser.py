"""The demo build's report in a real browser (headless Chromium, driven by Playwright): every
plot drew, the screenshot is not blank, and the page asked for nothing but its own file."""

import shutil

import pytest

from tests.report.png import share_not_background
from tests.report.test_report_page import PLOTTED, build_report

CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Per plot: its key, the size the SVG drew at, and how many data marks (not axes) it holds.
DRAWN = """() => [...document.querySelectorAll('div.plot')].map(div => {
    const svg = div.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const marks = svg ? svg.querySelectorAll('g.role-mark > *').length : 0;
    return [div.dataset.plot, box.width, box.height, marks];
})"""


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no `chromium` on PATH: install the Debian package (.ci/run does: apt-get)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def rendered(browser, demo_warehouse, tmp_path_factory):
    """The page after load: what it requested, each plot's drawn size and marks, a screenshot."""
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    report = build_report(demo_warehouse)
    page.goto(report.as_uri(), wait_until="networkidle")
    drawn = page.evaluate(DRAWN)
    screenshot = page.screenshot()
    page.close()
    return report, requested, drawn, screenshot


def test_every_plot_drew_with_data_marks(rendered):
    _, _, drawn, _ = rendered
    assert [key for key, *_ in drawn] == PLOTTED
    for key, width, height, marks in drawn:
        assert width > 100 and height > 50, f"plot {key} drew at {width}x{height}"
        assert marks > 0, f"plot {key} has no data marks"


def test_screenshot_is_not_blank(rendered):
    *_, screenshot = rendered
    assert share_not_background(screenshot) > 0.02


def test_page_requests_only_its_own_file(rendered):
    report, requested, *_ = rendered
    assert requested == [report.as_uri()]
