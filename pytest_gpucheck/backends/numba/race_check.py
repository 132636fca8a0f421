"""Races in Numba ``prange`` loops, found in the compiled loop rather than by chance.

The repeat check (``conformance/harness.py``) finds a race only when the pool's
threads happen to run at the same time, which a loaded machine decides.  This
module reads the loop instead.  While an implementation runs, :class:`LoopScan`
records the ``parallel=True`` functions Numba compiles (Numba's
``numba:compile`` event); afterwards it compiles each of them again up to
Numba's ``ParforPass`` only (typing and the conversion of ``prange`` loops into
parfors; no lowering, no machine code: 0.02 to 0.7 s a function) and
inspects every outermost parfor's body (``Parfor.loop_body``, its
``loop_nests[k].index_variable`` and ``index_var``):

- a write (``setitem``, ``static_setitem``; ``out[k] += v`` is a read and one of
  these) to an array that lives outside the loop (not allocated in the body),
  at an index that does not depend on the loop index: every iteration writes
  the same element, so threads lose updates.  This is a **race**, and fails the
  item.  "Depends on the loop index" follows the def-use chain inside the body:
  a value computed from the index (arithmetic, tuples, calls) depends on it
  directly; a constant, or a value computed only from values defined outside
  the loop, does not.  Numba's own reductions (``acc += x[i]`` with a scalar
  ``acc``) assign a variable, never an array element: private per thread, not
  a write this looks at.
- a write whose index depends on the loop index only through a value read from
  an array (``out[idx[i]] += 1``) races when two iterations read the same
  index, which depends on the data: a **may race**, recorded as a note, not a
  failure (a scatter through a permutation is correct).  So is a write that
  would be a race but runs only on some iterations (inside an ``if`` on the
  loop index or on data): ``if i == 0: out[0] = v`` is correct.

Why compile again instead of reading the overload's own parfors
(``metadata['parfor_diagnostics']``): lowering rewrites them in place
(``parfor_lowering._create_gufunc_for_parfor_body`` renames the body's
variables to legal gufunc parameter names, the loop index among them, and
hoists allocations out of the body, so a per-thread scratch array would look
like one from outside), and an overload loaded from the cache has none.  Checked
with Numba 0.61.0 (the lowest declared) and 0.68.1.

The analysis never raises into the user's item: where Numba's internals are not
as expected (another version), or the function does not compile this way, the
scan records a note and the repeat check alone looks for races.  Functions
Numba loaded from its on-disk cache (``cache=True``) or compiled before the
item are not compiled in the item and so not seen: the note says so.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoopFinding", "LoopScan", "parallel_loop_findings"]

#: Levels of dependence on the loop index, lowest first.
NONE, INDIRECT, DIRECT = 0, 1, 2
#: Expressions that read an element (or a view) of their ``value``.
READS = ("getitem", "static_getitem")


@dataclass(frozen=True)
class LoopFinding:
    """One write of a ``prange`` body to an array outside it, at an index that does not
    follow the loop index (``race``) or follows it only through data (``may race``)."""

    kind: str  # "race" or "may race"
    function: str
    where: str  # file:line of the write
    write: str  # out[0]
    read_modify_write: bool
    reason: str = ""  # why a may-race is not a race

    def message(self) -> str:
        """The finding in the house's words: the clause, the write, what goes wrong."""
        if self.kind == "race":
            consequence = ("so threads lose updates" if self.read_modify_write else
                           "so threads write the same element at once and the value left "
                           "depends on the schedule")
            return (f"a data race: the prange loop writes {self.write} at an index that does "
                    f"not depend on its loop index, {consequence} (found in the compiled "
                    f"loop, not by chance: {self.function}, {self.where})")
        return (f"may race: the prange loop writes {self.write} {self.reason}, so two "
                f"iterations may write the same element at once ({self.function}, "
                f"{self.where}; not failed on this alone: the repeat check decides)")


