"""CUDA C sources of the bundled raw kernels, shared by CuPy and cuda-python.

The same source runs as a ``cupy.RawModule`` (backend ``cupy``, names
``raw``) and as an NVRTC program launched through ``cuda.core`` (backend
``cuda-python``), so a kernel bug shows up in both columns of the matrix.

Every kernel is ``extern "C"`` (no name mangling) and written for one element
type ``T`` (and ``X`` for the values read by ``histogram``), fixed by a
``typedef`` that :func:`render` prepends; a compiled module is cached per
(kernel, types, architecture) by the caller.  Arrays are passed as a pointer
to their first element plus one stride *in elements* per axis, so strided and
transposed views work without a copy (negative strides included).

Integer arithmetic goes through ``wrap_add``/``wrap_mul``, which compute in
the unsigned type: signed overflow is undefined behaviour in C++, while the
references (and every GPU's integer atomics) wrap.  Sources are compiled with
FMA contraction off so that ``u + alpha * d`` rounds twice, as NumPy does.
"""

from __future__ import annotations

import numpy as np

#: NumPy dtype -> (C type, unsigned C type used for wrapping arithmetic).
C_TYPES: dict[str, tuple[str, str]] = {
    "float32": ("float", "float"),
    "float64": ("double", "double"),
    "int32": ("int", "unsigned int"),
    "int64": ("long long", "unsigned long long"),
}

FLOAT_DTYPES = ("float32", "float64")
ALL_DTYPES = ("float32", "float64", "int32", "int64")

#: Threads per block of the reduction kernels; ``block_reduce`` assumes it.
REDUCE_BLOCK = 256
#: Tile edge of ``matmul_tiled`` and ``transpose`` (blocks are TILE x TILE threads).
TILE = 16

_PRELUDE = """
typedef long long idx_t;

__device__ __forceinline__ T wrap_add(T a, T b) { return (T)((U)a + (U)b); }
__device__ __forceinline__ T wrap_mul(T a, T b) { return (T)((U)a * (U)b); }

__device__ __forceinline__ idx_t global_x() { return (idx_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ idx_t global_y() { return (idx_t)blockIdx.y * blockDim.y + threadIdx.y; }
__device__ __forceinline__ idx_t global_z() { return (idx_t)blockIdx.z * blockDim.z + threadIdx.z; }
__device__ __forceinline__ idx_t grid_threads_x() { return (idx_t)gridDim.x * blockDim.x; }

/* atomicAdd has no signed 64-bit overload; two's complement makes the unsigned one wrap right. */
__device__ __forceinline__ void atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(long long* p, long long v) {
    atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
"""

_ELEMENTWISE = """
extern "C" __global__ void vector_add(const T* a, const T* b, T* out, idx_t n,
                                      idx_t sa, idx_t sb, idx_t so) {
    for (idx_t i = global_x(); i < n; i += grid_threads_x())
        out[i * so] = wrap_add(a[i * sa], b[i * sb]);
}
"""

_SAXPY = """
extern "C" __global__ void saxpy(T alpha, const T* x, const T* y, T* out, idx_t n,
                                 idx_t sx, idx_t sy, idx_t so) {
    for (idx_t i = global_x(); i < n; i += grid_threads_x())
        out[i * so] = alpha * x[i * sx] + y[i * sy];
}
"""

_SIGMOID = """
__device__ __forceinline__ float exp_of(float v) { return expf(v); }
__device__ __forceinline__ double exp_of(double v) { return exp(v); }

extern "C" __global__ void sigmoid(const T* x, T* out, idx_t n, idx_t sx, idx_t so) {
    for (idx_t i = global_x(); i < n; i += grid_threads_x())
        out[i * so] = (T)1 / ((T)1 + exp_of(-x[i * sx]));
}
"""

_ADD_ONE_2D = """
extern "C" __global__ void add_one_2d(T* a, idx_t rows, idx_t cols, idx_t s0, idx_t s1) {
    idx_t c = global_x(), r = global_y();
    if (r < rows && c < cols) a[r * s0 + c * s1] = wrap_add(a[r * s0 + c * s1], (T)1);
}
"""

