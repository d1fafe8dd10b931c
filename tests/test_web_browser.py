"""The page in a real browser (issue 14): Debian's Chromium, headless, driven by Playwright, against a uvicorn
server this test starts on a free port. Controls change the numbers shown, which must equal the API's and
`kokuban estimate --json`'s; the state survives a reload from the URL, which also names the tab shown; the
keyboard works; chart text is at least 11 px and inside its chart, every drop-down option fits its box, each figure
fills its panel, and a phone shows the numbers within its first screen; the time from a control change to the
redrawn chart is measured (median of 24 changes, written to docs/img/web-timing.json); screenshots of the page go
to docs/img/. Skips when Playwright or /usr/bin/chromium is absent (.ci/run installs both)."""

from __future__ import annotations

import json
import os
import socket
import statistics
import threading
import time
from importlib import resources
from pathlib import Path

import pytest

from kokuban.present.jsonout import read_result

CHROMIUM = "/usr/bin/chromium"
# CI (.ci/run) installs Chromium and sets KOKUBAN_REQUIRE_BROWSER=1: there a missing browser fails, never skips.
if os.environ.get("KOKUBAN_REQUIRE_BROWSER") == "1":
    import fastapi  # noqa: F401
    import playwright.sync_api  # noqa: F401
    import uvicorn  # noqa: F401

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is absent but KOKUBAN_REQUIRE_BROWSER=1"
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)", allow_module_level=True)

import httpx  # noqa: E402
import uvicorn  # noqa: E402

from kokuban.cli import main  # noqa: E402
from kokuban.web.app import create_app  # noqa: E402

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
SHOWN = ("usd_per_m_output", "usd_per_m_input", "tokens_per_s_per_user", "tokens_per_s", "step_time_s")


@pytest.fixture(scope="module")
def server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture()
def page(browser, server):
    # bypass_csp: Playwright's waiting helpers evaluate strings, which the page's own policy forbids
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    assert not errors, errors
    ctx.close()


def drawn(pg, action) -> None:
    """Do `action` and wait for the page's next redraw."""
    before = pg.evaluate("window.kokuban ? window.kokuban.draws : 0")
    action()
    pg.wait_for_function(f"window.kokuban && window.kokuban.draws > {before}", timeout=15_000)


def slide(pg, element_id: str, value: str) -> None:
    """Move a range input as a pointer would: set its value and fire the input event."""
    pg.eval_on_selector(f"#{element_id}",
                        "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', { bubbles: true })); }", value)


def shown(pg) -> dict[str, float]:
    return {k: float(pg.get_attribute(f'[data-k="{k}"]', "data-value")) for k in SHOWN}


def estimate_json(capsys, *args) -> dict:
    assert main(["estimate", *args, "--json"]) == 0
    return read_result(capsys.readouterr().out)


def expected(d: dict) -> dict[str, float]:
    dec, c = d["decode"], d["cost"]
    return {"usd_per_m_output": c["usd_per_m_output"], "usd_per_m_input": c["usd_per_m_input"],
            "tokens_per_s_per_user": dec["tokens_per_s_per_user"], "tokens_per_s": dec["tokens_per_s"],
            "step_time_s": dec["step_time_s"]}


