#!/usr/bin/env bash
# Rewrite the golden files of the table output (tests/golden/cli) and of the findings formats
# (tests/golden) after an intended change, then show what changed: review it before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
FATBIN_INSPECT_UPDATE_GOLDEN=1 python3 -m pytest -q -p no:cacheprovider tests/cli/test_cli_layout.py tests/render/test_findings_formats.py -k "golden or table or markdown or sarif or json or junit or github"
git status --short tests/golden