# The index maps take the caller's launch configuration: the thread with
# global index i (x along the last axis) writes exactly element i.
_INDEX_MAPS = """
extern "C" __global__ void index_map_1d(T* out, idx_t n, idx_t s0) {
    idx_t i = global_x();
    if (i < n) out[i * s0] = (T)i;
}

extern "C" __global__ void index_map_2d(T* out, idx_t rows, idx_t cols, idx_t s0, idx_t s1) {
    idx_t c = global_x(), r = global_y();
    if (r < rows && c < cols) out[r * s0 + c * s1] = (T)(r * cols + c);
}

extern "C" __global__ void index_map_3d(T* out, idx_t nz, idx_t ny, idx_t nx,
                                        idx_t s0, idx_t s1, idx_t s2) {
    idx_t x = global_x(), y = global_y(), z = global_z();
    if (z < nz && y < ny && x < nx) out[z * s0 + y * s1 + x * s2] = (T)((z * ny + y) * nx + x);
}

extern "C" __global__ void index_map_grid_stride(T* out, idx_t n, idx_t s0) {
    for (idx_t i = global_x(); i < n; i += grid_threads_x()) out[i * s0] = (T)i;
}
"""

# Classic shared-memory transpose: a TILE x TILE block reads a tile row-wise and
# writes it column-wise; the +1 column avoids shared-memory bank conflicts.
_TRANSPOSE = f"""
#define TILE {TILE}
extern "C" __global__ void transpose(const T* a, T* out, idx_t rows, idx_t cols,
                                     idx_t a0, idx_t a1, idx_t o0, idx_t o1) {{
    __shared__ T tile[TILE][TILE + 1];
    idx_t r = (idx_t)blockIdx.y * TILE + threadIdx.y;
    idx_t c = (idx_t)blockIdx.x * TILE + threadIdx.x;
    if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = a[r * a0 + c * a1];
    __syncthreads();
    /* out has shape (cols, rows): this thread now writes out[out_row, out_col]. */
    idx_t out_row = (idx_t)blockIdx.x * TILE + threadIdx.y;
    idx_t out_col = (idx_t)blockIdx.y * TILE + threadIdx.x;
    if (out_row < cols && out_col < rows)
        out[out_row * o0 + out_col * o1] = tile[threadIdx.x][threadIdx.y];
}}
"""

# Sum-like reductions: each thread accumulates a grid-stride slice, the block
# combines its partials in shared memory, and thread 0 adds the block's total
# to out[0] atomically (out is preset to 0 by the contract).
_BLOCK_SUM = f"""
#define REDUCE_BLOCK {REDUCE_BLOCK}
__device__ void block_sum_into(T partial, T* out) {{
    __shared__ T s[REDUCE_BLOCK];
    s[threadIdx.x] = partial;
    __syncthreads();
    for (int half = REDUCE_BLOCK / 2; half > 0; half >>= 1) {{
        if (threadIdx.x < half) s[threadIdx.x] = wrap_add(s[threadIdx.x], s[threadIdx.x + half]);
        __syncthreads();
    }}
    if (threadIdx.x == 0) atomic_add(out, s[0]);
}}
"""

_SUM = _BLOCK_SUM + """
extern "C" __global__ void sum(const T* x, T* out, idx_t n, idx_t sx) {
    T acc = (T)0;
    for (idx_t i = global_x(); i < n; i += grid_threads_x()) acc = wrap_add(acc, x[i * sx]);
    block_sum_into(acc, out);
}
"""

_DOT = _BLOCK_SUM + """
extern "C" __global__ void dot(const T* x, const T* y, T* out, idx_t n, idx_t sx, idx_t sy) {
    T acc = (T)0;
    for (idx_t i = global_x(); i < n; i += grid_threads_x())
        acc = wrap_add(acc, wrap_mul(x[i * sx], y[i * sy]));
    block_sum_into(acc, out);
}
"""