@dataclass
class LoopScan:
    """Records the ``parallel=True`` functions Numba compiles while active (a context
    manager), then inspects their ``prange`` loops (:meth:`findings`).  Never raises."""

    #: (dispatcher, argument types) compiled while the scan was active.
    compiled: list[tuple[Any, tuple[Any, ...]]] = field(default_factory=list)
    #: Why part of the scan could not run, in words (empty when it all ran).
    problems: list[str] = field(default_factory=list)
    #: Dispatchers not to inspect: the backend's own probes, which race on purpose.
    ignored: tuple[Any, ...] = ()
    _stack: Any = None

    def __enter__(self) -> LoopScan:
        self._stack = contextlib.ExitStack()
        try:
            from numba.core import event

            scan = self

            class Recorder(event.Listener):  # type: ignore[misc]
                def on_start(self, ev: Any) -> None:
                    data = ev.data or {}
                    dispatcher = data.get("dispatcher")
                    if (dispatcher is not None and _parallel(dispatcher)
                            and not any(dispatcher is own for own in scan.ignored)):
                        scan.compiled.append((dispatcher, tuple(data.get("args", ()))))

                def on_end(self, ev: Any) -> None:
                    pass

            self._stack.enter_context(event.install_listener("numba:compile", Recorder()))
        except Exception as exc:  # another Numba: no event to listen to
            self.problems.append(f"could not watch Numba's compiles ({_said(exc)})")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def findings(self) -> tuple[list[LoopFinding], str]:
        """Every finding in the functions compiled, each once, and a note: what was
        inspected, or why the repeat check alone looked for races."""
        try:
            return self._findings()
        except Exception as exc:  # never into the user's item
            return [], f"the prange loops could not be inspected ({_said(exc)}): the repeat " \
                       "check alone looked for races"

    def _findings(self) -> tuple[list[LoopFinding], str]:
        found: list[LoopFinding] = []
        inspected: list[str] = []
        problems = list(self.problems)
        seen: set[int] = set()
        for dispatcher, args in self.compiled:
            if id(dispatcher) in seen:  # one signature a function: the loops are the same
                continue
            seen.add(id(dispatcher))
            name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", "?")
            try:
                findings = _cached_findings(dispatcher, args)
            except Exception as exc:
                problems.append(f"could not inspect {name}'s prange loops ({_said(exc)})")
                continue
            inspected.append(name)
            found += [f for f in findings if f not in found]
        if inspected:
            note = "prange loops inspected in " + ", ".join(inspected)
        else:
            note = ("no parallel=True function compiled during this item (none used, or "
                    "loaded from Numba's cache, or compiled by an earlier item): the repeat "
                    "check alone looked for races")
        if problems:
            note += "; " + "; ".join(problems) + ": the repeat check alone looked there"
        return found, note


def _parallel(dispatcher: Any) -> bool:
    """Compiled with ``parallel=True`` (or a dict of parallel options): ``prange`` runs on
    the pool.  Without it ``prange`` is ``range``, serial, and cannot race."""
    options = getattr(dispatcher, "targetoptions", None) or {}
    return bool(options.get("parallel"))


