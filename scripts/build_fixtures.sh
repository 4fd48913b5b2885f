#!/usr/bin/env bash
# Rebuild the committed test fixtures of fatbin-inspect from fixtures/src.
#
#   fixtures/bin/      inventory fixtures (fixtures/README.md: t01..t19, o1..o3, v1, hidden/PE)
#   fixtures/compat/   one file per concrete case of COMPAT_CASES.md (described in compat/cases.json)
#   fixtures/units/    multi-TU libraries and extension sets for R-FILE / R-UNIT / R-VARIANT
#                      (docs/compatibility.md §4; ONLY=units builds just these, with nvcc 13.0 and gcc)
#   fixtures/cuobjdump_expected.json   cuobjdump -lelf -lptx [-all] listing of every fixture (if cuobjdump found)
#
# Tools (override with env vars):
#   NVCC, PTXAS, FATBINARY   CUDA 13.0 toolkit (default: from PATH)
#   PTXAS12                  ptxas 12.9 (sm_50..sm_72, sm_101, ABI-v8 "a"-bit cubins)
#   PTXAS11                  ptxas 11.8 (sm_35 and v7 cubins)
#   NVCC135                  nvcc 13.5 (sm_107/sm_107f, sm_110f, PTX ISA 9.5, -enable-tile Tile IR)
#   NVCC118                  nvcc 11.8 (sm_52..sm_90; default -arch sm_52 + compute_52): units/f5
#   CUOBJDUMP                cuobjdump 13.5 (optional; only for cuobjdump_expected.json)
#   MINGW_PREFIX             default x86_64-w64-mingw32- (optional; PE/DLL fixture)
# The old ptxas binaries come from wheels that ship ptxas + libnvvm but no nvcc driver:
#   pip download --no-deps --only-binary=:all: nvidia-cuda-nvcc-cu12 -d /tmp/whl   # 12.9.86
#   pip download --no-deps --only-binary=:all: nvidia-cuda-nvcc-cu11 -d /tmp/whl   # 11.8.89
#   mkdir -p /tmp/cu12 /tmp/cu11
#   unzip -q /tmp/whl/nvidia_cuda_nvcc_cu12-*.whl -d /tmp/cu12
#   unzip -q /tmp/whl/nvidia_cuda_nvcc_cu11-*.whl -d /tmp/cu11
#   export PTXAS12=/tmp/cu12/nvidia/cuda_nvcc/bin/ptxas PTXAS11=/tmp/cu11/nvidia/cuda_nvcc/bin/ptxas
#   chmod +x "$PTXAS12" "$PTXAS11"
#   pip install nvidia-cuda-cuobjdump==13.5.37   # cuobjdump lands in site-packages/nvidia/cu13/bin
# nvcc 13.5 and its Tile IR assembler, into a folder kept out of git (.git/info/exclude: .tc135/):
#   pip install --target .tc135 nvidia-cuda-nvcc==13.5.37 nvidia-nvvm nvidia-cuda-crt nvidia-cuda-cccl \
#       nvidia-cuda-runtime nvidia-cuda-tileiras nvidia-nvfatbin
#   export NVCC135=$PWD/.tc135/nvidia/cu13/bin/nvcc
# nvcc 11.8 (a whole toolkit: PyPI's nvidia-cuda-nvcc-cu11/-cu12 hold only ptxas) from Debian
# bookworm's non-free nvidia-cuda-toolkit, unpacked into a folder without installing it:
#   mkdir -p /tmp/apt118/lists/partial /tmp/apt118/cache/archives/partial /tmp/apt118/root && cd /tmp/apt118
#   echo 'deb http://deb.debian.org/debian bookworm main contrib non-free' > sources.list
#   A="-o Dir::Etc::SourceList=$PWD/sources.list -o Dir::Etc::SourceParts=/dev/null
#      -o Dir::State::Lists=$PWD/lists -o Dir::Cache=$PWD/cache"
#   apt-get $A update && apt-get $A download nvidia-cuda-toolkit nvidia-cuda-dev libnvvm4
#   for d in nvidia-cuda-toolkit libnvvm4; do dpkg -x ${d}_*.deb root; done
#   dpkg-deb --fsys-tarfile nvidia-cuda-dev_*.deb | tar -x -C root ./usr/include
#   then lay it out as a CUDA_HOME (bin/ nvcc crt/ ptxas fatbinary cudafe++ nvlink, nvvm/bin/cicc,
#   nvvm/lib64/libnvvm.so*, nvvm/libdevice, include/) with the usual bin/nvcc.profile
#   (TOP = $(_HERE_)/.. ; NVVMIR_LIBRARY_DIR, PATH += $(TOP)/nvvm/bin:$(_HERE_):, INCLUDES += -I$(TOP)/include)
#   export NVCC118=<that folder>/bin/nvcc     # gcc 12 is newer than 11.8 knows: -allow-unsupported-compiler
# Fixtures that need a missing tool are skipped with a message; existing copies are left alone.
# MinGW: apt-get install -y gcc-mingw-w64-x86-64
#
# Determinism: sources are copied to a fixed path (/tmp/fatbin-inspect-fixtures) because nvcc hashes
# the absolute source path into module ids, their mtime is fixed (it is in .debug_line), and nvcc runs with -keep (fixed intermediate file names,
# see nv() below). Two runs give byte-identical files.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIX=$ROOT/fixtures
BIN=$FIX/bin
CMP=$FIX/compat
UNITS=$FIX/units
NVCC=${NVCC:-nvcc}
PTXAS=${PTXAS:-ptxas}
FATBINARY=${FATBINARY:-fatbinary}
PTXAS12=${PTXAS12:-}
PTXAS11=${PTXAS11:-}
NVCC135=${NVCC135:-}
NVCC118=${NVCC118:-}
MINGW_PREFIX=${MINGW_PREFIX:-x86_64-w64-mingw32-}
MAX_BYTES=307200          # 300 KB per fixture
MAX_TOTAL=5242880         # 5 MB in all