_WEIGHTED_SUM = _BLOCK_SUM + """
extern "C" __global__ void weighted_sum(const T* x, const T* w, T* out, idx_t n,
                                        idx_t sx, idx_t sw) {
    T acc = (T)0;
    for (idx_t i = global_x(); i < n; i += grid_threads_x())
        acc = wrap_add(acc, wrap_mul(w[i * sw], x[i * sx]));
    block_sum_into(acc, out);
}
"""

_SUM_OF_SQUARES = _BLOCK_SUM + """
extern "C" __global__ void sum_of_squares(const T* x, T* out, idx_t n, idx_t sx) {
    T acc = (T)0;
    for (idx_t i = global_x(); i < n; i += grid_threads_x())
        acc = wrap_add(acc, wrap_mul(x[i * sx], x[i * sx]));
    block_sum_into(acc, out);
}
"""

# max in two passes, without atomics: every block writes the maximum of its
# grid-stride slice to partials[block], then one block reduces the partials
# and *writes* out[0].  (An atomicMax onto the preset lowest value would lose
# a maximum of -inf, which is below the preset.)  NaN propagates, as in NumPy.
_MAX = f"""
#define REDUCE_BLOCK {REDUCE_BLOCK}
__device__ __forceinline__ bool is_nan(T v) {{ return v != v; }}
__device__ __forceinline__ T max_of(T a, T b) {{ return (is_nan(a) || a > b) ? a : b; }}

/* Reduce the block's values s[0..count) into s[0]; threads >= count hold nothing. */
__device__ void block_max(T* s, int count) {{
    for (int half = REDUCE_BLOCK / 2; half > 0; half >>= 1) {{
        if (threadIdx.x < half && threadIdx.x + half < count)
            s[threadIdx.x] = max_of(s[threadIdx.x], s[threadIdx.x + half]);
        __syncthreads();
    }}
}}

extern "C" __global__ void max_partials(const T* x, T* partials, idx_t n, idx_t sx) {{
    __shared__ T s[REDUCE_BLOCK];
    idx_t i = global_x();
    /* The launch has at most one block per REDUCE_BLOCK elements, so every block
       owns at least one element; a thread past the end owns none and is left out
       of block_max by its count. */
    T acc = i < n ? x[i * sx] : (T)0;
    for (i += grid_threads_x(); i < n; i += grid_threads_x()) acc = max_of(acc, x[i * sx]);
    s[threadIdx.x] = acc;
    __syncthreads();
    idx_t first = (idx_t)blockIdx.x * blockDim.x;
    idx_t owners = n - first < REDUCE_BLOCK ? n - first : REDUCE_BLOCK;
    block_max(s, (int)owners);
    if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}}

extern "C" __global__ void max_final(const T* partials, T* out, idx_t count) {{
    __shared__ T s[REDUCE_BLOCK];
    /* count <= REDUCE_BLOCK: the caller launches at most that many partial blocks. */
    if (threadIdx.x < count) s[threadIdx.x] = partials[threadIdx.x];
    __syncthreads();
    block_max(s, (int)count);
    if (threadIdx.x == 0) out[0] = s[0];
}}
"""

_HISTOGRAM = """
extern "C" __global__ void histogram(const X* x, T* out, idx_t n, idx_t sx, idx_t nbins,
                                     idx_t so) {
    for (idx_t i = global_x(); i < n; i += grid_threads_x()) {
        idx_t v = (idx_t)x[i * sx];
        if (v >= 0 && v < nbins) atomic_add(&out[v * so], (T)1);
    }
}
"""

# A counter-based generator (SplitMix64): value k of the stream is a hash of
# seed + k * golden, so thread i computes its own samples 2i and 2i + 1 without
# any shared state; threads cannot share one stream by construction.
_MONTE_CARLO_PI = """
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ T unit_interval(unsigned long long bits) {
    /* The top 24 (float) or 53 (double) bits, scaled: exactly representable, in [0, 1). */
    if (sizeof(T) == 4) return (T)((float)(bits >> 40) * (1.0f / 16777216.0f));
    return (T)((double)(bits >> 11) * (1.0 / 9007199254740992.0));
}

extern "C" __global__ void monte_carlo_pi(unsigned long long seed, T* out, idx_t n,
                                          idx_t s0, idx_t s1) {
    const unsigned long long golden = 0x9E3779B97F4A7C15ULL;
    unsigned long long key = mix64(seed + golden);
    for (idx_t i = global_x(); i < n; i += grid_threads_x()) {
        unsigned long long k = 2ULL * (unsigned long long)i;
        out[i * s0] = unit_interval(mix64(key + (k + 1ULL) * golden));
        out[i * s0 + s1] = unit_interval(mix64(key + (k + 2ULL) * golden));
    }
}
"""

