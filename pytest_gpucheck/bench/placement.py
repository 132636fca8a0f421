"""Where a measured process's memory and stack land, and the state its allocator
starts in: what :mod:`.interleave`'s processes (both gates' measured processes) do
before anything is timed, so that placement becomes between-pair variance and the
allocator's incidental history no part of a call's cost (issue 43)."""

from __future__ import annotations

import ctypes
import functools
import sys


@functools.cache
def c_library() -> ctypes.CDLL | None:
    """This process's C library with the prototypes of ``malloc`` and ``free`` (the
    placement pads, :meth:`.interleave.PeerServer.pad`, and :func:`steady_allocator`),
    set up once; ``None`` off Linux or where it lacks one of them."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
        libc.free.restype, libc.free.argtypes = None, (ctypes.c_void_p,)
    except (OSError, AttributeError):
        return None
    return libc


#: glibc's ceiling for its adaptive mmap threshold on 64-bit systems
#: (``DEFAULT_MMAP_THRESHOLD_MAX``, 4 MiB times ``sizeof(long)``): freeing a mapped block
#: of up to this size raises the threshold to the block's size and the trim threshold
#: to twice that.
MMAP_THRESHOLD_CEILING = 32 << 20
#: The block :func:`steady_allocator` maps and frees: just under the ceiling, so that
#: the mapped chunk (the request, its header, rounded up to pages) is not above it.
STEADY_BLOCK_BYTES = MMAP_THRESHOLD_CEILING - (64 << 10)


def steady_allocator() -> None:
    """In a measured process, before anything is timed: put glibc's allocator in the
    state a process reaches once it has freed one large array, by mapping and freeing
    a block of :data:`STEADY_BLOCK_BYTES` (never touched: no page is faulted in).

    glibc raises its mmap threshold to the size of each mapped block it frees (up to
    :data:`MMAP_THRESHOLD_CEILING`) and its trim threshold to twice that; it never
    lowers them.  Until they are high, whether a kernel's temporaries come back as
    heap pages already mapped or are given back to the system at the end of each call
    and faulted in afresh on the next depends on the largest block this process
    happened to free before: not the kernel, but the history of imports, collection
    and messages before it.  The same three-temporary NumPy kernel paid 1504 page
    faults per call in a plain ``python`` or ``pytest`` process and 2256 in the gate's
    processes; a torch-cpu kernel with two 2 MiB temporaries alive at once paid 0 in
    one process and 3008 in most of the gate's, so its pairs split into two regimes
    (log ratios about 0.1 and 1.0) and a 1.38x change read +121% (issue 43).  From
    the ceiling's state every block under 32 MiB freed by a call is reused by the
    next, in every process alike, which is the steady state a long-running program
    reaches after its first large free; a block of 32 MiB or more is a mapping of its
    own, faulted in on every call, in any process.  The thresholds stay glibc's own
    adaptive ones (no ``mallopt``: fixing one turns the adaptation off, the old gate's
    2-5x sizes), and a user's own ``MALLOC_MMAP_THRESHOLD_`` or
    ``MALLOC_TRIM_THRESHOLD_`` still wins: glibc then does not adapt, and this block
    changes nothing.  Other C libraries (musl) and allocators preloaded in glibc's
    place merely map and free one block."""
    libc = c_library()
    if libc is None:
        return
    block = libc.malloc(STEADY_BLOCK_BYTES)
    if block:
        libc.free(block)


#: A variable of random length in each measured process's environment (:func:`stack_pad`).
STACK_PAD_VARIABLE = "PYTEST_GPUCHECK_BENCH_STACK_PAD"
#: Its length is drawn from 0 to this minus one: a whole page, so that where the stack
#: starts within a page is uniform whatever the rest of argv and the environment hold.
STACK_PAD_BYTES = 4096


def stack_pad(seed: int) -> str:
    """The value of :data:`STACK_PAD_VARIABLE` for the process of placement ``seed``: 0 to
    4095 characters, drawn from the seed.

    The kernel copies argv and the environment to the top of a new process's stack, so
    their size sets where its stack frames start within a page, and the two sides' differ
    by construction: the checkouts' paths (``--rootdir``, ``../base`` against the
    project's folder), the CPUs and placement seed variables, the socket's descriptor
    number.  A stack's offset can move a program's time by several percent (Mytkowicz et
    al., "Producing wrong data without doing anything obviously wrong", ASPLOS 2009),
    and a difference fixed by side would be a bias no number of pairs removes.  A pad
    of uniform length over a whole page makes each process's offset uniform over the
    page for both sides alike, whatever their constant difference: like
    :func:`placement_pad` for the heap, it turns placement into between-pair variance,
    which the interval counts.  On x86-64 Linux with address space layout
    randomisation on (``randomize_va_space`` not 0, the default) the kernel already
    moves each new stack down by a random 0 to 8 KiB in 16-byte steps; the pad holds
    where that is off (``setarch -R``, a debugger, a runner that disables it) and on
    systems that randomise the stack by whole pages only, for a few KiB of
    environment."""
    import random

    return "x" * random.Random(f"{seed}:stack").randrange(STACK_PAD_BYTES)


#: Placement pads held by this process (one list per benchmark, freed with its arrays).
PAD_PAGES = (32, 96)
PAD_SMALL_BYTES = 4096


def placement_pad(seed: int, nodeid: str) -> tuple[int, int]:
    """Allocate (and return, to be held) a random padding before a benchmark's arrays are
    made: a small heap block of 0 to 4 KiB (16-byte steps) that moves where the small
    allocations land, and a block of 32 to 95 pages (at or above glibc's initial mmap
    threshold: a mapping of its own, or heap once the threshold has risen) that moves
    where the next large blocks land.  Drawn from the process's
    seed and the benchmark, so each process and benchmark gets an offset of its own and a
    run can be repeated with the seed its verdicts print; (small bytes, pages)."""
    import random

    rng = random.Random(f"{seed}:{nodeid}")
    return rng.randrange(0, PAD_SMALL_BYTES, 16), rng.randrange(*PAD_PAGES)
