"""An import-linter contract type of the project's (.importlinter's `contract_types`): no import
circle between any modules of a package, at any depth, a package and its own modules included.

The pinned import-linter's `acyclic_siblings` compares sibling packages (each squashed with its
descendants), so it does not see a package's `__init__` importing its own module that imports the
package back (xlt.papers.x <-> xlt.papers.x.figures). This contract reads the module graph itself
(grimp's, every import, those inside functions too) and reports one circle per group of modules
that reach each other, with the line of each import.
"""

from __future__ import annotations

from collections import deque

import grimp
from importlinter import Contract, ContractCheck, fields, output
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.protected import ProtectedContract
from importlinter.domain.imports import ModuleExpression


def circles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """One circle (modules in import order, the first repeated at the end) per strongly connected
    group of `package`'s modules, the groups found by Tarjan's algorithm (iterative)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    inside = set(modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in modules}
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            for nxt in edges[node]:  # children done: their low links
                if nxt in on_stack:
                    low[node] = min(low[node], low[nxt])
            if low[node] == index[node]:
                group = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    group.add(m)
                    if m == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return sorted(_circle_through(min(g), g, edges) for g in groups)


def _circle_through(start: str, group: set[str], edges: dict[str, list[str]]) -> list[str]:
    """The shortest circle from `start` back to it inside its group (breadth first)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in edges[node]:
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt in group and nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start}: no circle in its strongly connected group")


class AcyclicModulesContract(Contract):
    """Contract options: `packages`, the packages whose modules (all, at every depth) import
    each other in no circle."""

    type_name = "acyclic_modules"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        found = [c for package in self.packages for c in circles(graph, package)]  # type: ignore[attr-defined]
        details = {(a, b): [d["line_number"] for d in graph.get_import_details(importer=a, imported=b)]
                   for c in found for a, b in zip(c, c[1:])}
        return ContractCheck(kept=not found, warnings=[], metadata={"circles": found, "lines": details})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for circle in check.metadata["circles"]:
            output.print_error(f"Import circle: {' -> '.join(circle)}")
            for a, b in zip(circle, circle[1:]):
                lines = ", ".join(f"l.{n}" for n in check.metadata["lines"][(a, b)])
                output.print_error(f"- {a} -> {b} ({lines})", bold=False)
            output.new_line()


def plugins(graph: grimp.ImportGraph, package: str) -> list[str]:
    """The plugins of `package`: its subpackages (each paper's folder xlt/papers/<slug>/, a package
    with modules; the registry's shared modules, base, published, …, are modules)."""
    return sorted(m for m in graph.find_children(package) if graph.find_children(m))


class PluginsProtectedContract(ProtectedContract):
    """`protected` over every plugin of `plugins_of` and its modules, `plugins_of` (the registry)
    and the plugins' own modules its only allowed importers. Contract options: `plugins_of`,
    `as_packages` (False: the registry alone, not every module under it)."""

    type_name = "plugins_protected"

    plugins_of = fields.StringField()
    # read from the graph (`plugins`), not from the options
    protected_modules = fields.ListField(subfield=fields.ModuleExpressionField(), required=False)
    allowed_importers = fields.ListField(subfield=fields.ModuleExpressionField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        own = [ModuleExpression(e) for p in plugins(graph, self.plugins_of) for e in (p, f"{p}.**")]  # type: ignore[arg-type]
        self.protected_modules, self.allowed_importers = own, [ModuleExpression(self.plugins_of), *own]  # type: ignore[arg-type]
        return super().check(graph, verbose)


class PluginsIndependenceContract(IndependenceContract):
    """`independence` of every plugin of `plugins_of`: none imports another. Contract option: `plugins_of`."""

    type_name = "plugins_independent"

    plugins_of = fields.StringField()
    modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)  # read from the graph

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        self.modules = {ModuleExpression(p) for p in plugins(graph, self.plugins_of)}  # type: ignore[arg-type]
        return super().check(graph, verbose)


def package_circles(graph: grimp.ImportGraph, root: str) -> list[list[str]]:
    """Each package P under `root` (itself included) whose own part — its `__init__` and the
    plain modules of P that the `__init__` imports, following imports among them — imports a
    subpackage S of P, while S (any module of it, through any modules) imports that own part back:
    [P's module, S's module it imports, ..., P's module], the shortest such chain. Python runs a
    package's `__init__` before any module under it, so importing such an own-part module from
    outside runs P, which imports S, which needs P: the circle `acyclic_modules` cannot see when S's
    module imports P's plain module rather than P (xlt.papers importing each paper, each paper
    importing xlt.papers.base, was one: importing the kit loaded every paper)."""
    found = []
    packages = [m for m in sorted(graph.modules) if (m == root or m.startswith(root + ".")) and graph.find_children(m)]
    for package in packages:
        children = graph.find_children(package)
        plain = {c for c in children if not graph.find_children(c)}
        own, todo = {package}, [package]
        while todo:  # the __init__ and the plain modules it imports, among themselves
            for nxt in graph.find_modules_directly_imported_by(todo.pop()) & plain:
                if nxt not in own:
                    own.add(nxt)
                    todo.append(nxt)
        for sub in sorted(children - plain):
            inside = {m for m in graph.modules if m == sub or m.startswith(sub + ".")}
            entries = sorted((o, s) for o in own for s in graph.find_modules_directly_imported_by(o) & inside)
            if not entries:
                continue
            chains = [chain for s in sorted(inside) for o in sorted(own)
                      if (chain := graph.find_shortest_chain(importer=s, imported=o)) and len(chain) > 1]
            if chains:
                back = min(chains, key=lambda c: (len(c), c))
                entry = next(((o, s) for o, s in entries if o == back[-1]), entries[0])
                found.append([entry[0], *(back if back[0] == entry[1] else [entry[1], "...", *back])])
    return found


class AcyclicPackagesContract(Contract):
    """Contract option: `root`, the package under which no package and its subpackage import each
    other (`package_circles`)."""

    type_name = "acyclic_packages"

    root = fields.StringField()

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        found = package_circles(graph, self.root)  # type: ignore[arg-type]
        return ContractCheck(kept=not found, warnings=[], metadata={"circles": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for circle in check.metadata["circles"]:
            output.print_error(f"Package circle: {' -> '.join(circle)}")
            output.new_line()