def test_controls_change_the_numbers_to_the_apis_and_the_clis(page, server, capsys):
    page.goto(f"{server}/?model=llama-3.1-8b&gpu=h100-sxm&batch=8")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    assert shown(page) == expected(estimate_json(capsys, "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "8"))
    first_text = page.text_content('[data-k="usd_per_m_output"]')

    drawn(page, lambda: page.fill("#batch", "64"))
    drawn(page, lambda: page.select_option("#gpu", "h200"))
    drawn(page, lambda: page.select_option("#weights", "fp8"))
    drawn(page, lambda: page.fill("#gpus", "2"))
    drawn(page, lambda: page.fill("#context", "16384"))
    drawn(page, lambda: page.fill("#price_per_hour", "3"))
    args = ["llama-3.1-8b", "--gpu", "h200", "--batch", "64", "--weights", "fp8", "--gpus", "2", "--context", "16384",
            "--price-per-hour", "3"]
    cli = estimate_json(capsys, *args)
    body = {"model": "llama-3.1-8b", "gpu": "h200", "batch": 64, "weights": "fp8", "gpus": 2, "context": 16384,
            "price_per_hour": 3}
    api = httpx.post(f"{server}/api/estimate", json=body).json()
    assert api == cli
    assert shown(page) == expected(cli)
    assert page.text_content('[data-k="usd_per_m_output"]') != first_text
    assert page.text_content('[data-k="bound"]') == f"{cli['decode']['bound']}-bound"
    why = page.text_content("#why")
    assert f"Decode is {cli['decode']['bound']}-bound" in why and f"{cli['memory']['max_batch']:,}" in why

    # the URL holds the state: a fresh load of it shows the same numbers
    url = page.url
    assert "batch=64" in url and "gpu=h200" in url and "weights=fp8" in url
    page.goto(url)
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    assert shown(page) == expected(cli)
    assert page.input_value("#context") == "16384"

    # "max" batch, then a bad value: the error names the field and marks its control
    drawn(page, lambda: page.check("#batch_max"))
    assert shown(page) == expected(estimate_json(capsys, *[a if a != "64" else "max" for a in args]))
    drawn(page, lambda: page.uncheck("#batch_max"))
    drawn(page, lambda: slide(page, "compute_eff", "1"))  # a slider moved to its end
    assert "compute_eff=1" in page.url
    drawn(page, lambda: page.fill("#batch", "0"))
    assert page.is_visible("#error") and page.text_content("#error").startswith("batch:")
    assert page.get_attribute("#batch", "aria-invalid") == "true"


def body_from_url(url: str) -> dict:
    """The API body the page's URL describes (its query holds the request's fields)."""
    from urllib.parse import parse_qsl, urlsplit

    ints = {"gpus", "batch", "context", "prompt", "output"}
    body: dict = {}
    for k, v in parse_qsl(urlsplit(url).query):
        body[k] = v if k not in ints or v == "max" else int(v)
        if k not in ints and k not in ("model", "gpu", "layout", "weights", "experts", "kv", "compute"):
            body[k] = float(v)
    return body


def test_every_control_changes_what_is_shown(page, server):
    """Each control, moved in turn, changes the numbers or the title shown, and they stay the API's for the
    configuration the URL now holds. The link fraction is moved on MI300X: under the shipped kernel profile the
    collective curves, not `interconnect`, price NVLink groups (`KernelCurves.covers`), so on an H100 it changes
    nothing; Infinity Fabric keeps the flat collective model it sets."""
    page.goto(f"{server}/?model=qwen3-30b-a3b&gpu=h100-sxm&gpus=2&batch=16")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    moves = [
        ("#layout", "select", "ep"), ("#kv", "select", "fp8"), ("#weights", "select", "fp8"),
        ("#experts", "select", "fp4"), ("#experts", "select", ""),  # back to the weights' dtype before a dense model
        ("#compute", "select", "bf16"), ("#prompt", "fill", "1500"), ("#output", "fill", "500"),
        ("#kv_eff", "slide", "0.5"), ("#overlap", "slide", "0.3"),
        ("#step_overhead", "slide", "0.005"), ("#layout", "select", "tp"), ("#model", "fill", "llama-3.1-8b"),
        ("#gpu", "select", "mi300x"), ("#link_eff", "slide", "0.9"),
    ]
    for selector, how, value in moves:
        before = (shown(page), page.text_content("#title"))
        if how == "select":
            drawn(page, lambda s=selector, v=value: page.select_option(s, v))
        elif how == "fill":
            drawn(page, lambda s=selector, v=value: page.fill(s, v))
        else:
            drawn(page, lambda s=selector, v=value: slide(page, s[1:], v))
        if selector == "#prompt":  # prompt alone is an error until its output comes
            assert page.text_content("#error").startswith("output:")
            continue
        assert not page.is_visible("#error"), page.text_content("#error")
        now = (shown(page), page.text_content("#title"))
        assert now != before, f"{selector} → {value} changed nothing shown"
        api = httpx.post(f"{server}/api/estimate", json=body_from_url(page.url)).json()
        assert now[0] == expected(api), selector


def test_upload_a_config_json(page, server, capsys, tmp_path):
    config = tmp_path / "my-llama.json"
    config.write_text((resources.files("kokuban") / "data" / "models" / "llama-3.1-8b.json").read_text())
    page.goto(f"{server}/?gpu=h100-sxm&batch=8")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    drawn(page, lambda: page.set_input_files("#config", str(config)))
    assert "my-llama" in page.text_content("#title")
    assert shown(page) == expected(estimate_json(capsys, "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "8"))
    assert "config=" in page.url


def test_keyboard_moves_a_slider_and_the_tabs(page, server):
    page.goto(f"{server}/?model=llama-3.1-8b&gpu=h100-sxm&batch=8")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    before = shown(page)["step_time_s"]
    page.focus("#memory_eff")
    drawn(page, lambda: page.keyboard.press("ArrowLeft"))
    assert shown(page)["step_time_s"] > before  # less bandwidth, a longer weight-bound step
    page.focus("#tab-board")
    page.keyboard.press("ArrowRight")
    assert page.is_visible("#panel-prices") and not page.is_visible("#panel-board")
    page.keyboard.press("Home")
    assert page.is_visible("#panel-board")


def test_agent_tab_runs_the_agent_use_case(page, server):
    """The agent tab prices a bundled scenario on the blackboard's deployment, then on an API price row; the
    numbers shown are the API's for the same body."""
    page.goto(f"{server}/?model=llama-3.1-8b&gpu=h100-sxm&batch=8")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    page.click("#tab-agent")
    page.select_option("#agent-compaction", "auto")
    page.fill("#agent-runs", "20")

    def run() -> None:
        before = page.evaluate("window.kokubanAgent.runs")
        page.click("#agent-run")
        page.wait_for_function(f"window.kokubanAgent.runs > {before}", timeout=30_000)
        assert page.evaluate("window.kokubanAgent.last.ok"), page.text_content("#agent-error")

    run()
    # the deployment's fields travel; the blackboard's batch does not (the agent decodes its own 32 sessions)
    body = {"preset": "swe-bench", "compaction": ["auto"], "runs": 20, "model": "llama-3.1-8b", "gpu": "h100-sxm"}
    api = httpx.post(f"{server}/api/agent", json=body).json()
    assert float(page.get_attribute('[data-k="agent_usd_mean"]', "data-value")) == api["usd"]["mean"]
    assert page.text_content('[data-k="agent_cheapest"]') == api["cheapest_policy"]
    assert page.locator("#chart-agent-policies rect.key").count() >= len(api["policies"])
    IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMG / "web-agent.png"), full_page=True)

    page.check("#agent-mode-api")
    page.fill("#agent-price", "anthropic/claude-sonnet-4")
    run()
    api = httpx.post(f"{server}/api/agent", json={"preset": "swe-bench", "compaction": ["auto"], "runs": 20,
                                                  "price": "anthropic/claude-sonnet-4"}).json()
    assert float(page.get_attribute('[data-k="agent_usd_mean"]', "data-value")) == api["usd"]["mean"]


def test_simulator_tab_runs_a_capped_simulation(page, server):
    """The simulator tab serves a short workload on the blackboard's deployment: the p50s shown are the API's for
    the same body, the CDFs are drawn, Enter in a field runs it again, and the URL brings the tab back."""
    page.goto(f"{server}/?model=llama-3.1-8b&gpu=h100-sxm&batch=8")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    page.click("#tab-sim")
    page.fill("#sim-rate", "6")
    page.fill("#sim-requests", "80")
    page.fill("#sim-output", "lognormal:150,0.5")

    def run(action, ok: bool = True) -> None:
        before = page.evaluate("window.kokubanSim.runs")
        action()
        page.wait_for_function(f"window.kokubanSim.runs > {before}", timeout=30_000)
        assert page.evaluate("window.kokubanSim.last.ok") == ok, page.text_content("#sim-error")

    run(lambda: page.click("#sim-run"))
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "rate": 6, "requests": 80, "prompt": "1000",
            "output": "lognormal:150,0.5", "seed": 0}
    api = httpx.post(f"{server}/api/simulate", json=body).json()
    for k in ("ttft", "tpot", "e2e"):
        assert float(page.get_attribute(f'[data-k="sim_{k}_p50"]', "data-value")) == api["latency_s"][k]["p50"]
    assert float(page.get_attribute('td[data-k="sim_ttft_p99"]', "data-value")) == api["latency_s"]["ttft"]["p99"]
    assert float(page.get_attribute('[data-k="sim_usd_per_m_output"]', "data-value")) == \
        api["cost"]["usd_per_m_output"]
    assert page.locator("#chart-sim-ttft polyline").count() == 1 and "TTFT, ms" in page.text_content("#chart-sim-ttft")
    assert "sim_rate=6" in page.url and "tab=sim" in page.url

    page.fill("#sim-requests", "301")  # over the cap: the error names the field and marks its control
    run(lambda: page.press("#sim-requests", "Enter"), ok=False)  # the keyboard runs it
    assert page.text_content("#sim-error").startswith("requests:")
    assert page.get_attribute("#sim-requests", "aria-invalid") == "true"
    page.fill("#sim-requests", "80")
    run(lambda: page.press("#sim-requests", "Enter"))

    page.goto(page.url)  # the link opens the tab and runs the same simulation
    page.wait_for_function("window.kokubanSim && window.kokubanSim.runs > 0", timeout=30_000)
    assert page.is_visible("#panel-sim")
    assert float(page.get_attribute('[data-k="sim_ttft_p50"]', "data-value")) == api["latency_s"]["ttft"]["p50"]
    IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMG / "web-sim.png"), full_page=True)
    page.click("#tab-board")  # leaving the tab takes it out of the link
    assert "tab=sim" not in page.url and "sim_rate=6" in page.url