_HEAT = """
/* One explicit step; reads only u, writes only out (the two must not alias). */
extern "C" __global__ void heat_step_1d(const T* u, T alpha, T* out, idx_t n, idx_t su,
                                        idx_t so) {
    for (idx_t i = global_x(); i < n; i += grid_threads_x()) {
        if (i == 0 || i == n - 1) {
            out[i * so] = (T)0;
        } else {
            T centre = u[i * su];
            out[i * so] = centre + alpha * (u[(i - 1) * su] - (T)2 * centre + u[(i + 1) * su]);
        }
    }
}

extern "C" __global__ void copy_1d(const T* src, T* dst, idx_t n, idx_t ss, idx_t sd) {
    for (idx_t i = global_x(); i < n; i += grid_threads_x()) dst[i * sd] = src[i * ss];
}
"""

_LAPLACIAN_2D = """
extern "C" __global__ void laplacian_2d(const T* u, T* out, idx_t rows, idx_t cols,
                                        idx_t u0, idx_t u1, idx_t o0, idx_t o1) {
    idx_t c = global_x(), r = global_y();
    if (r >= rows || c >= cols) return;
    if (r == 0 || c == 0 || r == rows - 1 || c == cols - 1) {
        out[r * o0 + c * o1] = (T)0;
        return;
    }
    idx_t k = r * u0 + c * u1;
    out[r * o0 + c * o1] = u[k - u0] + u[k + u0] + u[k - u1] + u[k + u1] - (T)4 * u[k];
}
"""

# Periodic ghost cells along one axis of a (lines x n) view: thread (i, line)
# copies a[n-2w+i] -> a[i] and a[w+i] -> a[n-w+i].  With n >= 3w no thread reads
# a cell another thread writes, so one launch per axis is race-free; the 2-D
# exchange runs axis 0 and then axis 1 over all rows, which fills the corners.
_HALO = """
extern "C" __global__ void halo_exchange_axis(T* a, idx_t lines, idx_t n, idx_t w,
                                              idx_t s_line, idx_t s_elem) {
    idx_t total = lines * w;
    for (idx_t t = global_x(); t < total; t += grid_threads_x()) {
        idx_t line = t / w, i = t % w;
        T* base = a + line * s_line;
        base[i * s_elem] = base[(n - 2 * w + i) * s_elem];
        base[(n - w + i) * s_elem] = base[(w + i) * s_elem];
    }
}
"""

_MATMUL = """
extern "C" __global__ void matmul(const T* a, const T* b, T* out, idx_t m, idx_t k, idx_t n,
                                  idx_t a0, idx_t a1, idx_t b0, idx_t b1, idx_t o0, idx_t o1) {
    idx_t col = global_x(), row = global_y();
    if (row >= m || col >= n) return;
    T acc = (T)0;
    for (idx_t j = 0; j < k; ++j)
        acc = wrap_add(acc, wrap_mul(a[row * a0 + j * a1], b[j * b0 + col * b1]));
    out[row * o0 + col * o1] = acc;
}
"""

