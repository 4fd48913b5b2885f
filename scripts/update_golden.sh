#!/usr/bin/env bash
# Rewrite the golden files of the table output (tests/golden/cli) and of the findings formats
# (tests/golden), and the tool's output quoted in README.md and docs/*.md (tests/package/test_docs_outputs.py:
# the blocks between <!-- output: NAME --> and <!-- /output -->; those over corpus libraries only
# where scripts/fetch_corpus.sh fetched them), after an intended change; then show what changed:
# review it before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
FATBIN_INSPECT_UPDATE_GOLDEN=1 python3 -m pytest -q -p no:cacheprovider tests/cli/test_cli_layout.py tests/render/test_findings_formats.py -k "golden or table or markdown or sarif or json or junit or github"
FATBIN_INSPECT_UPDATE_GOLDEN=1 python3 -m pytest -q -p no:cacheprovider tests/package/test_docs_outputs.py -rs
git status --short tests/golden README.md docs