def test_price_sheet_tab_explains_and_infers(page, server):
    """The price-sheet tab reads a row backwards with the prices use cases: the sentences and numbers shown are
    the API's for the same row and the blackboard's accelerator."""
    page.goto(f"{server}/?model=llama-3.1-8b&gpu=h200&batch=8")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    page.click("#tab-prices")
    page.wait_for_function("document.querySelectorAll('#prices-name option').length > 0", timeout=10_000)
    page.select_option("#prices-provider", "deepseek")
    page.select_option("#prices-name", "deepseek/deepseek-chat")

    def press(button: str) -> None:
        before = page.evaluate("window.kokubanPrices.runs")
        page.click(button)
        page.wait_for_function(f"window.kokubanPrices.runs > {before}", timeout=30_000)
        assert page.evaluate("window.kokubanPrices.last.ok"), page.text_content("#prices-error")

    press("#prices-explain")
    api = httpx.post(f"{server}/api/prices/explain", json={"name": "deepseek/deepseek-chat", "gpu": "h200"}).json()
    shown = [page.text_content(f'[data-feature="{f["feature"]}"]') for f in api["features"]]
    assert shown == [f["sentence"] for f in api["features"]]
    press("#prices-infer")
    api = httpx.post(f"{server}/api/prices/infer", json={"name": "deepseek/deepseek-chat", "gpu": "h200"}).json()
    cells = page.eval_on_selector_all("#prices-body td[data-value]", "tds => tds.map((t) => Number(t.dataset.value))")
    assert api["range"]["central"]["max_batch"] in cells
    assert api["range"]["central"]["usd_per_m_output_at_max_batch"] in cells


