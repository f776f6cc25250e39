"""Driving a notebook in JupyterLab or Notebook 7 through the UI, as a user would."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .lab import LabServer

SETUP_CELL = "%load_ext jupyter_spark_sessions\n%spark_session create a\n%spark_session create b"

# Session b: an RDD job of ~20 s in a background thread, so a's cell can run meanwhile.
B_BACKGROUND_CELL = """%%spark_session b
from pyspark import InheritableThread
b_result = {}
def _slow_row(x):
    import time
    time.sleep(2)
    return x
def _run_b(session=spark):
    try:
        b_result['sum'] = session.sparkContext.parallelize(range(10), 1).map(_slow_row).sum()
    except Exception as exc:
        b_result['error'] = str(exc)[:200]
b_thread = InheritableThread(target=_run_b)
b_thread.start()"""

# Session a: one task sleeping for minutes; the cell stays busy until cancelled.
A_LONG_CELL = """%spark_session use a
from pyspark.sql.functions import udf
@udf("long")
def _sleepy(x):
    import time
    time.sleep(120)
    return x
spark.range(0, 2, 1, 1).select(_sleepy("id")).collect()"""

B_RESULT_CELL = "b_thread.join(120)\nprint('b result:', b_result)"

# Both sessions, b's background job, a's busy cell (index 2), then b's result (3).
TWO_SESSIONS_CELLS = [SETUP_CELL, B_BACKGROUND_CELL, A_LONG_CELL, B_RESULT_CELL]


#: The notebook on screen: JupyterLab keeps the other open notebooks' panels, hidden.
SHOWN = ".jp-NotebookPanel:visible"


def open_notebook(
    page: Any, server: LabServer, name: str, cells: list[str], app: str = "lab"
) -> None:
    """Save ``cells`` as the notebook ``name`` on ``server``, open it in JupyterLab
    (``app="lab"``) or Notebook 7 (``"notebook"``) and wait for its kernel."""
    server.write_notebook(name, cells)
    path = f"lab/tree/{name}" if app == "lab" else f"notebooks/{name}"
    page.goto(f"{server.url}/{path}?token={server.token}")
    if app == "lab":  # its tab is the current one (the one shown before may still show)
        current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")
        current.filter(has_text=name).wait_for(timeout=60_000)
        deadline = time.monotonic() + 30
        while page.locator(SHOWN).count() != 1 and time.monotonic() < deadline:
            page.wait_for_timeout(100)
    page.locator(f"{SHOWN} .jp-Notebook").wait_for(timeout=60_000)
    # JupyterLab asks which kernel to start (a fresh JupyterLab does, within a second or
    # two): the notebook's own (python3).
    select = page.locator(".jp-Dialog button", has_text="Select")
    try:
        select.wait_for(timeout=5_000)
        select.click()
    except Exception:  # no question: the kernel started by itself
        pass
    wait_for_kernel_idle(page, server=server)


def wait_for_kernel_idle(
    page: Any, timeout_s: float = 120, server: LabServer | None = None
) -> None:
    """Wait for the notebook's kernel to be idle (its toolbar status), choosing the
    notebook's own kernel (python3) if JupyterLab asks which one to start: the question
    can come late (behind a gateway on a loaded machine it came after 5 s). On failure,
    the last lines of the logs beside ``server``'s (its own, a kernel gateway's)."""
    select = page.locator(".jp-Dialog button", has_text="Select")
    indicator = page.locator(f"{SHOWN} .jp-Notebook-ExecutionIndicator").first
    idle = page.locator(f"{SHOWN} .jp-Notebook-ExecutionIndicator[data-status='idle']")
    deadline = time.monotonic() + timeout_s
    unknown_since: float | None = None
    reloaded = False
    while not idle.is_visible():
        if select.is_visible():
            select.click()
        now = time.monotonic()
        unknown = _status(indicator) == "unknown"
        unknown_since = (unknown_since or now) if unknown else None
        if unknown_since is not None and now - unknown_since > UNKNOWN_RELOAD_S and not reloaded:
            # Behind a kernel gateway, the kernel's first websocket can be lost in a race
            # of jupyter_server's gateway client (its log: "Websocket connection has been
            # closed via client disconnect", then the gateway's "Replacing stale
            # connection"): the status stays "unknown" for good (a fresh-clone run, 1 run of 4
            # under load here; jupyterlab/jupyterlab#7683). What a user does: reload.
            print(f"kernel status 'unknown' for {UNKNOWN_RELOAD_S:.0f} s: reloading the page")
            page.reload()
            reloaded, unknown_since = True, None
            deadline = max(deadline, now + 60)
        if now > deadline:
            raise AssertionError(
                f"the kernel was not idle after {timeout_s:.0f} s "
                f"(status {_status(indicator)!r}"
                f"{', after a reload' if reloaded else ''})" + _log_tails(server)
            )
        page.wait_for_timeout(250)


#: Seconds a notebook's kernel status may read 'unknown' before wait_for_kernel_idle
#: reloads the page (once).
UNKNOWN_RELOAD_S = 30.0


def _status(indicator: Any) -> str | None:
    """The kernel status the toolbar shows (None while it is not on the page)."""
    try:
        status: str | None = indicator.get_attribute("data-status", timeout=1_000)
    except PlaywrightTimeout:
        return None
    return status


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def run_cell(page: Any, index: int) -> None:
    cell = page.locator(f"{SHOWN} .jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def rerun_after_run_all_stopped(page: Any, index: int) -> None:
    """Run a cell again after "Run All" stopped at an error before it. ipykernel aborts
    every execute request until it has gone through the queue the error left (its
    stop-on-error window): a request sent in that moment is aborted too, so wait for the
    kernel to be idle and the window to pass."""
    wait_for_kernel_idle(page)
    page.wait_for_timeout(2_000)
    run_cell(page, index)


def cell_output(page: Any, index: int) -> Any:
    return page.locator(f"{SHOWN} .jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


SIDEBAR = "#jupyter-spark-sessions-sidebar"


def open_sidebar(page: Any) -> Any:
    """Show the sidebar in JupyterLab (its tab in the right side bar)."""
    tab = page.locator(f"li[data-id='{SIDEBAR[1:]}']")
    tab.wait_for(timeout=30_000)
    if not page.locator(SIDEBAR).is_visible():
        tab.click()
    page.locator(SIDEBAR).wait_for(state="visible", timeout=10_000)
    return page.locator(SIDEBAR)


def open_sidebar_notebook7(page: Any) -> Any:
    """Show the sidebar in Notebook 7: View > Right Sidebar > Show Spark Sessions."""
    if not page.locator(SIDEBAR).is_visible():
        page.locator(".lm-MenuBar-itemLabel", has_text="View").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Right Sidebar").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Show Spark Sessions").first.click()
    page.locator(SIDEBAR).wait_for(state="visible", timeout=10_000)
    return page.locator(SIDEBAR)


def wait_for_sessions(sidebar: Any, *names: str) -> None:
    """Wait until the sidebar lists each session of ``names``; when one never shows,
    fail with what the sidebar and the notebook's cells showed instead."""
    for name in names:
        try:
            sidebar.locator(f"[data-testid='jss-session'][data-session='{name}']").wait_for(
                timeout=120_000
            )
        except PlaywrightTimeout:
            cells = sidebar.page.locator(f"{SHOWN} .jp-Notebook .jp-Cell")
            shown = [cells.nth(i).inner_text()[-300:] for i in range(cells.count())]
            raise AssertionError(
                f"session {name!r} not listed within 120 s; the sidebar: "
                f"{sidebar.inner_text()[:500]!r}; the cells: {shown!r}"
            ) from None


