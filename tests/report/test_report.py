"""`envevo report`: a self-contained page that renders in a real browser with no broken images."""

import base64
import re
import shutil
import subprocess

import pytest

from envevo.report import build_report
from tests.evolve.test_evolve_loop import Gate, ScriptedEngine, run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Run in the page after load: mark every image with whether it decoded, so the dumped DOM tells.
PROBE = """<script>window.addEventListener('load', () => {
  for (const img of document.images) img.setAttribute('data-decoded', img.complete && img.naturalWidth > 0 ? 'yes' : 'no');
  document.body.setAttribute('data-probed', String(document.images.length));
});</script>"""


@pytest.fixture
def report(tmp_path):
    store, lid, status = run(tmp_path, ScriptedEngine(), generations=3, check=Gate())
    assert status == "done"
    return build_report(store.run_dir)


def test_report_is_self_contained_and_complete(report):
    page = report.read_text()
    assert "src=\"http" not in page and "href=\"http" not in page  # nothing fetched from elsewhere
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 3  # difficulty, semantic-drift and mutation-rate plots
    for data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG")
    for g in (1, 2, 3):
        assert f"g{g:02d} · length" in page
    assert "instruction: 1 file(s) changed" in page  # per-component diffs
    assert "[s1] -k1-&gt;" in page  # ξ after the first generation
    assert "Semantic drift per generation" in page and "drift-v1:all-MiniLM-L6-v2@" in page  # drift, with provenance


def test_report_renders_in_headless_chromium_without_broken_images(report, tmp_path):
    if CHROMIUM is None:
        pytest.fail("chromium is missing: `apt-get install chromium` (.ci/run installs it)")
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    dom = proc.stdout
    assert 'data-probed="3"' in dom, proc.stderr[-2000:]
    assert dom.count('data-decoded="yes"') == 3
    assert 'data-decoded="no"' not in dom


def test_report_gives_each_generations_mutation_score(tmp_path):
    # What the mutation verifier found for the accepted candidate: g02's tests let one near-miss solution through.
    store, lid, status = run(tmp_path, ScriptedEngine(), generations=3, check=Gate())
    assert status == "done"
    accepted = {c.generation: c.id for c in store.candidates(lid) if c.accepted}
    for generation, killed in ((1, 4), (2, 3)):
        store.add_verification(accepted[generation], "mutation", killed == 4,
                               metrics={"run": 4, "killed": killed, "survived": 4 - killed, "mutants": 4})
    page = build_report(store.run_dir).read_text()
    section = page[page.index("near-miss solutions that scored 0"):]
    cells = re.findall(r"<td>(g\d\d)</td><td>([^<]*)</td>", section)
    assert cells[:4] == [("g00", "not run"), ("g01", "4/4"), ("g02", "3/4"), ("g03", "not run")]
