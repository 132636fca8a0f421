#!/usr/bin/env bash
# Run the GPU tier on a machine with an NVIDIA GPU and keep what it printed.
#
#   scripts/run_gpu_tier.sh OUTDIR
#
# Writes OUTDIR/environment.txt (date, device, driver, versions), the
# conformance matrix (OUTDIR/matrix.md, OUTDIR/matrix.json) and the logs of the
# conformance, interop, MPI and benchmark runs; commit them under
# docs/gpu-runs/<date>-<device>/.  Every step runs even if an earlier one
# fails, and the script exits non-zero if any did.
set -uo pipefail
out=${1:?usage: scripts/run_gpu_tier.sh OUTDIR}
mkdir -p "$out"
status=0
step() {
    local name=$1; shift
    echo "== $name: $*" | tee -a "$out/summary.txt"
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    tail -n 3 "$out/$name.log" | tee -a "$out/summary.txt"
    [ $rc -eq 0 ] || status=1
}
{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
    python -c "import sys; print(sys.version)"
    python -m pip list 2>/dev/null | grep -iE "^(cupy|jax|jaxlib|numba|numba-cuda|cuda-core|cuda-bindings|cuda-python|torch|mpi4py|mpich|numpy|hypothesis|pytest|pytest-benchmark) "
} >"$out/environment.txt" 2>&1
step conformance python -m pytest conformance --gpu-backends=all --gpu-require=gpu \
    -p no:cacheprovider -q --gpu-report="$out/matrix.md"
python -m pytest conformance --gpu-backends=all -p no:cacheprovider -q \
    --gpu-report="$out/matrix.json" >/dev/null 2>&1 || true
step gpu-impls python -m pytest tests/test_bundled_gpu_impls.py -p no:cacheprovider -q -rs
step mpi python -m pytest conformance/test_mpi_halo.py conformance/test_mpi_heat.py \
    conformance/test_mpi_reductions.py --gpu-backends=gpu -p no:cacheprovider -q -rs
step bench python -m pytest conformance/bench_kernels.py --gpu-backends=gpu \
    -p no:cacheprovider -q --gpu-bench-save --gpu-bench-baseline="$out/baselines"
exit $status