if [[ -z ${CUOBJDUMP:-} ]]; then
  CUOBJDUMP=$(command -v cuobjdump || python3 -c 'import glob, os, site
print(next(iter(p for d in site.getsitepackages()
                for p in glob.glob(os.path.join(d, "nvidia", "*", "bin", "cuobjdump"))), ""))' || true)
fi

have() { [[ -n $1 ]] && [[ -x $1 || -n $(command -v "$1" 2>/dev/null) ]]; }
skip() { echo "SKIP: $*" >&2; }
have "$NVCC" && have "$PTXAS" && have "$FATBINARY" || { echo "need nvcc, ptxas, fatbinary 13.0" >&2; exit 2; }

# Fixed build directory (see Determinism above). Cleaned before and after.
W=/tmp/fatbin-inspect-fixtures
rm -rf "$W"
mkdir -p "$W" "$BIN" "$CMP"
trap 'rm -rf "$W"' EXIT
cp "$FIX"/src/*.cu "$FIX"/src/*.c "$W"/
touch -d "2025-01-01 00:00:00 UTC" "$W"/*.cu "$W"/*.c   # -G/-lineinfo .debug_line records the mtime
cd "$W"

# nvcc options shared by every host build: dynamic cudart keeps executables small.
HOST=(-cudart shared)
EXE=("${HOST[@]}" -Xlinker -s)

# nvcc with -keep: intermediate files get fixed names (k.ptx, k.cudafe1.cpp) instead of
# /tmp/tmpxft_<pid>_..., which otherwise end up in .o symbol tables and -G/-lineinfo debug info.
nv() { rm -rf keep && mkdir keep && "$NVCC" -keep -keep-dir keep "$@"; }

###############################################################################################
# Unit fixtures (docs/compatibility.md §4): libraries of several translation units whose
# fatbins target different GPUs, one kernel per TU (unit.cu, -DTU=name). Objects from nvcc -c
# are linked by gcc against a stub libcudart.so.13 (or .12), so each TU keeps its own fatbin
# in .nv_fatbin and there is no device-link fatbin.
###############################################################################################
build_units() {
  echo "== unit fixtures"
  mkdir -p "$UNITS"
  for maj in 12 13; do
    mkdir -p stub$maj
    gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.$maj -o stub$maj/libcudart.so.$maj cudart_stub.c
    ln -sf libcudart.so.$maj stub$maj/libcudart.so
  done
  # tu NAME GENCODE...: one object with one kernel NAME_kernel
  tu() { local n=$1; shift; nv -c -Xcompiler -fPIC -DTU="$n" "$@" -o "tu_$n.o" unit.cu; }
  # lib OUT CUDART_MAJOR TU...: a stripped shared library of those objects, DT_NEEDED libcudart.so.N
  lib() { local out=$1 maj=$2; shift 2
    gcc -shared -Wl,-s -o "$UNITS/$out" "${@/#/tu_}" -Wl,--no-as-needed -Lstub"$maj" -lcudart; }
  # shellcheck disable=SC2046
  {
  tu full_a $(g 80 sm_80) $(g 90 sm_90) $(g 100 sm_100) $(g 120 '[sm_120,compute_120]')
  tu full_b $(g 80 sm_80) $(g 90 sm_90) $(g 100 sm_100) $(g 120 '[sm_120,compute_120]')
  tu h_a $(g 90a sm_90a)
  tu h_b $(g 90a sm_90a)
  tu gen $(g 80 sm_80) $(g 90 sm_90) $(g 120 sm_120)
  tu hopper $(g 90a sm_90a)
  tu blackwell $(g 100f '[sm_100f,compute_100f]')
  tu old $(g 75 sm_75)
  tu new $(g 120 sm_120)
  tu gen80 $(g 80 sm_80)
  tu ext_generic $(g 80 sm_80) $(g 90 sm_90) $(g 100 sm_100) $(g 120 sm_120)
  tu ext_attn $(g 80 '[sm_80,compute_80]')
  tu var12 $(g 80 sm_80) $(g 90 sm_90)
  tu var13 $(g 80 sm_80) $(g 90 sm_90) $(g 100 sm_100) $(g 120 sm_120)
  tu own_a $(g 80 '[sm_80,compute_80]')
  tu own_b $(g 80 '[sm_80,compute_80]')
  nv -c -Xcompiler -fPIC $(g 80 sm_80) -o tu_linked.o linked.cu  # five ncclDevKernel_* kernels
  tu own_c $(g 86 sm_86) $(g 90 sm_90) $(g 100 sm_100) $(g 120 '[sm_120,compute_120]')
  tu own_d $(g 86 sm_86) $(g 90 sm_90) $(g 100 sm_100) $(g 120 '[sm_120,compute_120]')
  nv -lib -Xcompiler -fPIC $(g 75 sm_75) $(g 80 sm_80) -o libcomponent.a linked.cu  # an older build
  }
  lib f1_full.so 13 full_a.o full_b.o               # R-FILE 1: every fatbin loads on 8.0-12.x
  lib f2_sm90a_only.so 13 h_a.o h_b.o               # R-FILE 2: nothing loads except on CC 9.0
  lib f3_specialised.so 13 gen.o hopper.o blackwell.o old.o new.o  # R-FILE 3: (i), (ii), (iii)
  lib f4_gap.so 13 gen80.o hopper.o                 # R-FILE 4: general code for sm_80 only + sm_90a
  lib ext_generic.so 13 ext_generic.o               # R-UNIT: one distribution of three extensions
  lib ext_hopper.so 13 hopper.o
  lib ext_attn.so 13 ext_attn.o
  lib libvar_cuda126.so 12 var12.o                  # R-VARIANT: alternative builds per CUDA
  lib libvar_cuda130.so 13 var13.o
  lib f6_linked_gap.so 13 own_a.o own_b.o linked.o  # R-FILE 4 + issue 22 item 8: a linked library's
  # kernels (sm_80 SASS only) are the gaps beside the library's own sm_80 + compute_80 code
  # f7 (R-FILE, guard of (i), issue 56 item 2): a static component (libcomponent.a, the five
  # ncclDevKernel_* kernels for sm_75 + sm_80, linked whole) beside the library's own code for
  # sm_86, sm_90, sm_100, sm_120 + compute_120: on CC 7.5 and 8.0 only the component loads
  gcc -shared -Wl,-s -o "$UNITS/f7_static_component.so" tu_own_c.o tu_own_d.o \
    -Wl,--whole-archive libcomponent.a -Wl,--no-whole-archive -Wl,--no-as-needed -Lstub13 -lcudart
  build_dropped
}
# f5 (the guard of clause (i), docs/compatibility.md §4): a CUDA 11.8 library whose TUs are built
# for sm_70, sm_75, sm_80, sm_86 and sm_90, and one helper TU built without -arch, which nvcc 11/12
# compile for their default sm_52 + compute_52: a stray small fatbin that JITs on a CC 6.1 GPU,
# where none of the library's kernels has code. DT_NEEDED libcudart.so.11.0 (stub).
build_dropped() {
  if ! have "$NVCC118"; then skip "units/f5 (NVCC118 not set: nvcc 11.8)"; return 0; fi
  mkdir -p stub11
  gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.11.0 -o stub11/libcudart.so.11.0 cudart_stub.c
  ln -sf libcudart.so.11.0 stub11/libcudart.so
  tu11() { local n=$1; shift; rm -rf keep && mkdir keep
    "$NVCC118" -keep -keep-dir keep -allow-unsupported-compiler -c -Xcompiler -fPIC -DTU="$n" "$@" \
      -o "tu_$n.o" unit.cu; }
  local broad=() a
  for a in 70 75 80 86 90; do broad+=(-gencode "arch=compute_$a,code=sm_$a"); done
  for n in attn gemm norm; do tu11 "$n" "${broad[@]}"; done
  tu11 helper                                      # no -arch: sm_52 + compute_52
  lib f5_dropped_gen.so 11 attn.o gemm.o norm.o helper.o
}
if [[ ${ONLY:-} == units ]]; then
  g() { echo "-gencode arch=compute_$1,code=$2"; }
  build_units
  exit 0
fi

###############################################################################################
# Inventory fixtures (fixtures/README.md)
###############################################################################################
echo "== inventory fixtures"
g() { echo "-gencode arch=compute_$1,code=$2"; }

nv "${EXE[@]}" -arch=sm_80 -o "$BIN"/t01_exe_sm80 k.cu
# shellcheck disable=SC2046
nv "${EXE[@]}" $(g 75 sm_75) $(g 80 sm_80) $(g 90 '[sm_90,compute_90]') -o "$BIN"/t02_exe_sm75_sm80_sm90_c90 k.cu
nv "${EXE[@]}" $(g 80 compute_80) -o "$BIN"/t03_exe_ptx_only_c80 k.cu
nv "${EXE[@]}" $(g 90a '[sm_90a,compute_90a]') -o "$BIN"/t04_exe_sm90a_c90a k.cu
nv "${EXE[@]}" $(g 100f '[sm_100f,compute_100f]') $(g 120f sm_120f) $(g 100a sm_100a) \
  $(g 103f sm_103f) $(g 110f sm_110f) $(g 121a sm_121a) -o "$BIN"/t05_exe_af_targets k.cu
nv "${EXE[@]}" $(g 80 '[sm_80,compute_80]') -Xfatbin -compress-all -o "$BIN"/t06_exe_compress_all k.cu
nv "${EXE[@]}" $(g 80 '[sm_80,compute_80]') --no-compress -o "$BIN"/t07_exe_no_compress k.cu
nv "${EXE[@]}" $(g 80 '[sm_80,compute_80]') --compress-mode=speed -o "$BIN"/t08_exe_mode_speed_lz4 k.cu
nv "${EXE[@]}" $(g 80 '[sm_80,compute_80]') --compress-mode=size -o "$BIN"/t08_exe_mode_size k.cu
nv -rdc=true -c -arch=sm_80 -o rdc_a.o rdc_a.cu
nv -rdc=true -c -arch=sm_80 -o rdc_b.o rdc_b.cu
cp rdc_a.o "$BIN"/t09_rdc_a_sm80.o
"$NVCC" -lib -o "$BIN"/t10_rdc_lib_sm80.a rdc_a.o rdc_b.o
nv "${EXE[@]}" -rdc=true -arch=sm_80 -o "$BIN"/t11_exe_rdc_sm80 rdc_a.o rdc_b.o k.cu
nv "${HOST[@]}" -Xlinker -s -shared -Xcompiler -fPIC -DK_NO_MAIN $(g 86 sm_86) $(g 89 compute_89) \
  -o "$BIN"/t12_lib_sm86_c89.so k.cu
nv -fatbin $(g 75 '[sm_75,compute_75]') $(g 120 sm_120) -o "$BIN"/t13_raw_sm75_c75_sm120.fatbin k.cu
nv -cubin -arch=sm_90a -o "$BIN"/t14_sm90a.cubin k.cu
nv -ptx -arch=compute_90a -o "$BIN"/t15_c90a.ptx k.cu
nv "${EXE[@]}" -G -arch=sm_80 -o "$BIN"/t16_exe_debug_G_sm80 k.cu
nv -c $(g 80 sm_80) -o "$BIN"/t17_nonrdc_sm80.o k.cu
nv -rdc=true -c $(g 80 lto_80) -o "$BIN"/t18_lto80.o k.cu
nv -rdc=true -fatbin $(g 80 lto_80) $(g 90 sm_90) -o "$BIN"/t18_lto80_sm90.fatbin k.cu
nv "${EXE[@]}" -lineinfo -arch=sm_80 -o "$BIN"/t19_exe_lineinfo_sm80 k.cu
nv -fatbin $(g 100 sm_100) $(g 100a sm_100a) $(g 103f sm_103f) $(g 120 compute_120) \
  $(g 120a compute_120a) $(g 120f compute_120f) -o "$BIN"/v1_sm100_sm100a_sm103f_c120_c120a_c120f.fatbin k.cu

# --- CUDA 13.5 fixtures (NVCC135): Rubin sm_107/sm_107f, Thor sm_110f, PTX ISA 9.5, Tile IR ------
# The wheel ships libcudart.so.13 without the libcudart.so link nvcc's -lcudart needs: make one.
if have "$NVCC135"; then
  mkdir -p lib135
  ln -sf "$(dirname "$NVCC135")/../lib/libcudart.so.13" lib135/libcudart.so
  nv135() { rm -rf keep && mkdir keep && "$NVCC135" -keep -keep-dir keep -L"$W"/lib135 "$@"; }
  # -arch=sm_107f: compute_107 PTX + sm_107f cubin + compute_107f PTX (all ISA 9.5); sm_110f cubin
  nv135 "${EXE[@]}" -arch=sm_107f $(g 110f sm_110f) -o "$BIN"/t20_exe_sm107f_sm110f_c107_c107f k.cu
  # -enable-tile: a second fatbin with the Tile code; code=sm_100 -> a Tile cubin (tileiras builds
  # it as sm_100a), code=compute_100 -> cuda_tile IR (entry kind 0x80) beside compute_100 PTX
  nv135 "${EXE[@]}" -enable-tile -std=c++20 $(g 100 sm_100) -o "$BIN"/t21_exe_tile_sm100 tile.cu
  nv135 "${EXE[@]}" -enable-tile -std=c++20 $(g 100 compute_100) -o "$BIN"/t22_exe_tile_ir_c100 tile.cu
else
  skip "t20-t22 (NVCC135 not set: nvcc 13.5 for sm_107, PTX ISA 9.5 and Tile IR)"
fi

# --- PTX / cubin helpers for hand-assembled fatbins -------------------------------------------
NVCC_VIRT=" 75 80 86 87 88 89 90 90a 100 100a 100f 103 103a 103f 110 110a 110f 120 120a 120f 121 121a 121f "
# ptx OUT TARGET ISA: PTX of k.cu from nvcc 13 (nearest virtual arch), .version/.target rewritten.
ptx() {
  local out=$1 t=$2 isa=$3 base=$2
  if [[ $NVCC_VIRT != *" $t "* ]]; then
    case $t in 101*) base=100 ;; *) base=75 ;; esac
  fi
  [[ -f base_$base.ptx ]] || "$NVCC" -ptx -arch=compute_"$base" -o base_"$base".ptx k.cu
  sed -e "s/^\.version .*/.version $isa/" -e "s/^\.target [^ ,]*/.target sm_$t/" base_"$base".ptx > "$out"
}
# ptxas_for ARCH: which ptxas can emit this SASS target ("" if unavailable).
ptxas_for() {
  case $1 in
    35|37) echo "$PTXAS11" ;;
    5?|6?|7[02]|101*) echo "$PTXAS12" ;;
    *) echo "$PTXAS" ;;
  esac
}
# cubin OUT ARCH [PTXAS]: k.cu SASS for sm_ARCH; PTX ISA lowered to what that ptxas accepts.
cubin() {
  local out=$1 a=$2 px=${3:-$(ptxas_for "$2")} isa=9.0
  [[ $px == "$PTXAS12" && -n $px ]] && isa=8.8
  [[ $px == "$PTXAS11" && -n $px ]] && isa=7.8
  ptx "src_$a.ptx" "$a" "$isa"
  "$px" -arch=sm_"$a" -m64 -o "$out" "src_$a.ptx"
}
# Check that an edited PTX still assembles (warn only: some ISA/target pairs are not assemblable).
check_ptx() {
  local f=$1 t=$2 px
  px=$(ptxas_for "$t")
  [[ -n $px ]] || return 0
  "$px" -arch=sm_"$t" -m64 -o /dev/null "$f" 2>/dev/null || echo "  note: $f (.target sm_$t) is not assemblable by $px" >&2
}

