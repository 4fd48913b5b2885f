"""``--format html`` of check, gate and scan: parsed with html5lib, content checked, nothing interpreted;
one test renders the page in headless Chromium and looks at the pixels."""

import html
import json
import os
import re
import shutil
import struct
import subprocess
import zlib

import pytest
from conftest import cli, fixture_path

from fatbin_inspect.compat import data
from fatbin_inspect.render.findings.html import COLOURS, breakable

html5lib = pytest.importorskip("html5lib", reason="html5lib is in the test extra (pip install -e '.[test]')")

NS = "{http://www.w3.org/1999/xhtml}"
SVG = "{http://www.w3.org/2000/svg}"
SM80 = fixture_path("bin", "t01_exe_sm80")
MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
PTX80 = fixture_path("bin", "t03_exe_ptx_only_c80")
GPUS = ("--gpu", "H100", "--gpu", "T4", "--gpu", "RTX 5090", "--driver", "580")


def parse(text):
    return html5lib.parse(text)  # an ElementTree; html5lib parses as a browser does


def texts(doc, tag):
    return ["".join(e.itertext()) for e in doc.iter(f"{NS}{tag}")]


def states(svg):
    return [r.get("data-state") for r in svg.iter(f"{SVG}rect")]


def test_check_html_has_both_heatmaps_drilldown_findings_and_as_of():
    ran = cli("check", SM80, MULTI, PTX80, *GPUS, "--format", "html")
    page = ran.out
    assert ran.code == 1 and page.startswith("<!DOCTYPE html>")
    doc = parse(page)
    svgs = list(doc.iter(f"{SVG}svg"))
    assert len(svgs) == 2
    coverage, verdicts = svgs
    # coverage: 3 files × the SM columns present (75, 80, 90); t02 has sm_75, sm_80, sm_90 SASS
    assert len(states(coverage)) == 3 * 3
    assert states(coverage)[3:6] == ["sass", "sass", "sass"]  # t02's row (rows sorted by path)
    assert states(coverage)[6:9] == ["none", "ptx", "none"]  # t03: compute_80 PTX only
    # verdicts: files × targets, the engine's verdicts (H100, T4, RTX 5090 on R580)
    assert states(verdicts) == ["jit", "fail", "jit", "native", "native", "jit", "jit", "fail", "jit"]
    # the findings are those of --format json, one table row each
    js = cli("check", SM80, MULTI, PTX80, *GPUS, "--format", "json").out
    n_json = sum(1 for r in json.loads(js)["results"] if r["verdict"] in ("fail", "jit"))
    rows = [
        t for t in doc.iter(f"{NS}tr") if t.find(f"{NS}td") is not None and "FBI0" in "".join(t.itertext())
    ]
    assert len(rows) == n_json == 7  # jit (a warning) and fail (an error) cells
    # drill-down: a <details> per folder row, per file and per fatbin
    summaries = texts(doc, "summary")
    assert any("t02_exe_sm75_sm80_sm90_c90" in s for s in summaries)
    assert any(".nv_fatbin @ 0x" in s for s in summaries)
    assert data.load("gpus")["as_of"] in texts(doc, "time")


def test_self_contained_nothing_loaded_or_run():
    page = cli("check", SM80, MULTI, *GPUS, "--format", "html").out
    doc = parse(page)
    tags = {e.tag.split("}")[1] for e in doc.iter() if isinstance(e.tag, str)}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "image", "use"}
    for e in doc.iter():
        for k, v in e.attrib.items():
            assert k not in ("src", "href", "action") and not k.startswith("on"), (e.tag, k, v)
            assert "url(" not in v
    assert "@import" not in page and "url(" not in page


def test_input_strings_are_escaped(tmp_path):
    evil = tmp_path / '<img src=x onerror="alert(1)"><script>alert(2)&amp;.so'
    shutil.copyfile(SM80, evil)
    ran = cli("check", str(evil), "--gpu", "T4", "--gpu", "H100", "--format", "html")
    page = ran.out
    doc = parse(page)
    tags = {e.tag.split("}")[1] for e in doc.iter() if isinstance(e.tag, str)}
    assert "img" not in tags and "script" not in tags
    assert any(evil.name in t for t in texts(doc, "code"))  # shown literally, &amp; included
    assert ran.code == 1


def test_gate_html_shows_the_verdicts_not_the_severities():
    ran = cli("gate", SM80, MULTI, "--require", "sm_80,sm_90", "--isolated", "--format", "html")
    page = ran.out
    doc = parse(page)
    _coverage, verdicts = list(doc.iter(f"{SVG}svg"))
    # t01 has only compute_80 PTX for sm_90: FBI002 is an error of the policy, but the GPU runs
    # it through the JIT, as check says; t02 covers both
    assert states(verdicts) == ["native", "jit", "native", "native"]
    assert "FBI002" in page
    assert "fatbin-inspect gate" in texts(doc, "h1")[0] and "FAIL" in texts(doc, "h1")[0]
    assert ran.code == 1


