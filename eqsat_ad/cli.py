"""The command line: ``eqsat-ad`` (or ``python -m eqsat_ad``).

    eqsat-ad grad FILE.py [--function F] [--wrt A ...] [--sizes N=1000 ...] [--shape x=N,N]
                          [--rules NAME|FILE.egg ...] [--backend numpy|numba] [--json]
    eqsat-ad check-rules FILE.egg|NAME
    eqsat-ad explain FILE.py --html OUT.html [--svg OUT.svg]
    eqsat-ad fuzz ...            (when the eqsat_ad.fuzz package is installed)

Built on the standard library's ``argparse``: four subcommands with a few options each need no
more, and the package keeps its dependencies to egglog, NumPy and SymPy.

FILE.py holds either an index-language program (``def f(A: [N, N]): ...``) or NumPy-subset
Python functions; for the latter ``--function`` picks one (default: the last ``def``) and
``--shape`` gives each array argument's shape (size names or integers).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .ir.errors import EqsatError
from .ir.program import Program

__all__ = ["main", "load_target"]


class CliError(EqsatError, ValueError):
    """Bad command-line input (a file that cannot be read, a malformed option)."""


# ------------------------------------------------------------------------------------------------
# Reading the user's file
# ------------------------------------------------------------------------------------------------


def _defs(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def _is_index_language(fn: ast.FunctionDef) -> bool:
    """Index-language parameters are annotated with shapes: ``A: [N, N]`` or ``M: rel[N]``."""
    args = fn.args.args
    return bool(args) and all(
        isinstance(a.annotation, ast.List)
        or (isinstance(a.annotation, ast.Subscript) and isinstance(a.annotation.value, ast.Name)
            and a.annotation.value.id == "rel")
        for a in args
    )


def load_target(path: str | Path, function: str | None = None) -> Program | Callable[..., Any]:
    """The program (index language) or Python function (NumPy subset) defined in ``path``."""
    path = Path(path)
    try:
        src = path.read_text()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        tree = ast.parse(src, filename=str(path))
    except SyntaxError as exc:
        raise CliError(f"{path}:{exc.lineno}:{exc.offset}: {exc.msg}") from None
    defs = _defs(tree)
    if function is not None:
        defs = [d for d in defs if d.name == function]
        if not defs:
            names = ", ".join(d.name for d in _defs(tree)) or "none"
            raise CliError(f"{path} defines no function {function!r} (functions: {names})")
    if not defs:
        raise CliError(f"{path} defines no function")
    chosen = defs[-1]
    if _is_index_language(chosen):
        from .frontend.index_lang import parse

        lines = src.splitlines(keepends=True)
        start = chosen.lineno - 1
        if chosen.decorator_list:
            start = chosen.decorator_list[0].lineno - 1
        text = "".join(lines[start : chosen.end_lineno])
        # pad with blank lines so that error locations are the file's own
        return parse("\n" * start + text, filename=str(path))
    spec = importlib.util.spec_from_file_location(f"_eqsat_ad_user_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # inspect.getsource finds the file through the module
    spec.loader.exec_module(module)
    return getattr(module, chosen.name)


def _pairs(items: Sequence[str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        name, eq, value = item.partition("=")
        if not eq or not name or not value:
            raise CliError(f"{what} takes NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def _sizes(items: Sequence[str] | None) -> dict[str, int] | None:
    sizes: dict[str, int] = {}
    for name, value in _pairs(items, "--sizes").items():
        try:
            sizes[name] = int(value)
        except ValueError:
            raise CliError(f"--sizes {name}={value}: the size must be an integer") from None
    return sizes or None


def _shapes(items: Sequence[str] | None) -> dict[str, tuple[int | str, ...]] | None:
    shapes: dict[str, tuple[int | str, ...]] = {}
    for name, value in _pairs(items, "--shape").items():
        dims = [d.strip() for d in value.split(",") if d.strip() and value != "()"]
        shapes[name] = tuple(int(d) if d.lstrip("-").isdigit() else d for d in dims)
    return shapes or None


def _wrt(items: Sequence[str] | None) -> str | tuple[str, ...] | None:
    if not items:
        return None
    return items[0] if len(items) == 1 else tuple(items)


def _compiled_gradient(args: argparse.Namespace) -> Any:
    from .api import grad

    target = load_target(args.file, args.function)
    shapes = _shapes(args.shape)
    if not isinstance(target, Program) and shapes is None:
        raise CliError(
            f"{args.file}: {getattr(target, '__name__', 'the function')} is a NumPy function: "
            "give each array argument's shape, e.g. --shape x=N --shape A=N,M"
        )
    g = grad(target, wrt=_wrt(args.wrt), sizes=_sizes(args.sizes), shapes=shapes,
             optimize=not args.no_optimize, rules=args.rules, backend=args.backend)
    g.program  # noqa: B018 - compiles now (and raises now) for a Program or declared shapes
    return g


# ------------------------------------------------------------------------------------------------
# Subcommands
# ------------------------------------------------------------------------------------------------


def _cmd_grad(args: argparse.Namespace) -> int:
    from .ir.printer import print_program

    g = _compiled_gradient(args)
    if args.json:
        out = {
            "program": print_program(g.program),
            "naive": print_program(g.naive),
            "source": g.source,
            "backend": args.backend,
            "report": g.report.to_dict() if g.report is not None else None,
        }
        print(json.dumps(out, indent=2, default=str))
        return 0
    print("# optimized gradient program\n" + print_program(g.program))
    label = "Numba loop nests" if args.backend == "numba" else "NumPy source"
    print(f"\n# generated {label}\n" + g.source)
    if g.report is not None:
        print("\n# cost report\n" + str(g.report))
    return 0


def _cmd_check_rules(args: argparse.Namespace) -> int:
    from .egraph.check import check_rules

    result = check_rules(args.rules, trials=args.trials, seed=args.seed)
    print(result)
    return 0 if result.ok else 1


def _cmd_explain(args: argparse.Namespace) -> int:
    from .why import explain_compiled

    g = _compiled_gradient(args)
    explanation = explain_compiled(g)
    print(explanation)
    if args.html:
        Path(args.html).write_text(explanation.html())
        print(f"wrote {args.html}", file=sys.stderr)
    if args.svg:
        Path(args.svg).write_text(explanation.svg())
        print(f"wrote {args.svg}", file=sys.stderr)
    return 0


def _cmd_fuzz(args: argparse.Namespace) -> int:
    try:
        fuzz = importlib.import_module("eqsat_ad.fuzz")
    except ModuleNotFoundError as exc:
        if exc.name not in ("eqsat_ad.fuzz",):
            raise
        print("eqsat-ad fuzz: this installation has no eqsat_ad.fuzz package (the differential "
              "fuzzer); install a version of eqsat_ad that includes it", file=sys.stderr)
        return 2
    entry = getattr(fuzz, "main", None)
    if entry is None:
        print("eqsat-ad fuzz: eqsat_ad.fuzz has no main(argv) entry point", file=sys.stderr)
        return 2
    return int(entry(list(args.fuzz_args)) or 0)


# ------------------------------------------------------------------------------------------------
# The parser
# ------------------------------------------------------------------------------------------------


def _add_target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.py",
                   help="an index-language program or a NumPy-subset Python function")
    p.add_argument("--function", metavar="NAME",
                   help="which function of FILE.py (default: the last one defined)")
    p.add_argument("--wrt", nargs="+", metavar="NAME",
                   help="differentiate with respect to these parameters (default: the first "
                        "float parameter)")
    p.add_argument("--sizes", nargs="+", metavar="N=1000",
                   help="values of the size symbols for the cost report and ties")
    p.add_argument("--shape", action="append", metavar="x=N,M",
                   help="shape of an array argument of a NumPy function (repeat per argument; "
                        "'s=()' for a scalar)")
    p.add_argument("--rules", nargs="+", metavar="NAME|FILE.egg",
                   help="rule sets: shipped names (indicator arith sumprod reindex) and paths to "
                        ".egg files (default: the four shipped sets)")
    p.add_argument("--no-optimize", action="store_true",
                   help="compile the naive adjoint (no equality saturation)")
    p.add_argument("--backend", choices=("numpy", "numba"), default="numpy",
                   help="numpy (default): NumPy calls; numba: fused loop nests compiled by Numba "
                        "(needs the extra: pip install 'eqsat-ad[numba]')")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eqsat-ad",
        description="Differentiate tensor programs and make the derivatives cheap by equality "
                    "saturation.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("grad", help="print the optimized gradient, its NumPy source and report",
                       description="Differentiate FILE.py's function, optimize the adjoint and "
                                   "print the program, the generated NumPy source and the cost "
                                   "report.")
    _add_target_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.set_defaults(run=_cmd_grad)

    p = sub.add_parser("check-rules", help="check a rule file on random instances",
                       description="Evaluate both sides of every rewrite of a rule file on random "
                                   "instances; exit status 1 when a rule is unsound.")
    p.add_argument("rules", metavar="FILE.egg|NAME",
                   help="a path to an .egg file or a shipped rule set "
                        "(indicator, arith, sumprod, reindex)")
    p.add_argument("--trials", type=int, default=16, help="random instances per rule")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.set_defaults(run=_cmd_check_rules)

    p = sub.add_parser("explain", help="why the gradient got cheaper: rewrite chains, pictures",
                       description="Print, per statement of the gradient, the chain of rewrites "
                                   "from the naive term to the extracted one with the cost after "
                                   "each step; write an HTML page (e-graph picture, chains, "
                                   "cost report).")
    _add_target_options(p)
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML page")
    p.add_argument("--svg", metavar="OUT.svg", help="write the e-graph picture as SVG")
    p.set_defaults(run=_cmd_explain)

    p = sub.add_parser("fuzz", help="differential fuzzing (needs eqsat_ad.fuzz)",
                       description="Run the differential fuzzer of eqsat_ad.fuzz; the arguments "
                                   "are passed to it.", add_help=True)
    p.add_argument("fuzz_args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="arguments of the fuzzer")
    p.set_defaults(run=_cmd_fuzz)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except EqsatError as exc:
        print(f"eqsat-ad {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # an optional dependency (--backend numba without Numba)
        if "eqsat-ad[" not in str(exc):
            raise
        print(f"eqsat-ad {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (eqsat-ad grad f.py | head): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