if have "$PTXAS11"; then
  cubin o1.cubin 35 "$PTXAS11"
  cp o1.cubin "$BIN"/o1_sm35_ptxas118.cubin
  cubin o2_50.cubin 50 "$PTXAS11"
  ptx o2_c50.ptx 50 7.8
  "$FATBINARY" --create="$BIN"/o2_sm35_sm50_c50.fatbin -64 --image3=kind=elf,sm=35,file=o1.cubin \
    --image3=kind=elf,sm=50,file=o2_50.cubin --image3=kind=ptx,sm=50,file=o2_c50.ptx
else
  skip "o1, o2, o3 (PTXAS11 not set)"
fi
if have "$PTXAS12" && have "$PTXAS11"; then
  for a in 90a 100a 120f; do cubin o3_$a.cubin $a "$PTXAS12"; done
  "$FATBINARY" --create="$BIN"/o3_sm50_sm90a_sm100a_sm120f_c50.fatbin -64 \
    --image3=kind=elf,sm=50,file=o2_50.cubin --image3=kind=elf,sm=90a,file=o3_90a.cubin \
    --image3=kind=elf,sm=100a,file=o3_100a.cubin --image3=kind=elf,sm=120f,file=o3_120f.cubin \
    --image3=kind=ptx,sm=50,file=o2_c50.ptx
  cp o3_90a.cubin "$BIN"/o3_sm90a_ptxas129.cubin     # ABI v7, e_flags 0x800 = a
  cp o3_100a.cubin "$BIN"/o3_sm100a_ptxas129.cubin   # ABI v8, e_flags 0x8 = a
