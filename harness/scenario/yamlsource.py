"""YAML documents that remember where each value came from, and `--set` overrides.

A scenario error must name the file and line of the field it is about
(`scenarios/x.yaml:14 faults.timeline[2].target: …`). `load_yaml` parses a
document once with PyYAML's composer, which keeps a start mark on every node,
and returns the plain data together with a map from each value's path
(`("faults", "timeline", 2, "target")`) to its line. `Source.where(path)`
finds the line of the deepest part of the path that the file itself wrote
(a value filled in from defaults has no line of its own; its parent's is
the best place to look).

`apply_set(data, "a.b.c=value")` changes one value in that data before the
model validates it. Values are read as YAML scalars (`3`, `true`, `all`,
`[a, b]`). Kafka config keys contain dots, so below a free-form config map
(`config`, `configs`, `client_config`) the rest of the path is one key.
`producer.X`, `consumer.X` and `topic.X` are shorthands for every producer,
consumer group or topic of the scenario.
"""
from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from core.errors import SpecError

Path = tuple[Any, ...]

CONFIG_MAPS = frozenset({"config", "configs", "client_config"})
SHORTHANDS = {"producer": ("workload", "producers"), "consumer": ("workload", "consumers"),
              "topic": ("topics",)}


def format_path(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


@dataclass
class Source:
    """Where a document came from, and the line of each value in it."""
    name: str
    lines: dict[Path, int] = field(default_factory=dict)
    overrides: dict[Path, str] = field(default_factory=dict)   # path -> the --set that wrote it

    def line_of(self, path: Path) -> int | None:
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None

    def overridden(self, path: Path) -> bool:
        """Whether a `--set` wrote this value (or a mapping above it)."""
        return any(tuple(path[:end]) in self.overrides for end in range(len(path), 0, -1))

    def where(self, path: Path) -> str:
        for end in range(len(path), 0, -1):
            if tuple(path[:end]) in self.overrides:
                return f"--set {self.overrides[tuple(path[:end])]}: {format_path(path)}"
        line = self.line_of(path)
        prefix = f"{self.name}:{line}" if line is not None else self.name
        return f"{prefix} {format_path(path)}"


def _record_lines(node: yaml.Node, path: Path, lines: dict[Path, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            _record_lines(value_node, (*path, key), lines)
            lines[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _record_lines(item, (*path, i), lines)


def load_yaml(text: str, name: str) -> tuple[Any, Source]:
    """Parse one YAML document; a syntax error names the file and line."""
    source = Source(name)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise SpecError(f"{name}{line}", f"not valid YAML: {e.problem or e}",
                        "fix the YAML syntax (indentation, a missing ':' or quote)") from None
    except yaml.YAMLError as e:
        raise SpecError(name, f"not valid YAML: {e}", "fix the YAML syntax") from None
    if node is not None:
        _record_lines(node, (), source.lines)
    return data, source


# -- --set overrides --------------------------------------------------------
_INDEX = re.compile(r"\[(\d+)\]")


def split_path(text: str) -> list[Any]:
    """'faults.timeline[0].at' or 'faults.timeline.0.at' -> ['faults', 'timeline', 0, 'at']."""
    parts: list[Any] = []
    for piece in _INDEX.sub(r".\1", text).split("."):
        if piece == "":
            raise SpecError(f"--set {text}", "empty path segment", "write e.g. cluster.brokers=5")
        parts.append(int(piece) if piece.isdigit() else piece)
    return parts


def parse_assignment(text: str) -> tuple[list[Any], Any]:
    if "=" not in text:
        raise SpecError(f"--set {text}", "no '='", "write --set key.path=value, e.g. cluster.brokers=5")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return split_path(key.strip()), value


def _closest(word: Any, options: list[str]) -> str:
    match = difflib.get_close_matches(str(word), options, n=1)
    hint = f"did you mean '{match[0]}'? " if match else ""
    return f"{hint}known here: {', '.join(sorted(options)) or '(none)'}"


def _assign(node: Any, parts: list[Any], value: Any, known: dict | None, done: list[str]) -> None:
    """Set `value` at `parts` below `node`. `known` is the schema tree of field names
    (None below free-form maps), used to refuse keys that no model has."""
    head, rest = parts[0], parts[1:]
    where = ".".join(map(str, done + [str(head)]))
    if isinstance(node, list):
        if not isinstance(head, int) or not 0 <= head < len(node):
            raise SpecError(f"--set {where}", f"no item {head!r} in a list of {len(node)}",
                            f"use an index from 0 to {len(node) - 1}")
        child_known = known
    else:
        if not isinstance(node, dict):
            raise SpecError(f"--set {where}", f"{'.'.join(map(str, done))} is not a mapping",
                            "set the whole value instead")
        if head in CONFIG_MAPS and rest:
            node.setdefault(head, {})
            node[head] = dict(node[head] or {})
            node[head][".".join(map(str, rest))] = value
            return
        if known is not None and head not in known:
            raise SpecError(f"--set {where}", "unknown field", _closest(head, list(known)))
        child_known = known.get(head) if known is not None else None
    if not rest:
        node[head] = value
        return
    if isinstance(node, dict) and node.get(head) is None:
        node[head] = {}
    _assign(node[head], rest, value, child_known, done + [str(head)])


def apply_set(data: dict, assignment: str, known: dict,
              source: Source | None = None) -> dict:
    """A copy of `data` with one `--set path=value` applied (and recorded in `source`,
    so an error in that value names the override, not the file)."""
    parts, value = parse_assignment(assignment)
    out = copy.deepcopy(data)
    if parts[0] in SHORTHANDS and len(parts) > 1 and not isinstance(parts[1], int):
        section = SHORTHANDS[parts[0]]
        items = out
        for key in section:
            items = items.setdefault(key, {} if key != section[-1] else [])
        if not items:
            raise SpecError(f"--set {assignment.split('=', 1)[0]}",
                            f"the scenario has no {format_path(section)}",
                            f"add one to the scenario, or set {format_path(section)}[0].…")
        for i in range(len(items)):
            out = _apply_parts(out, [*section, i, *parts[1:]], value, known)
            _note(source, (*section, i, *parts[1:]), assignment)
        return out
    _note(source, tuple(parts), assignment)
    return _apply_parts(out, parts, value, known)


def _note(source: Source | None, path: Path, assignment: str) -> None:
    if source is None:
        return
    config = next((i for i, p in enumerate(path) if p in CONFIG_MAPS), None)
    if config is not None and config + 1 < len(path):     # a dotted config key is one part
        path = (*path[:config + 1], ".".join(map(str, path[config + 1:])))
    source.overrides[path] = assignment


def _apply_parts(data: dict, parts: list[Any], value: Any, known: dict) -> dict:
    _assign(data, parts, value, known, [])
    return data
