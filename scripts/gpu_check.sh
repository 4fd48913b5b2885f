#!/usr/bin/env bash
# Ground truth on a GPU machine for fatbin-inspect (issue 6), in one run of a few minutes.
#
#   scripts/gpu_check.sh prepare   # here, with network: fill .whl/ (git-ignored) with the wheel of
#                                  # this project, cuda-python, nvidia-ml-py and pytest
#   scripts/gpu_check.sh           # on the device machine (no network), from the repository root,
#                                  # with .whl carried:  run(carry=[".whl"], command="scripts/gpu_check.sh")
#
# Writes to $OUT (default ./gpu-check-out): doctor.txt/.json, pytest_gpu.txt (tests marked gpu:
# every fixture loaded, prediction == driver), verify_fixtures.txt/.json, verify_torch.txt/.json
# (torch's libtorch_cuda.so when torch is installed), summary.txt. Every step has its own time limit,
# so one hang costs that step only.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WHL=$ROOT/.whl
cd "$ROOT"

if [[ ${1:-run} == prepare ]]; then
  rm -rf "$WHL" && mkdir -p "$WHL"
  python3 -m pip wheel --no-deps -q -w "$WHL" .
  python3 -m pip download -q --only-binary=:all: -d "$WHL" "cuda-python>=12" "nvidia-ml-py>=12" "pytest>=7" \
    pyelftools lief click rich lz4 zstandard
  du -sh "$WHL"
  exit 0
fi

OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
step() {  # step NAME SECONDS CMD...: run with a limit, keep its output and exit status
  local name=$1 limit=$2; shift 2
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  log "$name: exit $rc ($*)"
  tail -n 15 "$OUT/$name.txt" >>"$OUT/summary.txt"
}

log "host: $(uname -a)"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 && head -n 12 "$OUT/nvidia-smi.txt" >>"$OUT/summary.txt"

# a venv that still sees the machine's torch (system site-packages), the project from the wheel
python3 -m venv --system-site-packages "$OUT/venv" || { log "venv failed"; exit 2; }
PY=$OUT/venv/bin/python
$PY -m pip install -q --no-index --find-links "$WHL" "fatbin-inspect[gpu]" pytest >"$OUT/install.txt" 2>&1 \
  || { log "install failed"; tail -n 20 "$OUT/install.txt" >>"$OUT/summary.txt"; exit 2; }
FI=$OUT/venv/bin/fatbin-inspect
log "installed: $($PY -m pip list 2>/dev/null | grep -iE 'fatbin|cuda|nvidia-ml|torch' | tr -s ' ' | paste -sd';')"

step doctor 120 "$FI" doctor
"$FI" doctor --no-torch-archs --format json -o "$OUT/doctor.json" >/dev/null 2>&1
step pytest_gpu 240 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/system/test_verify_gpu.py -rs
step verify_fixtures 180 "$FI" verify fixtures/bin fixtures/compat
"$FI" verify fixtures/bin fixtures/compat --format json -o "$OUT/verify_fixtures.json" >/dev/null 2>&1

TORCH_LIB=$($PY -c 'import importlib.util, os
s = importlib.util.find_spec("torch")
p = os.path.join(os.path.dirname(s.origin), "lib", "libtorch_cuda.so") if s and s.origin else ""
print(p if p and os.path.isfile(p) else "")' 2>/dev/null)
if [[ -n $TORCH_LIB ]]; then
  step verify_torch 240 "$FI" verify "$TORCH_LIB" --no-entries --max-fatbins 400 --findings-only --format table
  "$FI" verify "$TORCH_LIB" --no-entries --max-fatbins 400 --format json -o "$OUT/verify_torch.json" >/dev/null 2>&1
else
  log "verify_torch: skipped (no torch/lib/libtorch_cuda.so)"
fi
rm -rf "$OUT/venv"
log "done"