elif have "$PTXAS11"; then
  skip "o3 (PTXAS12 not set)"
fi

# Blobs are linked in with .incbin (fixtures/src/host.c) so that the section gets an address in a
# LOAD segment like the real thing; objcopy --add-section would leave it outside every segment
# ("allocated section not in segment") and, for PE, below the image base.
blob_so() {  # blob_so OUT BLOB SECTION ALIGN [gcc args...]
  local out=$1 blob=$2 sect=$3 align=$4; shift 4
  gcc -shared -fPIC -O2 -DBLOB_FILE="\"$blob\"" -DBLOB_SECTION="\"$sect\"" -DBLOB_ALIGN="\"$align\"" \
    -o "$out" host.c "$@"
}
pad_to() { local n; n=$(stat -c %s "$1"); head -c $(( ($2 - n % $2) % $2 )) /dev/zero >> "$1"; }

# --- fatbins hidden in ordinary data sections (cuFFT .ldata, cupti .rodata) --------------------
# .ldata: t13 (E:75 P:c75 E:120) and t18 (L:c80 E:90), 32-byte aligned with a zero gap as in cuFFT
cp "$BIN"/t13_raw_sm75_c75_sm120.fatbin blob32.bin; pad_to blob32.bin 32
cat "$BIN"/t18_lto80_sm90.fatbin >> blob32.bin
blob_so "$BIN"/hidden_ldata_2fatbins.so blob32.bin .ldata 32
cp "$BIN"/t13_raw_sm75_c75_sm120.fatbin t13.bin
blob_so "$BIN"/hidden_rodata_fatbin.so t13.bin .rodata 8