# Tiled matmul: each TILE x TILE block stages one tile of a and one of b in
# shared memory per step along k; cells past the matrix edge load 0, which
# adds nothing, so partial tiles on every edge are handled.
_MATMUL_TILED = f"""
#define TILE {TILE}
extern "C" __global__ void matmul_tiled(const T* a, const T* b, T* out, idx_t m, idx_t k,
                                        idx_t n, idx_t a0, idx_t a1, idx_t b0, idx_t b1,
                                        idx_t o0, idx_t o1) {{
    __shared__ T tile_a[TILE][TILE];
    __shared__ T tile_b[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    idx_t row = (idx_t)blockIdx.y * TILE + ty;
    idx_t col = (idx_t)blockIdx.x * TILE + tx;
    T acc = (T)0;
    for (idx_t t = 0; t < k; t += TILE) {{
        idx_t ka = t + tx, kb = t + ty;
        tile_a[ty][tx] = (row < m && ka < k) ? a[row * a0 + ka * a1] : (T)0;
        tile_b[ty][tx] = (kb < k && col < n) ? b[kb * b0 + col * b1] : (T)0;
        __syncthreads();
        for (int j = 0; j < TILE; ++j) acc = wrap_add(acc, wrap_mul(tile_a[ty][j], tile_b[j][tx]));
        __syncthreads();
    }}
    if (row < m && col < n) out[row * o0 + col * o1] = acc;
}}
"""

#: Source group -> (CUDA C body, the kernels (``__global__`` names) it defines, dtypes).
SOURCES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "vector_add": (_ELEMENTWISE, ("vector_add",), ALL_DTYPES),
    "saxpy": (_SAXPY, ("saxpy",), FLOAT_DTYPES),
    "sigmoid": (_SIGMOID, ("sigmoid",), FLOAT_DTYPES),
    "add_one_2d": (_ADD_ONE_2D, ("add_one_2d",), ALL_DTYPES),
    "index_maps": (
        _INDEX_MAPS,
        ("index_map_1d", "index_map_2d", "index_map_3d", "index_map_grid_stride"),
        ALL_DTYPES,
    ),
    "transpose": (_TRANSPOSE, ("transpose",), ALL_DTYPES),
    "sum": (_SUM, ("sum",), ALL_DTYPES),
    "dot": (_DOT, ("dot",), ALL_DTYPES),
    "weighted_sum": (_WEIGHTED_SUM, ("weighted_sum",), ALL_DTYPES),
    "sum_of_squares": (_SUM_OF_SQUARES, ("sum_of_squares",), ALL_DTYPES),
    "max": (_MAX, ("max_partials", "max_final"), ALL_DTYPES),
    "histogram": (_HISTOGRAM, ("histogram",), ("int32", "int64")),
    "monte_carlo_pi": (_MONTE_CARLO_PI, ("monte_carlo_pi",), FLOAT_DTYPES),
    "heat": (_HEAT, ("heat_step_1d", "copy_1d"), FLOAT_DTYPES),
    "laplacian_2d": (_LAPLACIAN_2D, ("laplacian_2d",), ALL_DTYPES),
    "halo": (_HALO, ("halo_exchange_axis",), ALL_DTYPES),
    "matmul": (_MATMUL, ("matmul",), ALL_DTYPES),
    "matmul_tiled": (_MATMUL_TILED, ("matmul_tiled",), ALL_DTYPES),
}


def c_type(dtype: np.dtype | str) -> str:
    """The C type of a NumPy dtype the raw kernels support, or a ValueError naming them."""
    name = np.dtype(dtype).name
    if name not in C_TYPES:
        raise ValueError(f"the raw CUDA kernels support {', '.join(C_TYPES)}, not {name}")
    return C_TYPES[name][0]


def render(group: str, dtype: np.dtype | str, value_dtype: np.dtype | str | None = None) -> str:
    """Complete CUDA C source of ``group`` for element type ``dtype``.

    ``value_dtype`` is the type ``X`` of the values ``histogram`` reads (its
    counts have type ``T = dtype``); it defaults to ``dtype``.
    """
    name = np.dtype(dtype).name
    c_type(name)
    body = SOURCES[group][0]
    value = c_type(value_dtype if value_dtype is not None else name)
    signed, unsigned = C_TYPES[name]
    return f"typedef {signed} T;\ntypedef {unsigned} U;\ntypedef {value} X;\n{_PRELUDE}{body}"


def group_of(kernel: str) -> str:
    """The source group that defines ``__global__`` function ``kernel``."""
    for group, (_, kernels, _) in SOURCES.items():
        if kernel in kernels:
            return group
    raise KeyError(f"no raw CUDA kernel named {kernel!r}")
