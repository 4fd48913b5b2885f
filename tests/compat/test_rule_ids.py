"""One rule-id table (issue 21 step 6): every R- id in the code, the data, explain's answers and
docs/compatibility.md is in ``data.rule_ids()``, and every id of the table is documented."""

import json
import pathlib
import re

from conftest import ROOT

from fatbin_inspect.compat import data
from fatbin_inspect.compat.explain import explain

RULE = re.compile(r"\bR-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\b")
PKG = pathlib.Path(ROOT) / "fatbin_inspect"
DOC = (pathlib.Path(ROOT) / "docs" / "compatibility.md").read_text(encoding="utf-8")


def _ids(text):
    return set(RULE.findall(text))


def test_code_data_and_docs_use_the_table_and_no_other_id():
    table = set(data.rule_ids())
    code = set().union(*(_ids(p.read_text(encoding="utf-8")) for p in PKG.rglob("*.py")))
    datas = set().union(*(_ids(p.read_text(encoding="utf-8")) for p in (PKG / "data").glob("*.json")))
    assert code - table == set(), "ids in the code that the table lacks"
    assert datas - table == set(), "ids in the data that the table lacks"
    assert _ids(DOC) - table == set(), "ids in docs/compatibility.md that the table lacks"
    assert table - _ids(DOC) == set(), "ids of the table that docs/compatibility.md never explains"


def test_explain_and_check_say_the_same_id_for_a_disabled_jit():
    """``explain 223`` and ``check --env CUDA_DISABLE_PTX_JIT=1`` name one rule (was R-JIT-OFF vs R-JIT-ENV)."""
    answer = json.dumps(explain("223"), default=str)
    assert "R-JIT-ENV" in answer and "R-JIT-OFF" not in answer