# --- PE/COFF DLL with .nv_fatb (two fatbins, 16-byte aligned, zero gap), importing cudart64_12.dll
if have "${MINGW_PREFIX}gcc"; then
  cp "$BIN"/t13_raw_sm75_c75_sm120.fatbin blob16.bin; pad_to blob16.bin 16
  head -c 16 /dev/zero >> blob16.bin
  cat "$BIN"/v1_sm100_sm100a_sm103f_c120_c120a_c120f.fatbin >> blob16.bin; pad_to blob16.bin 16
  "${MINGW_PREFIX}gcc" -shared -O2 -s -Wl,--no-insert-timestamp -o cudart64_12.dll \
    -Wl,--out-implib,libcudart64_12.a cudart_stub.c
  "${MINGW_PREFIX}gcc" -shared -O2 -s -DUSE_CUDART -DBLOB_FILE='"blob16.bin"' -DBLOB_SECTION='".nv_fatb"' \
    -DBLOB_ALIGN='"16"' -Wl,--no-insert-timestamp -o "$BIN"/pe_nv_fatb_2fatbins.dll host.c -L. -lcudart64_12
else
  skip "PE DLL fixture (${MINGW_PREFIX}gcc not found)"
fi

###############################################################################################
# Prediction-case fixtures (COMPAT_CASES.md); contents spec: e:ARCH = cubin, p:ARCH@ISA = PTX
###############################################################################################
echo "== compat fixtures"
# case  built-with  contents
CASES=(
  "1  12.0 e:80 p:80@8.0"
  "2  12.0 e:80 p:80@8.0"
  "4  12.0 e:80 p:80@8.0"
  "5  12.0 e:80 e:86"
  "6  11.8 e:86"
  "8  11.8 e:75"
  "9  11.0 e:75 p:75@7.0"
  "10 11.4 e:87"
  "12 12.0 e:80 e:86 p:86@8.0"
  "13 11.8 e:35 p:35@7.8"
  "14 12.4 e:90a p:90a@8.4"
  "15 12.4 e:90a p:90a@8.4"
  "18 12.8 e:100a p:100a@8.7"
  "20 12.8 e:120a"
  "21 12.8 e:120a p:120a@8.7"
  "22 12.9 e:100f p:100f@8.8"
  "24 12.8 e:100 p:100@8.7"
  "26 12.9 p:100f@8.8"
  "28 12.8 e:120 p:120@8.7"
  "29 12.9 e:120f p:120f@8.8"
  "31 12.8 e:100 p:100@8.7"
  "32 12.0 e:90 p:90@8.0"
  "33 12.4 e:50 e:60 e:70 e:75 e:80 e:86 e:89 e:90"
  "35 12.8 e:52 p:52@8.7"
  "37 12.4 e:80 p:80@8.4"
  "38 12.4 p:80@8.4"
  "39 12.4 e:80 p:80@8.4 p:90@8.4"
  "42 12.1 e:80"
  "43 13.0 e:90"
  "50 12.2 e:80"
  "51 12.0 p:80@8.0"
  "52 13.0 e:110 p:110@9.0"
  "54 12.8 e:100 p:100@8.7"
  "55 12.9 e:101"
)
# CUDA 11/12 fatbinary compresses PTX with LZ4, CUDA 13 with zstd: mimic with --compress-mode.
for row in "${CASES[@]}"; do
  read -r n built spec <<<"$row"
  mode=speed; [[ $built == 13.* ]] && mode=default
  imgs=(); ok=1
  for item in $spec; do
    kind=${item%%:*} rest=${item#*:}
    if [[ $kind == e ]]; then
      px=$(ptxas_for "$rest")
      if ! have "$px"; then ok=0; break; fi
      [[ -f c_$rest.cubin ]] || cubin c_"$rest".cubin "$rest" "$px"
      imgs+=("--image3=kind=elf,sm=$rest,file=c_$rest.cubin")
    else
      a=${rest%@*} isa=${rest#*@}
      ptx p_"$a"_"$isa".ptx "$a" "$isa"
      check_ptx p_"$a"_"$isa".ptx "$a"
      imgs+=("--image3=kind=ptx,sm=$a,file=p_${a}_$isa.ptx")
    fi
  done
  if (( ! ok )); then skip "case $n ($spec): ptxas for that arch not set"; continue; fi
  "$FATBINARY" --create=case$n.fatbin -64 --compress-mode=$mode "${imgs[@]}"
  case $n in
    42|43) ;;  # wrapped in an ELF .so below
    *) cp case$n.fatbin "$CMP"/case$n.fatbin ;;
  esac
