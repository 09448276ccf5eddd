"""Reading untrusted YAML model text into plain Python data, safely and in time linear in its size.

PyYAML's loaders compose a node tree recursively (a document nested a few thousand levels deep raised
``RecursionError``, and the C composer can overflow the C stack) and construct it in slow Python
(≈9 s for a 10,000-node model on a loaded 2-core machine). This module builds the data straight from
libyaml's *event stream* (flat, no recursion) with an explicit stack, and refuses at once:

* documents nested deeper than :data:`MAX_DEPTH` levels,
* duplicate keys in a mapping (plain YAML silently keeps the last one),
* non-scalar mapping keys, unknown tags, more than one document,
* alias/merge tricks that would copy more than :data:`MAX_MERGED` entries ("billion laughs").

Scalars are resolved exactly as :class:`yaml.SafeLoader` resolves them (YAML 1.1: ``yes``/``no`` are
booleans, ``.nan`` a float, ...), plus ``1e5``/``2E-3`` read as numbers. Every problem is a
:class:`~tensegrity_engine.errors.ModelError` naming the line and column.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from tensegrity_engine.errors import ModelError

MAX_DEPTH = 20              # nesting levels; the schema needs 4 (top > bars > bar > nodes), 20 leaves room
MAX_MERGED = 1_000_000      # mapping entries copied by YAML merge keys ('<<: *defaults'), in total

_ParserLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml if present (the C event parser)


class _Resolver(yaml.resolver.Resolver):
    """The SafeLoader's implicit scalar types, plus scientific notation without a dot (``1e5``)."""


_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"))

_RESOLVERS = _Resolver.yaml_implicit_resolvers
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_STR, _MERGE = "tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"
_SCALAR_TAGS = {
    "tag:yaml.org,2002:null": lambda n: None,
    "tag:yaml.org,2002:bool": _CONSTRUCTOR.construct_yaml_bool,
    "tag:yaml.org,2002:int": _CONSTRUCTOR.construct_yaml_int,
    "tag:yaml.org,2002:float": _CONSTRUCTOR.construct_yaml_float,
    "tag:yaml.org,2002:timestamp": _CONSTRUCTOR.construct_yaml_timestamp,
    _STR: lambda n: n.value,
    _MERGE: lambda n: n.value,
}


def _where(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "YAML"


def _resolve(event):
    """Tag of a scalar event, as yaml.SafeLoader would resolve it."""
    tag, value = event.tag, event.value
    if tag is None or tag == "!":
        if not event.implicit[0]:
            return _STR
        for tag, regexp in _RESOLVERS.get(value[:1] or "", ()):
            if regexp.match(value):
                return tag
        return _STR
    return tag


_plain_cache: dict = {}          # plain scalar text -> (value, tag); values are immutable


def _scalar(event, source):
    if event.tag is None:                                   # fast paths: no explicit tag
        if not event.implicit[0]:
            return event.value, _STR
        hit = _plain_cache.get(event.value)
        if hit is not None:
            return hit
    tag = _resolve(event)
    make = _SCALAR_TAGS.get(tag)
    if make is None:
        raise ModelError(source, _where(event.start_mark), f"unsupported YAML tag {tag!r}",
                         "remove the tag (a model file needs only numbers, text, lists and mappings)")
    try:
        out = make(yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark)), tag
        if event.tag is None and len(_plain_cache) < 100_000:
            _plain_cache[event.value] = out
        return out
    except (ValueError, ArithmeticError, yaml.YAMLError) as exc:      # e.g. an int of 10,000 digits
        raise ModelError(source, _where(event.start_mark), f"cannot read {event.value[:40]!r} as {tag.split(':')[-1]}"
                         f" ({str(exc)[:80]})", "write a plain number or quote the text") from None


class _Map:
    """A mapping under construction: its dict, the pending key, merge sources and where keys first appeared."""
    __slots__ = ("value", "key", "key_mark", "has_key", "marks", "merges", "mark")

    def __init__(self, mark):
        self.value, self.key, self.key_mark, self.has_key = {}, None, None, False
        self.marks, self.merges, self.mark = {}, [], mark


def _too_deep(source: str, mark) -> ModelError:
    return ModelError(source, _where(mark), f"the document is nested deeper than {MAX_DEPTH} levels",
                      "a model file needs only a few levels of lists and mappings; remove the extra brackets")


