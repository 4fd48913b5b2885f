#!/usr/bin/env bash
# Download the real CUDA wheels of CORPUS.md into .cache/corpus (git-ignored; several GB) for the
# opt-in tests (pytest -m corpus) and the benchmarks, and unpack what those need:
#   .cache/corpus/x/...                   libtorch_cuda.so, libcublasLt.so.13, libcufft.so.12 (scripts/bench.py)
#   .cache/tools/cuobjdump-12.8/cuobjdump from triton==3.3.1 (reads CUDA 12.0-12.2 builds cuobjdump 13 rejects)
# Also installs the oracle and the peer: nvidia-cuda-cuobjdump==13.5.37 and cubloaty.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
C=$ROOT/.cache/corpus
mkdir -p "$C" "$ROOT/.cache/tools"
SPECS=(torch==2.14.1 torchvision==0.29.1 nvidia-cublas==13.1.1.3 nvidia-cufft==12.0.0.61 nvidia-curand==10.4.0.35 nvidia-nccl-cu13==2.32.3
       nvidia-nvshmem-cu13==3.4.5 nvidia-cuda-cupti==13.0.85 nvidia-cuda-nvrtc==13.0.88 cupy-cuda12x==14.2.0
       onnxruntime-gpu==1.23.2 nvidia-cublas-cu12==12.4.5.8 triton==3.3.1 bitsandbytes==0.42.0 bitsandbytes==0.50.2
       cupy-cuda11x==13.6.0 ctranslate2==3.24.0 ctranslate2==4.8.5
       spconv-cu120==2.3.6 jax-cuda12-plugin==0.10.2 xformers==0.0.35)
for spec in "${SPECS[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: "$spec" -d "$C" || echo "could not fetch $spec" >&2
done
python3 -m pip download -q --no-deps --only-binary=:all: --platform win_amd64 bitsandbytes==0.50.2 -d "$C/win" || true
# an aarch64 wheel (GB10, Grace, Jetson hosts) for the index tests' per-CPU wheel choice
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_27_aarch64 --python-version 3.11 \
  nvidia-curand==10.4.0.35 -d "$ROOT/.cache/corpus-aarch64" || true
mkdir -p "$C/x"
(cd "$C/x" && unzip -o -q "$C"/torch-2.14.1-*.whl 'torch/lib/libtorch_cuda.so' \
  && unzip -o -q "$C"/nvidia_cublas-13.1.1.3-*.whl '*/libcublasLt.so*' '*/libcublas.so*' \
  && unzip -o -q "$C"/nvidia_cufft-12.0.0.61-*.whl '*.so*')
unzip -o -q -j "$C"/triton-3.3.1-*.whl 'triton/backends/nvidia/bin/cuobjdump' -d "$ROOT/.cache/tools/cuobjdump-12.8"
chmod +x "$ROOT/.cache/tools/cuobjdump-12.8/cuobjdump"
python3 -m pip install -q nvidia-cuda-cuobjdump==13.5.37 cubloaty
du -sh "$C"