TABS = ("board", "prices", "sim", "agent")


def open_page(browser, server, query: str, width: int = 1280, height: int = 900):
    """A fresh browser context at `width` × `height` on `/?query`, once the blackboard has drawn."""
    ctx = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{server}/?{query}")
    pg.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    return ctx, pg, errors


def shown_tab(pg) -> str:
    """The one tab whose panel is shown and which says it is selected."""
    on = [t for t in TABS if pg.is_visible(f"#panel-{t}")]
    assert len(on) == 1, on
    assert pg.get_attribute(f"#tab-{on[0]}", "aria-selected") == "true"
    return on[0]


def tab_in_url(pg) -> str | None:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(pg.url).query).get("tab", [None])[0]


def test_a_link_opens_its_tab_and_the_url_follows_the_tabs(page, server):
    """`?tab=NAME` opens that tab (every one of them); choosing a tab, by pointer or keyboard, puts its name in the
    URL (the blackboard, the first, leaves none), so the address bar is always a link to what is shown."""
    for name in TABS:
        page.goto(f"{server}/?model=llama-3.1-8b&gpu=h100-sxm&batch=8&tab={name}")
        page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
        assert shown_tab(page) == name
        assert tab_in_url(page) == (None if name == "board" else name)
    page.goto(f"{server}/?model=llama-3.1-8b&gpu=h100-sxm&batch=8")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    assert shown_tab(page) == "board" and tab_in_url(page) is None
    page.goto(f"{server}/?model=llama-3.1-8b&gpu=h100-sxm&batch=8&tab=nonsense")
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    assert shown_tab(page) == "board" and tab_in_url(page) is None
    for name in ("agent", "prices", "board"):
        page.click(f"#tab-{name}")
        assert shown_tab(page) == name and tab_in_url(page) == (None if name == "board" else name)
        assert page.get_attribute("#share", "href").endswith(page.url.split("/", 3)[3])
    page.focus("#tab-board")
    page.keyboard.press("End")
    assert shown_tab(page) == "agent" and tab_in_url(page) == "agent"
    assert "model=llama-3.1-8b" in page.url and "batch=8" in page.url  # the configuration stays in the link
    page.goto(page.url)
    page.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    assert shown_tab(page) == "agent"


