"""
Tests for L{nodex.evm.build} and the optional compiled build of setup.py
(docs/evm.md, "The compiled build").

The suite runs against whichever EVM the checkout holds: the pure-Python
modules, or, after C{NODEX_COMPILE=1 pip install -e .}, their compiled
extensions (the EVM's tests and every state test then run compiled: that
is how a divergence of the build shows, and C{.ci/run} does it).  With
C{NODEX_EXPECT_COMPILED=1} in the environment, L{CompiledRunTests} fails
unless every module of the build really is compiled, so that such a run
cannot quietly test the pure modules instead.
"""

import ast
import importlib
import importlib.util
import io
import os
import sys
import threading
import types
from contextlib import redirect_stderr
from pathlib import Path

from twisted.trial.unittest import SkipTest, SynchronousTestCase

import nodex.evm.build
from nodex.evm.build import COMPILED_MODULES, build_line, compiled_modules, is_extension
from nodex.evm.frame import Evm
from nodex.evm.interpreter import ensure_recursion_limit

REPOSITORY = Path(__file__).resolve().parent.parent.parent
EXPECT_COMPILED = os.environ.get("NODEX_EXPECT_COMPILED") == "1"


def load_setup() -> types.ModuleType:
    """
    The checkout's setup.py as a module (its C{setup()} call waits for C{__main__}).
    """
    spec = importlib.util.spec_from_file_location("nodex_setup_under_test", REPOSITORY / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def module_name(path: Path) -> str:
    """
    The dotted name of a module file of the checkout.
    """
    parts = list(path.relative_to(REPOSITORY).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def loops_over_byte_literals(source: str) -> list[int]:
    """
    The lines of C{source} where a loop or comprehension runs over a tuple or
    list display holding a one-byte C{bytes} literal.
    """
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, (ast.Tuple, ast.List)):
            if any(
                isinstance(item, ast.Constant) and isinstance(item.value, bytes) and len(item.value) == 1
                for item in node.iter.elts
            ):
                lines.append(node.iter.lineno)
    return lines


class BuildLineTests(SynchronousTestCase):
    """
    Tests for L{build_line}, which the node logs as it starts.
    """

    def test_extension(self) -> None:
        """
        A module loaded from an extension file is compiled; one loaded from a C{.py} file is not.
        """
        self.assertTrue(is_extension(types.SimpleNamespace(__file__="/x/interpreter.cpython-311-x86_64-linux-gnu.so")))
        self.assertTrue(is_extension(types.SimpleNamespace(__file__="/x/interpreter.abi3.so")))
        self.assertFalse(is_extension(types.SimpleNamespace(__file__="/x/interpreter.py")))
        self.assertFalse(is_extension(types.SimpleNamespace()))

    def test_pure(self) -> None:
        """
        Without compiled modules the line says pure Python and how to build the other.
        """
        self.patch(nodex.evm.build, "compiled_modules", lambda: [])
        self.assertEqual(build_line(), "EVM: pure Python (the compiled build is optional: NODEX_COMPILE=1, docs/evm.md)")

    def test_compiled(self) -> None:
        """
        With every module compiled the line says so.
        """
        self.patch(nodex.evm.build, "compiled_modules", lambda: list(COMPILED_MODULES))
        self.assertEqual(build_line(), "EVM: compiled with Cython (16 modules)")

    def test_partly(self) -> None:
        """
        An extension that did not build leaves its module pure, and the line names it.
        """
        self.patch(nodex.evm.build, "compiled_modules", lambda: list(COMPILED_MODULES[1:]))
        self.assertEqual(
            build_line(),
            "EVM: partly compiled with Cython (15 of 16 modules; pure: nodex.evm.interpreter)",
        )

    def test_this_process(self) -> None:
        """
        L{compiled_modules} reports what this process imported.
        """
        expected = [name for name in COMPILED_MODULES if importlib.import_module(name).__file__.endswith(".so")]
        self.assertEqual(compiled_modules(), expected)


class SetupTests(SynchronousTestCase):
    """
    Tests for setup.py's optional compiled build.
    """

    def setUp(self) -> None:
        self.setup_module = load_setup()

    def test_modules_listed(self) -> None:
        """
        setup.py's C{COMPILED} globs name exactly L{COMPILED_MODULES}, and its
        annotation-typed modules are among them.
        """
        files = {path for pattern in self.setup_module.COMPILED for path in REPOSITORY.glob(pattern)}
        self.assertEqual(sorted(module_name(path) for path in files), sorted(COMPILED_MODULES))
        self.assertTrue({REPOSITORY / name for name in self.setup_module.ANNOTATED} <= files)

    def test_no_loop_over_byte_literals(self) -> None:
        """
        No compiled module loops over a tuple or list of one-byte C{bytes}
        literals: Cython 3.3 compiles C{for mark in (b"\\xfe", b"\\xff")} into a
        loop over C characters, so that C{mark} is the integer 254, not
        C{b"\\xfe"} (found compiling C{nodex/db/schema.py} in session 17;
        docs/evm.md, "The compiled build").
        """
        files = {path for pattern in self.setup_module.COMPILED for path in REPOSITORY.glob(pattern)}
        for path in sorted(files):
            self.assertEqual(loops_over_byte_literals(path.read_text()), [], path.name)

    def test_loop_over_byte_literals_found(self) -> None:
        """
        L{loops_over_byte_literals} finds the loop of C{nodex/db/schema.py}
        and loops over lists, not loops over longer literals.
        """
        self.assertEqual(len(loops_over_byte_literals((REPOSITORY / "nodex/db/schema.py").read_text())), 1)
        self.assertEqual(loops_over_byte_literals("[m for m in [b'a', b'b']]\nfor n in (b'ab', 1): pass\n"), [1])

    def test_annotations_safe_to_type(self) -> None:
        """
        The modules compiled with their annotations as types annotate only
        C{Evm}, C{int}, C{None} and C{Callable}, besides the few audited below: typed, an
        annotation becomes a check (C{bytes} refuses a bytearray, C{int}
        turns 1.5 into 1) that the pure-Python source does not make, on
        arguments and return values alike.  Each has a .pxd that cimports Evm.
        """
        # Callable[...] is no type Cython knows: it stays an object.
        allowed = {"Evm", "int", "None", "Callable[[Evm], None]"}
        audited = {
            # Both callers pass a tuple display of two (start, size) tuples.
            ("nodex/evm/memory.py", "expand_memory_for", "tuple[tuple[int, int], ...]"),
            # It returns b"" or bytes(...).
            ("nodex/evm/memory.py", "read_memory", "bytes"),
        }
        for name in self.setup_module.ANNOTATED:
            path = REPOSITORY / name
            found = set()
            for function in ast.walk(ast.parse(path.read_text())):
                if not isinstance(function, ast.FunctionDef):
                    continue
                annotations = [argument.annotation for argument in function.args.args + function.args.kwonlyargs]
                annotations += [function.returns]
                annotations += [node.annotation for node in ast.walk(function) if isinstance(node, ast.AnnAssign)]
                found |= {(name, function.name, ast.unparse(node)) for node in annotations if node is not None}
            self.assertEqual({item for item in found if item[2] not in allowed} - audited, set())
            self.assertIn("from nodex.evm.frame cimport Evm", path.with_suffix(".pxd").read_text(), name)

    def test_not_asked(self) -> None:
        """
        Without C{NODEX_COMPILE=1} nothing is compiled and Cython is not asked for.
        """
        self.patch(os, "environ", {"NODEX_COMPILE": "0"})
        self.assertEqual(self.setup_module.compiled_extensions(), [])
        self.assertFalse(self.setup_module.wanted())

    def test_without_cython(self) -> None:
        """
        Asked for, without Cython: a warning and the pure-Python EVM, not a failed install.
        """
        self.patch(os, "environ", {"NODEX_COMPILE": "1"})
        self.patch(sys, "modules", dict(sys.modules, **{"Cython": None, "Cython.Build": None}))
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(self.setup_module.compiled_extensions(), [])
        self.assertEqual(err.getvalue(), "NODEX_COMPILE=1 but Cython is missing: the EVM stays pure Python\n")

    def test_extensions_optional(self) -> None:
        """
        Asked for, with Cython: every module becomes an optional extension
        (one that does not compile, for want of a compiler, leaves its module
        pure), compiled with annotation typing only where setup.py lists it.
        """
        calls = []
        threads = []

        def cythonize(
            patterns: list[str], exclude: list[str] = (), compiler_directives: dict = {}, quiet: bool = False, nthreads: int = 0
        ) -> list:
            calls.append((list(patterns), list(exclude), dict(compiler_directives)))
            threads.append(nthreads)
            return [types.SimpleNamespace(name=pattern, optional=False) for pattern in patterns]

        fake = types.ModuleType("Cython.Build")
        fake.cythonize = cythonize  # type: ignore[attr-defined]
        self.patch(os, "environ", {"NODEX_COMPILE": "1"})
        self.patch(sys, "modules", dict(sys.modules, **{"Cython": types.ModuleType("Cython"), "Cython.Build": fake}))
        extensions = self.setup_module.compiled_extensions()
        self.assertTrue(extensions)
        self.assertTrue(all(extension.optional for extension in extensions))
        (annotated, _, typed), (everything, excluded, untyped) = calls
        self.assertEqual(annotated, self.setup_module.ANNOTATED)
        self.assertEqual((everything, excluded), (self.setup_module.COMPILED, self.setup_module.ANNOTATED))
        self.assertEqual((typed["annotation_typing"], untyped["annotation_typing"]), (True, False))
        self.assertEqual((typed["language_level"], untyped["language_level"]), (3, 3))
        # Cython's C generation uses every core (the C compiler too: build_ext's parallel option).
        self.assertEqual(threads, [os.cpu_count() or 1] * 2)


class CompiledRunTests(SynchronousTestCase):
    """
    Tests of the run itself: which EVM the suite is testing.
    """

    def test_compiled_when_expected(self) -> None:
        """
        Under C{NODEX_EXPECT_COMPILED=1}, every module of the build is an
        extension and L{Evm} is the extension type of frame.pxd.
        """
        if not EXPECT_COMPILED:
            raise SkipTest("NODEX_EXPECT_COMPILED=1 is not set: the run may test either EVM")
        self.assertEqual(compiled_modules(), list(COMPILED_MODULES))
        self.assertFalse(Evm.__flags__ & (1 << 9), "Evm is a heap type: frame.pxd was not applied")

    def test_fallback(self) -> None:
        """
        Without the extensions (the default install, or a build without a
        compiler), every module of the build imports from its C{.py} file and
        the EVM is the pure-Python one.
        """
        if compiled_modules():
            raise SkipTest("this run tests the compiled build")
        for name in COMPILED_MODULES:
            self.assertTrue(importlib.import_module(name).__file__.endswith(".py"), name)
        self.assertTrue(Evm.__flags__ & (1 << 9))
        self.assertTrue(build_line().startswith("EVM: pure Python"))


class DepthTests(SynchronousTestCase):
    """
    The compiled build spends C stack on each nested frame, where the pure
    interpreter spends almost none (1024 nested calls need between 1 and 2
    MiB compiled; docs/evm.md): the deepest calls must fit in a worker
    thread's default stack.
    """

    def test_deepest_calls_in_a_thread(self) -> None:
        """
        A contract that counts its depth in storage and calls itself with
        all its gas reaches depth 1024 (1025 frames) in a new thread.
        """
        from tests.evm.test_instructions import CONTRACT, make_state, push, run

        # SLOAD 0, ADD 1, SSTORE 0; CALL(gas, ADDRESS, 0, 0, 0, 0, 0); STOP
        code = push(0) + b"\x54" + push(1) + b"\x01" + push(0) + b"\x55" + push(0) * 5 + b"\x30\x5a\xf1\x00"
        state = make_state(code)
        outcome: list[object] = []

        def call() -> None:
            ensure_recursion_limit()
            outcome.append(run(code, gas=10**12, state=state).error)

        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
        self.assertEqual((outcome, state.get_storage(CONTRACT, 0)), ([None], 1025))