def assert_inside(inner: Any, outer: Any) -> None:
    """Each element ``inner`` matches lies wholly inside the one ``outer`` matches:
    nothing of it clipped at the sidebar's edges."""
    box = outer.bounding_box()
    assert box is not None
    for i in range(inner.count()):
        part = inner.nth(i).bounding_box()
        assert part is not None
        assert part["x"] >= box["x"] and part["y"] >= box["y"], (part, box)
        assert part["x"] + part["width"] <= box["x"] + box["width"], (part, box)


def show_spark_sessions_notebook7(page: Any) -> None:
    """Click Notebook 7's View > Right Sidebar > Show Spark Sessions, open or not."""
    page.locator(".lm-MenuBar-itemLabel", has_text="View").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Right Sidebar").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Show Spark Sessions").first.click()


def kernel_status_text(page: Any) -> str:
    """JupyterLab's status bar item of the notebook's kernel: "Python 3 (ipykernel) |
    Busy"."""
    item = page.locator("#jp-main-statusbar .jp-StatusBar-TextItem", has_text=" | ")
    return str(item.first.inner_text())


def cut_elements(container: Any, selector: str) -> list[str]:
    """The elements of ``selector`` in ``container`` not shown whole: their content is
    wider than their box (scrollWidth > clientWidth, 1 px rounding allowed), or their box
    reaches past the container's left or right edge. Each as "class: text (why)"."""
    cut: list[str] = container.evaluate(
        """(root, selector) => {
          const edge = root.getBoundingClientRect();
          const cut = [];
          for (const e of root.querySelectorAll(selector)) {
            const box = e.getBoundingClientRect();
            const wider = e.scrollWidth > e.clientWidth + 1;
            const out = box.left < edge.left - 0.5 || box.right > edge.right + 0.5;
            if (wider || out) {
              cut.push(`${e.className}: ${e.textContent} (scrollWidth ${e.scrollWidth}, ` +
                `clientWidth ${e.clientWidth}, ${box.left}-${box.right} in ` +
                `${edge.left}-${edge.right})`);
            }
          }
          return cut;
        }""",
        selector,
    )
    return cut