done
# Case 17 is literally "nvcc 13.0 -arch=sm_90a" output (compute_90 PTX + sm_90a + compute_90a PTX).
nv -fatbin -arch=sm_90a -o "$CMP"/case17.fatbin k.cu

# Cases 42/43 are decided by the CUDA runtime: a .so whose DT_NEEDED names libcudart.so.12/.13
# (stub libraries built here) with the case fatbin in .nv_fatbin (flags A, align 8, as nvcc emits).
for pair in 42:12 43:13; do
  n=${pair%:*} maj=${pair#*:}
  gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.$maj -o libcudart.so.$maj cudart_stub.c
  ln -sf libcudart.so.$maj libcudart.so
  blob_so "$CMP"/case${n}_cudart$maj.so case$n.fatbin .nv_fatbin 8 -DUSE_CUDART -L. -lcudart
  rm -f libcudart.so
done

build_units

###############################################################################################
# Checks: sizes, sections, cuobjdump listing
###############################################################################################
echo "== checks"
total=0; bad=0
while IFS= read -r -d '' f; do
  s=$(stat -c %s "$f"); total=$((total + s))
  if (( s > MAX_BYTES )); then echo "TOO BIG: $f ($s bytes)" >&2; bad=1; fi
done < <(find "$BIN" "$CMP" "$UNITS" -type f -print0)
echo "total fixture bytes: $total"
(( total <= MAX_TOTAL )) || { echo "fixtures exceed $MAX_TOTAL bytes" >&2; bad=1; }
for f in "$BIN"/t*_exe_* "$BIN"/t12_*.so; do
  readelf -SW "$f" | grep -q ' \.nv_fatbin ' || { echo "no .nv_fatbin in $f" >&2; bad=1; }
done
for f in "$CMP"/case4[23]_*.so; do
  readelf -SW "$f" | grep -q ' \.nv_fatbin ' || { echo "no .nv_fatbin in $f" >&2; bad=1; }
done

if have "${CUOBJDUMP:-}"; then
  CUOBJDUMP=$CUOBJDUMP FIX=$FIX python3 - <<'EOF'
import json, os, re, subprocess
fix = os.environ["FIX"]; tool = os.environ["CUOBJDUMP"]
out = {}
for sub in ("bin", "compat"):
    for name in sorted(os.listdir(os.path.join(fix, sub))):
        if name.endswith(".json"):
            continue
        rel = f"{sub}/{name}"
        res = {}
        for key, extra in (("", []), ("_all", ["-all"])):
            r = subprocess.run([tool, "-lelf", "-lptx", *extra, os.path.join(fix, rel)],
                               capture_output=True, text=True)
            text = (r.stdout + r.stderr).strip()
            elf = re.findall(r"^ELF file\s+\d+: (\S+)", text, re.M)
            ptx = re.findall(r"^PTX file\s+\d+: (\S+)", text, re.M)
            if r.returncode != 0 or (not elf and not ptx):
                res["error" + key] = re.sub(r"\s+", " ", text.replace(fix + "/", ""))
            else:
                res["elf" + key], res["ptx" + key] = elf, ptx
        # keep the -all listing only where it differs (rdc builds: __nv_relfatbin)
        if all(res.get(k + "_all") == res.get(k) for k in ("elf", "ptx", "error")):
            res = {k: v for k, v in res.items() if not k.endswith("_all")}
        out[rel] = res["error"] if list(res) == ["error"] else res
with open(os.path.join(fix, "cuobjdump_expected.json"), "w") as fh:
    json.dump(out, fh, indent=1, sort_keys=True)
    fh.write("\n")
print(f"cuobjdump_expected.json: {len(out)} files")
EOF
else
  skip "cuobjdump_expected.json (cuobjdump not found; set CUOBJDUMP)"
fi
exit $bad