#: Configurations whose charts carry labels at their edges: the largest batch that fits at the right of the batch
#: curve (its label ran past the chart's edge), walls and a ridge near the roofline's top.
EDGE_CASES = ("model=llama-3.1-8b&gpu=b200&batch=max&context=1024",
              "model=deepseek-v3&gpu=h200&gpus=8&layout=ep&batch=max",
              "model=llama-3.1-70b&gpu=h200&gpus=2&batch=32&weights=fp8")

#: Every <text> of every drawn chart: its rendered font size (CSS px: the style's size × the drawing's scale) and how
#: far it lies outside its <svg> (px, 0 when inside).
CHART_TEXT = """() => [...document.querySelectorAll('svg')].filter((svg) => svg.getBoundingClientRect().width > 0)
  .flatMap((svg) => {
    const box = svg.getBoundingClientRect(), scale = box.width / svg.viewBox.baseVal.width;
    return [...svg.querySelectorAll('text')].map((t) => {
      const b = t.getBoundingClientRect();
      return { chart: svg.id, text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale,
               out: Math.max(0, box.left - b.left, b.right - box.right, box.top - b.top, b.bottom - box.bottom) };
    });
  })"""

#: Every option of every shown <select> against the room its box gives text: (id, option, text px, room px); the room
#: leaves 20 px for the drop-down arrow.
SELECT_TEXT = """() => {
  const c = document.createElement('canvas').getContext('2d');
  return [...document.querySelectorAll('select')].filter((s) => s.offsetWidth > 0).flatMap((s) => {
    const cs = getComputedStyle(s);
    c.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
    const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
    return [...s.options].map((o) => [s.id, o.text, c.measureText(o.text).width, room]);
  });
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_chart_text_is_legible_and_inside_its_chart(browser, server, width):
    """At a desktop's and a phone's width every chart's text is at least 11 px on the screen (charts are drawn at
    their own pixel width) and none runs past its chart's edge; it stays so when the window narrows."""
    for query in EDGE_CASES:
        ctx, pg, errors = open_page(browser, server, query, width)
        texts = pg.evaluate(CHART_TEXT)
        assert {t["chart"] for t in texts} >= {"chart-split", "chart-roofline", "chart-batch", "chart-context",
                                                 "chart-memory"}
        assert [t for t in texts if t["px"] < 11 - 1e-6] == []
        assert [t for t in texts if t["out"] > 0.5] == []
        assert any(t["chart"] == "chart-batch" and t["text"].startswith("fits: ") for t in texts)
        if width == 1280:  # narrower: the charts are drawn again at their new width
            pg.set_viewport_size({"width": 700, "height": 900})
            pg.wait_for_timeout(300)
            texts = pg.evaluate(CHART_TEXT)
            assert [t for t in texts if t["px"] < 11 - 1e-6 or t["out"] > 0.5] == []
        assert not errors, errors
        ctx.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_every_option_fits_its_select(browser, server, width):
    """No option of any drop-down on any tab is cut: its text fits its box beside the arrow."""
    ctx, pg, errors = open_page(browser, server, "model=qwen3-30b-a3b&gpu=h100-sxm&batch=8&layout=ep", width)
    if not pg.is_visible("#gpu"):
        pg.click("#controls-box > summary")  # folded on a phone
    pg.wait_for_function("document.querySelectorAll('#prices-name option').length > 0", timeout=10_000)
    pg.wait_for_function("document.querySelectorAll('#agent-preset option').length > 0", timeout=10_000)
    seen = set()
    for tab in TABS:
        pg.click(f"#tab-{tab}")
        rows = pg.evaluate(SELECT_TEXT)
        seen |= {r[0] for r in rows}
        assert [r for r in rows if r[2] > r[3]] == []
    assert seen >= {"gpu", "layout", "weights", "experts", "kv", "compute", "prices-provider", "prices-name",
                    "sim-scheduler", "agent-preset", "agent-compaction"}
    assert not errors, errors
    ctx.close()


def test_each_figure_uses_its_panel(browser, server):
    """A figure's caption, chart and note fill its panel: none is a short chart stretched to a tall neighbour's
    height (the cost-by-term bar filled a third of its panel beside the roofline)."""
    ctx, pg, errors = open_page(browser, server, "model=llama-3.1-70b&gpu=h200&gpus=2&batch=32&weights=fp8")
    fill = pg.evaluate("""() => [...document.querySelectorAll('#panel-board figure')].map((f) => {
        const used = [...f.children].reduce((a, c) => a + c.getBoundingClientRect().height, 0);
        const cs = getComputedStyle(f);
        const room = f.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
        return [f.querySelector('svg').id, used / room];
    })""")
    assert len(fill) == 5
    assert [(chart, share) for chart, share in fill if share < 0.85] == []
    assert not errors, errors
    ctx.close()