def heatmap(page):
    """{(row label, column title): state} of the verdict heatmap, from each rect's data-row/-col."""
    _cov, svg = list(parse(page).iter(f"{SVG}svg"))
    labels = [t.text for t in svg.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    cols = [t.text for t in svg.iter(f"{SVG}text") if t.get("transform")]
    return {
        (labels[int(r.get("data-row"))], cols[int(r.get("data-col"))]): r.get("data-state")
        for r in svg.iter(f"{SVG}rect")
    }


def row_of(cells, path):
    """The row label drawn for ``path``: the path without the folder prefix all rows share."""
    found = [label for label, _ in cells if path.endswith("/" + label) or path == label]
    return max(found, key=len) if found else None


def check_verdicts(paths, gpus, driver):
    js = cli(
        "check", *paths, *(x for g in gpus for x in ("--gpu", g)), "--driver", driver, "--format", "json"
    ).out
    doc = json.loads(js)
    return {(r["path"], r["target"]): r["verdict"] for r in doc["results"]}


def test_heatmaps_equal_check_json_cell_by_cell(tmp_path):
    """check, gate and scan draw for every file and target the verdict ``check --format json``
    gives: arch-specific code native where it runs (sm_90a on H100), PTX that JITs as jit, a file
    without device code as such (never "runs")."""
    import builders as B

    lib90a = tmp_path / "lib90a.so"  # xformers' shape: sm_90a cubins and no sm_90 ones
    lib90a.write_bytes(B.arch_library(B.arch_fatbin(["80", "90a"], [])))
    nocode = tmp_path / "libnocode.so"
    nocode.write_bytes(B.host_elf([(".text", b"\x90" * 64)]))
    files = [str(lib90a), str(nocode), SM80, MULTI, PTX80, fixture_path("bin", "t04_exe_sm90a_c90a")]
    gpus = ["H100", "T4", "RTX 5090", "A100"]
    want = check_verdicts(files, gpus, "580")
    js = cli(
        "check", *files, *(x for g in gpus for x in ("--gpu", g)), "--driver", "580", "--format", "json"
    ).out
    labels = [t["gpu"] for t in json.loads(js)["targets"]]
    assert want[(str(lib90a), 0)] == "native" and "no-device-code" in {
        want[(str(nocode), i)] for i in range(4)
    }
    assert "jit" in set(want.values()) and "fail" in set(want.values())

    page = cli(
        "check", *files, *(x for g in gpus for x in ("--gpu", g)), "--driver", "580", "--format", "html"
    ).out
    got = heatmap(page)
    for (path, i), verdict in want.items():
        row = row_of(got, path)
        col = next(
            c
            for c in {c for _, c in got}
            if c.startswith(labels[i].replace("NVIDIA ", "").replace("GeForce ", ""))
        )
        assert got[(row, col)] == verdict, (path, labels[i])

    # the gate judges each requirement on a GPU of that compute capability at its minimum driver:
    # check --gpu sm_XY --driver D says the same
    reqs = ["sm_80", "sm_90", "sm_75"]
    page = cli(
        "gate", *files, "--require", ",".join(reqs), "--min-driver", "580", "--isolated", "--format", "html"
    ).out
    got = heatmap(page)
    want = check_verdicts(files, reqs, "580")
    for (path, i), verdict in want.items():
        row = row_of(got, path)
        if (row, reqs[i]) not in got:
            continue  # a row the gate does not draw (no fatbin at all)
        assert got[(row, reqs[i])] == verdict, (path, reqs[i], got[(row, reqs[i])])
    assert got[(row_of(got, str(lib90a)), "sm_90")] == "native"  # FBI005 (a warning) but it runs natively


def test_arch_and_family_specific_columns_say_so(tmp_path):
    import builders as B

    lib = tmp_path / "libaf.so"
    lib.write_bytes(B.arch_library(B.arch_fatbin(["80", "90a", "100f"], ["80"])))
    page = cli("check", str(lib), "--gpu", "H100", "--format", "html").out
    cov, _ = list(parse(page).iter(f"{SVG}svg"))
    glyphs = [t.text for t in cov.iter(f"{SVG}text") if t.get("aria-hidden")]
    assert glyphs == ["SP", "Sa", "Sf"], glyphs
    assert "only arch- / family-specific cubins" in page


def test_scan_html_keeps_the_table_rows_and_their_findings():
    ran = cli("scan", SM80, PTX80, "--gpu", "A100", "--format", "html", "--no-cache")
    page = ran.out
    doc = parse(page)
    _cov, verdicts = list(doc.iter(f"{SVG}svg"))
    # one folder row as in the terminal table: sm_80 SASS in one file, compute_80 PTX only in the
    # other, so the row needs the JIT
    assert states(verdicts) == ["jit"] and ran.code == 0
    summaries = texts(doc, "summary")
    assert any("t01_exe_sm80" in x for x in summaries) and any("t03_exe_ptx_only_c80" in x for x in summaries)
    rules = [t for t in texts(doc, "td") if t.startswith("FBI0")]
    assert rules == ["FBI002 jit-only"]  # t01 loads natively: no finding for it
    assert "fatbin-inspect scan" in texts(doc, "h1")[0]


# ---------------------------------------------------------------------------------- browser
def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB/RGBA PNG, unfiltered (PNG spec §9)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", None
    while pos < len(raw):
        n, kind = struct.unpack(">I4s", raw[pos : pos + 8])
        body = raw[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = head[:4]
    assert depth == 8 and ctype in (2, 6), head
    bpp = 3 if ctype == 2 else 4
    data_ = zlib.decompress(idat)
    stride, prev, rows = w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = data_[y * (stride + 1)], bytearray(data_[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[i : i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return w, h, rows


@pytest.mark.browser
def test_chromium_renders_the_heatmaps(tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("Chromium not found (Debian: apt-get install chromium)")
    page = cli("check", SM80, MULTI, PTX80, *GPUS, "--format", "html").out
    html_file, png = tmp_path / "report.html", tmp_path / "report.png"
    html_file.write_text(page, encoding="utf-8")
    subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=900,700",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={png}",
            html_file.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    w, h, rows = png_pixels(png)
    assert (w, h) == (900, 700)
    seen = {px for row in rows[::2] for px in row[::2]}
    assert len(seen) > 20  # not a blank page

    def rgb(hex_):
        return tuple(int(hex_[i : i + 2], 16) for i in (1, 3, 5))

    for state in ("sass", "fail", "jit"):  # the heatmap colours are on screen
        assert rgb(COLOURS[state]) in seen, state


MEASURE = """<script>
const measure = () => {
  const r = (e) => e.getBoundingClientRect();
  console.log("LAYOUT " + JSON.stringify({
    width: document.documentElement.clientWidth,
    pills: [...document.querySelectorAll(".pill")].map((e) => [e.textContent, r(e).height]),
    cells: [...document.querySelectorAll("table")].filter((t) => t.rows[0].cells[4]?.textContent === "message")
      .flatMap((t) => [...t.rows].slice(1).map((row) => r(row.cells[4]).width)),
    labels: [...document.querySelectorAll("svg text[text-anchor=end]")].map((e) => [e.textContent, e.getBBox().x]),
    scroll: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    findings: [...document.querySelectorAll("table.findings tr")].slice(1).map((tr) => [...tr.cells]
      .filter((td) => ["rule", "target", "message"].includes(td.dataset.label) && td.textContent)
      .map((td) => [td.dataset.label, r(td).left, r(td).right])),
  }));
};
addEventListener("load", measure);
addEventListener("resize", measure);  // headless Chromium lays out at 500 px, then sizes the window
</script>"""


def _chromium_run(exe, tmp_path, page_file, *args):
    return subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            *args,
            page_file.as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )


@pytest.mark.browser
@pytest.mark.parametrize("width", [390, 1280])
def test_chromium_layout_on_a_phone_and_a_laptop(tmp_path, width):
    """The page as Chromium lays it out (a measuring script added to a copy of the report, the
    report itself runs none): messages keep a readable width instead of breaking letter by
    letter, pills stay one line, heatmap row labels are whole and start inside the picture.
    Screenshots of both widths are kept in the test's folder (FATBIN_INSPECT_SCREENSHOTS=DIR
    copies them there)."""
    exe = _chromium()
    if exe is None:
        pytest.skip("Chromium not found (Debian: apt-get install chromium)")
    deep = tmp_path / "a-rather-long-folder-name" / "site-packages" / "vendor_package" / "lib"
    deep.mkdir(parents=True)
    for f in (SM80, MULTI, PTX80):
        shutil.copyfile(f, deep / ("libvendor_" + os.path.basename(f) + ".so"))
    page = cli(
        "gate",
        str(deep),
        "--require",
        "sm_80,sm_90,sm_120",
        "--require-ptx",
        "--isolated",
        "--gpu",
        "H100",
        "--gpu",
        "RTX 5090",
        "--format",
        "html",
    ).out
    report = tmp_path / "report.html"
    report.write_text(page, encoding="utf-8")
    png = tmp_path / f"report-{width}.png"
    _chromium_run(exe, tmp_path, report, f"--window-size={width},2600", f"--screenshot={png}")
    w, _h, rows = png_pixels(png)
    assert w == width and len({px for row in rows[::3] for px in row[::3]}) > 20
    if os.environ.get("FATBIN_INSPECT_SCREENSHOTS"):
        shutil.copy(png, os.environ["FATBIN_INSPECT_SCREENSHOTS"])
    measured = tmp_path / "measure.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    log = _chromium_run(
        exe,
        tmp_path,
        measured,
        f"--window-size={width},900",
        "--enable-logging=stderr",
        "--v=0",
        f"--screenshot={tmp_path / 'measured.png'}",
    ).stderr
    layouts = [json.loads(m) for m in re.findall(r'"LAYOUT (\{.*\})", source:', log)]
    layout = next((x for x in reversed(layouts) if x["width"] == width), None)
    assert layout is not None, [x["width"] for x in layouts]
    assert layout["cells"] and min(layout["cells"]) >= 150, layout["cells"]  # no letter-by-letter column
    assert all(h < 24 for _, h in layout["pills"]), layout["pills"]  # one line each
    names = {"libvendor_" + os.path.basename(f) + ".so" for f in (SM80, MULTI, PTX80)}
    labels = layout["labels"]
    assert {t for t, _ in labels} >= names and all(x >= 0 for _, x in labels), labels  # whole, not cut
    scroll_width, client_width = layout["scroll"]
    assert scroll_width <= client_width, layout["scroll"]  # nothing to scroll sideways
    cells = [c for row in layout["findings"] for c in row]
    assert layout["findings"] and all(left >= 0 and right <= width for _, left, right in cells), cells
    assert all({"rule", "message"} <= {label for label, _, _ in row} for row in layout["findings"])


def test_drilldown_is_bounded_per_file(monkeypatch):
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.inventory.reader import inspect_path
    from fatbin_inspect.release.findings import FindingsReport
    from fatbin_inspect.render.findings import html
    from fatbin_inspect.scanning import coverage

    monkeypatch.setattr(html, "FATBINS_SHOWN", 1)
    reports = list(inspect_path(MULTI, Options()))  # two fatbins (device-link output and the code)
    assert len(reports[0].fatbins) == 2
    page = html.render(FindingsReport("check", (), coverage=coverage.build(reports), files=tuple(reports)))
    assert "… and 1 more fatbin (" in page and page.count(".nv_fatbin @ 0x") == 1


def test_partial_coverage_is_marked_in_the_verdict_heatmap(tmp_path):
    import builders as B

    lib = tmp_path / "lib.so"  # a TU for sm_90 and one for sm_80 only: the H100 sets the second aside
    lib.write_bytes(B.arch_library(B.arch_fatbin(["90"]), B.arch_fatbin(["80"])))
    page = cli(
        "check", str(lib), "--gpu", "H100", "--gpu", "RTX 5090", "--driver", "580", "--format", "html"
    ).out
    doc = parse(page)
    _cov, verdicts = list(doc.iter(f"{SVG}svg"))
    glyphs = [t.text for t in verdicts.iter(f"{SVG}text") if t.get("aria-hidden")]
    assert glyphs == ["✓~", "✗"]  # RTX 5090: neither fatbin has code for it
    tips = ["".join(t.itertext()) for r in verdicts.iter(f"{SVG}rect") for t in r.iter(f"{SVG}title")]
    assert "partial coverage" in tips[0] and "partial coverage" not in tips[1]


def test_identical_findings_are_one_row_with_a_count():
    """The same rule, target and message of several files is one row naming them all: the gate
    of fixtures/bin gives 172 findings, 29 of them one FBI006 line of 29 files."""
    args = ["gate", fixture_path("bin"), "--require", "sm_80,sm_90,sm_120", "--require-ptx", "--isolated"]
    findings = cli(*args, "--format", "json", codes=1).json()["findings"]
    page = cli(*args, "--format", "html", codes=1).out
    keys = {(f["severity"], f["rule_id"], f.get("target") or "", f["message"]) for f in findings}
    rows = re.findall(r'<tr><td data-label="severity">.*?</tr>', page)
    assert len(rows) == len(keys) < len(findings)
    biggest = max(
        keys,
        key=lambda k: sum(
            (f["severity"], f["rule_id"], f.get("target") or "", f["message"]) == k for f in findings
        ),
    )
    n = sum((f["severity"], f["rule_id"], f.get("target") or "", f["message"]) == biggest for f in findings)
    row = next(r for r in rows if html.escape(biggest[3], quote=False) in r)
    assert f"×{n}" in row and f"{n} artifacts" in row
    for f in findings:  # every artifact is still named
        assert breakable(f["path"]) in page