def overlapping(first: Any, second: Any) -> bool:
    """Whether the boxes of two elements (Playwright locators) intersect."""
    for _ in range(20):
        # None: the element was replaced between finding and measuring it (the sidebar
        # renders its content anew at each change): measure the new one.
        a, b = first.bounding_box(), second.bounding_box()
        if a is not None and b is not None:
            break
        first.page.wait_for_timeout(100)
    assert a is not None and b is not None, "an element to compare is not shown"
    return bool(
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


#: Each token of a cell's editor: its text and colour, and the theme's colours.
TOKENS = """(editor) => {
  const probe = document.createElement('span');
  editor.appendChild(probe);
  const color = (v) => { probe.style.color = `var(${v})`; return getComputedStyle(probe).color; };
  const theme = {
    keyword: color('--jp-mirror-editor-keyword-color'),
    string: color('--jp-mirror-editor-string-color'),
    comment: color('--jp-mirror-editor-comment-color'),
  };
  probe.remove();
  const tokens = [];
  for (const line of editor.querySelectorAll('.cm-line')) {
    const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.trim();
      if (text) tokens.push([text, getComputedStyle(node.parentElement).color]);
    }
  }
  return { theme, tokens };
}"""


def colours(page: Any, index: int) -> tuple[dict[str, str], dict[str, str]]:
    """(the theme's keyword, string and comment colours; each token's colour) of cell
    ``index``'s editor."""
    editor = page.locator(f"{SHOWN} .jp-Notebook .jp-Cell").nth(index).locator(".cm-content")
    found = editor.evaluate(TOKENS)
    return found["theme"], {text: colour for text, colour in found["tokens"]}


def _log_tails(server: LabServer | None, lines: int = 25) -> str:
    """The last ``lines`` of each log in the folder of ``server``'s log."""
    if server is None:
        return ""
    server.log.flush()
    tails = []
    for log in sorted(Path(server.log.name).parent.glob("*.log")):
        text = log.read_text(errors="replace").splitlines()[-lines:]
        tails.append(f"\n--- {log.name} ---\n" + "\n".join(text))
    return "".join(tails)