def test_a_phone_shows_the_numbers_first(browser, server):
    """On a 390 px wide phone the headline numbers come within the first screen (the controls fold under a summary
    of the configuration); opening the summary shows the controls, and they still drive the numbers."""
    ctx, pg, errors = open_page(browser, server, "model=llama-3.1-8b&gpu=h100-sxm&batch=8", 390, 844)
    top = pg.evaluate("document.querySelector('[data-k=\"usd_per_m_output\"]').getBoundingClientRect().top + scrollY")
    assert top < 600
    assert pg.is_visible('[data-k="usd_per_m_output"]') and not pg.is_visible("#gpu")
    summary = pg.text_content("#controls-summary")
    assert "llama-3.1-8b" in summary and "h100-sxm" in summary and "batch 8" in summary
    pg.click("#controls-box > summary")
    assert pg.is_visible("#gpu")
    before = pg.get_attribute('[data-k="usd_per_m_output"]', "data-value")
    drawn(pg, lambda: pg.fill("#batch", "16"))
    assert pg.get_attribute('[data-k="usd_per_m_output"]', "data-value") != before
    assert "batch 16" in pg.text_content("#controls-summary")
    assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    assert not errors, errors
    ctx.close()


def test_redraw_time_and_screenshots(browser, server):
    """Median time from a control change to the redrawn charts over 24 changes of batch, context and GPU count;
    then the screenshots for the README (desktop and phone widths)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto(f"{server}/?model=llama-3.1-8b&gpu=h200&batch=32")
    pg.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    # every configuration fits (each redraw is of new numbers and charts, not of an error)
    changes = [("batch", str(b)) for b in (96, 48, 24, 16, 4, 2, 1, 8)] + \
              [("context", str(c)) for c in (1024, 2048, 8192, 16384, 32768, 4096, 6000, 12000)] + \
              [("gpus", str(n)) for n in (2, 4, 8, 1, 2, 4, 8, 1)]
    ms = pg.evaluate("""async (changes) => {
        const out = [];
        for (const [id, value] of changes) {
            const done = new Promise((ok) =>
                document.addEventListener("kokuban:drawn", (e) => ok(e.detail), { once: true }));
            const t0 = performance.now();
            const el = document.getElementById(id);
            el.value = value;
            el.dispatchEvent(new Event("input", { bubbles: true }));
            const detail = await done;
            if (!detail.ok) throw new Error(`${id}=${value} drew an error`);
            await new Promise((ok) => requestAnimationFrame(() => ok()));  // the frame that shows the new charts
            out.push(performance.now() - t0);
        }
        return out;
    }""", changes)
    assert len(ms) == 24
    median = statistics.median(ms)
    IMG.mkdir(parents=True, exist_ok=True)
    (IMG / "web-timing.json").write_text(json.dumps({
        "what": "control change -> redrawn charts, headless Chromium against uvicorn on 127.0.0.1 "
                "(tests/test_web_browser.py)",
        "changes": len(ms), "median_ms": round(median, 1), "max_ms": round(max(ms), 1), "min_ms": round(min(ms), 1),
        "chromium": pg.context.browser.version,
    }, indent=2) + "\n")
    print(f"\ncontrol change -> redrawn chart: median {median:.1f} ms over {len(ms)} changes (max {max(ms):.1f} ms)")
    # a measurement, not a pass mark (speed is judged in the README's number, not by a timed test)
    pg.goto(f"{server}/?model=llama-3.1-70b&gpu=h200&gpus=2&batch=32&weights=fp8")
    pg.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    pg.screenshot(path=str(IMG / "web-desktop.png"), full_page=True)
    ctx.close()
    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1, bypass_csp=True)
    pp = phone.new_page()
    pp.goto(f"{server}/?model=qwen3-30b-a3b&gpu=h100-sxm&batch=32&layout=ep")
    pp.wait_for_function("window.kokuban && window.kokuban.ready", timeout=20_000)
    assert not pp.is_visible("#error"), pp.text_content("#error")  # the screenshot shows numbers, not an error
    assert pp.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling on a phone
    pp.screenshot(path=str(IMG / "web-phone.png"), full_page=False)
    phone.close()