_COLLECTION_TAGS = (None, "!", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map")


@dataclass
class _DocumentBuilder:
    """The data of one YAML document, built event by event with an explicit stack (no recursion)."""
    source: str
    stack: list = field(default_factory=list)       # open containers: list, or _Map
    anchors: dict = field(default_factory=dict)     # anchor name -> its value
    root: object = None
    have_root: bool = False
    docs: int = 0                                   # documents started
    merged: int = 0                                 # mapping entries copied by merge keys so far

    def add(self, value, mark, tag=None):
        """Put ``value`` where the stream is: the root, the next list item, a mapping key or its value."""
        if not self.stack:
            self.root, self.have_root = value, True
            return
        top = self.stack[-1]
        if isinstance(top, list):
            top.append(value)
        elif not top.has_key:
            self._set_key(top, value, mark, tag)
        else:
            if top.key is _MERGE:
                top.merges.append((value, top.key_mark))
            else:
                top.value[top.key] = value
            top.key, top.has_key = None, False

    def _set_key(self, top: _Map, value, mark, tag):
        """Make ``value`` the pending key of ``top``; refuse unhashable and duplicate keys."""
        if tag == _MERGE:
            top.key, top.has_key, top.key_mark = _MERGE, True, mark
            return
        try:
            hash(value)
        except TypeError:
            raise ModelError(self.source, _where(mark), "a mapping key is a list or mapping",
                             "use plain text keys ('name: value')") from None
        first = top.marks.get(value)
        if first is not None:
            raise ModelError(self.source, _where(mark), f"duplicate key '{value}' (already given at line "
                             f"{first.line + 1}; YAML would silently keep only the last one)",
                             f"merge the two '{value}' entries into one")
        top.marks[value] = mark
        top.key, top.has_key, top.key_mark = value, True, mark

    def merge(self, m: _Map):
        """Copy the entries of the mappings named by ``m``'s merge keys ('<<') that ``m`` does not set itself."""
        for value, mark in m.merges:
            sources = value if isinstance(value, list) else [value]
            for src in sources:
                if not isinstance(src, dict):
                    raise ModelError(self.source, _where(mark), "a merge key '<<' must name a mapping or a list of "
                                     "mappings", "write '<<: *anchor' with an anchored mapping")
                self.merged += len(src)
                if self.merged > MAX_MERGED:
                    raise ModelError(self.source, _where(mark), f"merge keys copy more than {MAX_MERGED:,} entries",
                                     "write the values out instead of merging anchors repeatedly")
                for k, v in src.items():
                    m.value.setdefault(k, v)

    def add_scalar(self, ev):
        """A scalar value (remembered under its anchor, if any)."""
        value, tag = _scalar(ev, self.source)
        if ev.anchor:
            self.anchors[ev.anchor] = value
        self.add(value, ev.start_mark, tag)

    def start_collection(self, ev, is_list: bool):
        """Start a list or mapping (refusing depth beyond MAX_DEPTH and unknown tags)."""
        if len(self.stack) >= MAX_DEPTH:
            raise _too_deep(self.source, ev.start_mark)
        if ev.tag not in _COLLECTION_TAGS:
            raise ModelError(self.source, _where(ev.start_mark), f"unsupported YAML tag {ev.tag!r}", "remove the tag")
        node = [] if is_list else _Map(ev.start_mark)
        if ev.anchor:
            self.anchors[ev.anchor] = node if isinstance(node, list) else node.value
        self.add(node if isinstance(node, list) else node.value, ev.start_mark)
        self.stack.append(node)

    def end_collection(self):
        """Finish the innermost list or mapping (applying its merge keys)."""
        node = self.stack.pop()
        if isinstance(node, _Map) and node.merges:
            self.merge(node)

    def add_alias(self, ev):
        """The value of an earlier anchor ('*name'), shared, not copied."""
        if ev.anchor not in self.anchors:
            raise ModelError(self.source, _where(ev.start_mark), f"unknown alias '*{ev.anchor}'",
                             f"define '&{ev.anchor}' before using it")
        self.add(self.anchors[ev.anchor], ev.start_mark)

    def start_document(self, ev):
        """Count documents: a model file holds exactly one."""
        self.docs += 1
        if self.docs > 1:
            raise ModelError(self.source, _where(ev.start_mark), "the file holds more than one YAML document",
                             "remove the '---' separator and the second document")


def _build(parser, doc: _DocumentBuilder):
    """Feed the parser's events to ``doc`` until the stream ends."""
    # bound once: the loop runs once per event, and a 10,000-node model has about 100,000 of them
    next_event, add_scalar, start, end = parser.get_event, doc.add_scalar, doc.start_collection, doc.end_collection
    while True:
        ev = next_event()
        kind = type(ev)
        if kind is yaml.StreamEndEvent or ev is None:
            break
        if kind is yaml.ScalarEvent:
            add_scalar(ev)
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            start(ev, kind is yaml.SequenceStartEvent)
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            end()
        elif kind is yaml.AliasEvent:
            doc.add_alias(ev)
        elif kind is yaml.DocumentStartEvent:
            doc.start_document(ev)


def _syntax_error(exc: yaml.YAMLError, source: str) -> ModelError:
    """The ModelError for a YAML syntax error (libyaml's own nesting limit reads as 'nested too deep')."""
    mark = getattr(exc, "problem_mark", None)
    if "nesting depth" in str(getattr(exc, "problem", "")):
        # libyaml >= 0.2.5 (PyYAML >= 6.0.4's C loader) scans ahead and stops at its own limit (1,000
        # levels) before our MAX_DEPTH check sees the events: the same refusal, in our words
        return _too_deep(source, mark)
    return ModelError(source, _where(mark), f"is not valid YAML ({str(getattr(exc, 'problem', exc))[:200]})",
                      "fix the YAML syntax (indentation, colons, brackets)")


def parse_yaml(text: str, source: str):
    """The single YAML document in ``text`` as Python data (dict/list/str/int/float/bool/None/date).

    Raises ModelError for invalid YAML, nesting deeper than MAX_DEPTH, duplicate keys, unknown tags and
    several documents. Time and memory are linear in the length of ``text``.
    """
    doc = _DocumentBuilder(source)
    try:
        _build(_ParserLoader(text), doc)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, source) from None
    return doc.root if doc.have_root else None