def _said(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


#: Findings by dispatcher, computed once per process.
_FINDINGS: weakref.WeakKeyDictionary[Any, list[LoopFinding]] = weakref.WeakKeyDictionary()


def _cached_findings(dispatcher: Any, args: tuple[Any, ...]) -> list[LoopFinding]:
    try:
        return _FINDINGS[dispatcher]
    except (KeyError, TypeError):
        pass
    findings = parallel_loop_findings(dispatcher, args)
    with contextlib.suppress(TypeError):  # a dispatcher that takes no weak reference
        _FINDINGS[dispatcher] = findings
    return findings


@functools.cache
def _pipeline_class() -> Any:
    """A Numba compiler that stops right after ``ParforPass`` and returns the IR."""
    from numba.core.compiler import Compiler, DefaultPassBuilder, _EarlyPipelineCompletion
    from numba.core.compiler_machinery import FunctionPass, PassManager, register_pass

    @register_pass(mutates_CFG=False, analysis_only=True)
    class GpucheckStopAfterParfors(FunctionPass):  # type: ignore[misc]
        _name = "gpucheck_stop_after_parfors"

        def __init__(self) -> None:
            FunctionPass.__init__(self)

        def run_pass(self, state: Any) -> bool:
            raise _EarlyPipelineCompletion((state.func_ir, state.typemap))

    class ParforsOnly(Compiler):  # type: ignore[misc]
        def define_pipelines(self) -> list[Any]:
            full = DefaultPassBuilder.define_nopython_pipeline(self.state)
            names = [entry[0].__name__ for entry in full.passes]
            if "ParforPass" not in names:
                raise LookupError("no ParforPass in Numba's nopython pipeline")
            cut = PassManager("gpucheck: prange loops for the race check")
            for pass_class, description in full.passes[:names.index("ParforPass") + 1]:
                cut.add_pass(pass_class, description)
            cut.add_pass(GpucheckStopAfterParfors, "stop before lowering")
            cut.finalize()
            return [cut]

    return ParforsOnly


def parallel_loop_findings(dispatcher: Any, args: tuple[Any, ...]) -> list[LoopFinding]:
    """The races and may-races in the ``prange`` loops of a ``parallel=True`` Numba
    dispatcher for argument types ``args``.  Raises where Numba's internals are not as
    this expects (:class:`LoopScan` turns that into a note)."""
    from numba.core import compiler
    from numba.parfors.parfor import Parfor

    flags = compiler.Flags()
    dispatcher.targetdescr.options.parse_as_flags(flags, dispatcher.targetoptions)
    func_ir, typemap = compiler.compile_extra(
        dispatcher.typingctx, dispatcher.targetctx, dispatcher.py_func, args=args,
        return_type=None, flags=flags, locals=dispatcher.locals,
        pipeline_class=_pipeline_class())
    name = dispatcher.py_func.__qualname__
    findings: list[LoopFinding] = []
    for block in func_ir.blocks.values():
        for statement in block.body:
            if isinstance(statement, Parfor):
                findings += [f for f in _BodyAnalysis(statement, typemap, name).findings()
                             if f not in findings]
    return findings


def _statements(parfor: Any) -> Iterator[tuple[Any, Any]]:
    """(label, statement) of a parfor's body, nested parfors' bodies included (they run
    serially inside one iteration of the outer loop)."""
    from numba.parfors.parfor import Parfor

    for label, block in parfor.loop_body.items():
        for statement in block.body:
            yield label, statement
            if isinstance(statement, Parfor):
                for inner in statement.init_block.body:
                    yield label, inner
                yield from _statements(statement)


class _BodyAnalysis:
    """Def-use levels of dependence on the loop index inside one parfor's body."""

    def __init__(self, parfor: Any, typemap: dict[str, Any], function: str) -> None:
        from numba.core import ir

        self.ir = ir
        self.parfor = parfor
        self.typemap = typemap
        self.function = function
        self.seeds = {nest.index_variable.name for nest in parfor.loop_nests}
        if getattr(parfor, "index_var", None) is not None:
            self.seeds.add(parfor.index_var.name)
        self.statements = list(_statements(parfor))
        self.defs: dict[str, list[tuple[Any, Any]]] = {}
        for label, statement in self.statements:
            if isinstance(statement, ir.Assign):
                self.defs.setdefault(statement.target.name, []).append((label, statement.value))
        self._control_dependences()
        self.level: dict[str, int] = {}
        self._propagate()

    # -- the body's control flow: which blocks run only on some iterations ------------------
    def _control_dependences(self) -> None:
        """For each block of the body, the branches it is control dependent on (it runs
        on some iterations only: those that take the branch), from post-dominators of the
        body's own control flow graph; the loop's exit is the single end."""
        ir = self.ir
        blocks = self.parfor.loop_body
        exit_node = object()
        successors: dict[Any, list[Any]] = {}
        branches: dict[Any, str] = {}
        for label, block in blocks.items():
            terminator = block.body[-1] if block.body else None
            targets: list[Any] = []
            if isinstance(terminator, ir.Branch):
                targets = [terminator.truebr, terminator.falsebr]
                branches[label] = terminator.cond.name
            elif isinstance(terminator, ir.Jump):
                targets = [terminator.target]
            successors[label] = [t if t in blocks else exit_node for t in targets] or [exit_node]
        nodes = [*blocks, exit_node]
        pdom: dict[Any, set[Any]] = {n: set(nodes) for n in nodes}
        pdom[exit_node] = {exit_node}
        changed = True
        while changed:
            changed = False
            for label in blocks:
                new = {label} | set.intersection(*(pdom[s] for s in successors[label]))
                if new != pdom[label]:
                    pdom[label], changed = new, True
        # controls[w]: the branch blocks w is control dependent on (directly).
        controls: dict[Any, set[Any]] = {label: set() for label in blocks}
        for branch in branches:
            strict = pdom[branch] - {branch}
            for successor in successors[branch]:
                for w in pdom[successor] - strict:
                    if w is not exit_node:
                        controls[w].add(branch)
        self._controls, self._branches = controls, branches

    def _guard(self, label: Any) -> int:
        """The highest condition level of the branches ``label`` depends on, transitively."""
        seen: set[Any] = set()
        todo = list(self._controls.get(label, ()))
        level = NONE
        while todo:
            branch = todo.pop()
            if branch in seen:
                continue
            seen.add(branch)
            level = max(level, self.var_level(self._branches[branch]))
            todo += self._controls.get(branch, ())
        return level

    # -- dependence on the loop index ------------------------------------------------------
    def var_level(self, name: str) -> int:
        if name in self.seeds:
            return DIRECT
        return self.level.get(name, NONE)

    def _is_array(self, name: str) -> bool:
        kind = self.typemap.get(name)
        return kind is not None and hasattr(kind, "ndim") and hasattr(kind, "layout")

    def _value_level(self, value: Any, is_view: bool) -> int:
        ir = self.ir
        if isinstance(value, ir.Var):
            return self.var_level(value.name)
        if not isinstance(value, ir.Expr):
            return NONE  # constants, globals, arguments
        used = max((self.var_level(v.name) for v in value.list_vars()), default=NONE)
        if value.op in READS and used and self._is_array(value.value.name) and not is_view:
            # An element read from an array at an index that follows the loop follows the
            # loop only through the data; a view (an array result) keeps its position.
            return INDIRECT
        return used

    def _propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for target, values in self.defs.items():
                view = self._is_array(target)
                level = max(self._value_level(v, view) for _, v in values)
                if len(values) > 1:  # a value merged from paths: the paths' conditions count
                    level = max([level, *(self._guard(label) for label, _ in values)])
                if level > self.level.get(target, NONE):
                    self.level[target] = level
                    changed = True

    # -- the writes --------------------------------------------------------------------------
    def _base(self, name: str, depth: int = 0) -> tuple[str | None, int]:
        """The array outside the loop that ``name`` is (or is a view of), and the highest
        level of the view's indices; (None, _) for an array allocated in the body."""
        ir = self.ir
        values = self.defs.get(name)
        if not values:
            return name, NONE  # not assigned in the body: it lives outside the loop
        if depth > 20 or len(values) > 1:
            return None, NONE  # several definitions: treated as the body's own
        value = values[0][1]
        if isinstance(value, ir.Var):
            return self._base(value.name, depth + 1)
        if isinstance(value, ir.Expr) and value.op in (*READS, "getattr"):
            base, level = self._base(value.value.name, depth + 1)
            index = getattr(value, "index", None)
            index_level = self.var_level(index.name) if isinstance(index, ir.Var) else NONE
            return base, max(level, index_level)
        return None, NONE  # allocated (or returned by a call) inside the body

    def findings(self) -> list[LoopFinding]:
        ir = self.ir
        found: list[LoopFinding] = []
        for label, statement in self.statements:
            if isinstance(statement, ir.StaticSetItem):
                index_level = NONE
                index_text = _constant_text(statement.index)
            elif isinstance(statement, ir.SetItem):
                index_level = self.var_level(statement.index.name)
                index_text = self._text(statement.index.name)
            else:
                continue
            base, view_level = self._base(statement.target.name)
            if base is None or not self._is_array(statement.target.name):
                continue
            level = max(index_level, view_level)
            if level == DIRECT:
                continue
            guard = self._guard(label)
            write = f"{self._text(statement.target.name)}[{index_text}]"
            loc = statement.loc
            where = f"{os.path.basename(loc.filename)}:{loc.line}"
            rmw = self._reads(statement.value.name, statement.target.name)
            if level == INDIRECT:
                found.append(LoopFinding("may race", self.function, where, write, rmw,
                                         "at an index read from an array (it follows the "
                                         "loop index only through the data)"))
            elif guard:
                found.append(LoopFinding("may race", self.function, where, write, rmw,
                                         "at an index that does not depend on its loop index, "
                                         "but only on iterations that take a branch"))
            else:
                found.append(LoopFinding("race", self.function, where, write, rmw))
        return found

    def _reads(self, value: str, array: str, depth: int = 0) -> bool:
        """Whether the stored value was computed from a read of the same array."""
        ir = self.ir
        if depth > 30:
            return False
        for _, expr in self.defs.get(value, []):
            if isinstance(expr, ir.Var):
                if self._reads(expr.name, array, depth + 1):
                    return True
            elif isinstance(expr, ir.Expr):
                if expr.op in READS and expr.value.name == array:
                    return True
                if any(self._reads(v.name, array, depth + 1) for v in expr.list_vars()):
                    return True
        return False

    def _text(self, name: str, depth: int = 0) -> str:
        """An index in the source's words where the IR allows: ``0``, ``k``, ``idx[i]``."""
        ir = self.ir
        if name in self.seeds:
            return self._loop_name()
        if name.startswith("parfor_index"):
            return ":"  # the index of a nested parfor (an array expression): every element
        if not name.startswith("$") and "parfor" not in name:
            return _user_name(name)
        values = self.defs.get(name)
        if depth > 6 or not values or len(values) > 1:
            return "..."
        value = values[0][1]
        if isinstance(value, ir.Const):
            return repr(value.value)
        if isinstance(value, ir.Var):
            return self._text(value.name, depth + 1)
        if isinstance(value, ir.Expr):
            if value.op == "build_tuple":
                return ", ".join(self._text(v.name, depth + 1) for v in value.items)
            if value.op == "getitem":
                index = self._text(value.index.name, depth + 1)
                array = self._text(value.value.name, depth + 1)
                return array if index == ":" and self._is_array(name) else f"{array}[{index}]"
            if value.op == "call" and self._is_slice(value.func.name):
                return ":"
            if value.op == "static_getitem":
                return f"{self._text(value.value.name, depth + 1)}[{_constant_text(value.index)}]"
            if value.op in ("binop", "inplace_binop"):
                op = getattr(value.fn, "__name__", "?")
                symbol = _OPERATORS.get(op, op)
                return (f"{self._text(value.lhs.name, depth + 1)} {symbol} "
                        f"{self._text(value.rhs.name, depth + 1)}")
            if value.op == "cast":
                return self._text(value.value.name, depth + 1)
        return "..."

    def _is_slice(self, name: str) -> bool:
        values = self.defs.get(name, [])
        return len(values) == 1 and getattr(values[0][1], "value", None) is slice

    def _loop_name(self) -> str:
        for name, values in self.defs.items():
            if (len(values) == 1 and isinstance(values[0][1], self.ir.Var)
                    and values[0][1].name in self.seeds and name not in self.seeds
                    and not name.startswith("$")):
                return _user_name(name)
        return "the loop index"


_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "truediv": "/",
              "mod": "%", "iadd": "+", "isub": "-", "imul": "*"}


def _user_name(name: str) -> str:
    """``out.2`` -> ``out``: Numba's versions of a variable carry a ``.N`` suffix."""
    return re.sub(r"\.\d+$", "", name)


def _constant_text(index: Any) -> str:
    if isinstance(index, tuple):
        return ", ".join(_constant_text(i) for i in index)
    if isinstance(index, slice):
        parts = ["" if p is None else str(p) for p in (index.start, index.stop)]
        return ":".join(parts) + (f":{index.step}" if index.step is not None else "")
    return repr(index)
