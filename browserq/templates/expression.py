"""The small expression language of ``when: {if: ...}``: parsed at template load, judged at run time.

Why not Python: a template comes from outside the process, so nothing in it may reach ``eval``,
attributes or calls. This is a tokenizer and a recursive-descent parser over a fixed grammar::

    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := operand [("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in") operand]
    operand := "-" NUMBER | NUMBER | STRING | true | false | null | "[" [expr ("," expr)*] "]"
             | "(" expr ")" | NAME ("." (NAME | DIGITS))*

A dotted name reads data only (mapping keys, list indexes): ``params.x`` or a bare ``x`` (a param),
``outputs.NAME...``, ``run.id``, ``run.attempt``, ``loop.index``, ``loop.iteration``. Truthiness is
JSON's (:mod:`~browserq.templates.expression_eval` judges the tree). Length, tokens and nesting are
bounded, so a hostile expression costs microseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: Longest expression, most tokens, deepest nesting (parentheses, lists, ``not``).
MAX_EXPRESSION_LENGTH = 500
MAX_TOKENS = 200
MAX_DEPTH = 20
#: Scopes a dotted name can start with; any other first name is a param.
SCOPES = ("params", "outputs", "run", "loop")
KEYWORDS = frozenset({"and", "or", "not", "in", "true", "false", "null"})
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">", "in", "not in")

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>\d+(?:\.\d+)?)
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.(?:[A-Za-z0-9_-]+))*)
      | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,|-)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}


class ExpressionError(ValueError):
    """The expression cannot be parsed; the message says where and what to write instead."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # number, string, name, keyword, op, end
    text: str
    pos: int


# --- the tree --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Literal:
    value: Any


@dataclass(frozen=True, slots=True)
class Name:
    """A dotted reference; ``parts[0]`` is one of :data:`SCOPES` (a bare param gets ``params``)."""

    parts: tuple[str, ...]

    @property
    def dotted(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True, slots=True)
class ListOf:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node


@dataclass(frozen=True, slots=True)
class Logic:
    op: str  # and, or
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Compare:
    op: str
    left: Node
    right: Node


Node = Literal | Name | ListOf | Not | Logic | Compare


@dataclass(frozen=True, slots=True)
class Expression:
    source: str
    tree: Node

    def names(self) -> list[Name]:
        """Every reference, in reading order (for checks at template load)."""
        found: list[Name] = []
        stack: list[Node] = [self.tree]
        while stack:
            node = stack.pop()
            if isinstance(node, Name):
                found.append(node)
            elif isinstance(node, ListOf):
                stack.extend(reversed(node.items))
            elif isinstance(node, Not):
                stack.append(node.operand)
            elif isinstance(node, Logic | Compare):
                stack.extend((node.right, node.left))
        return found


# --- tokens and parsing ------------------------------------------------------------------------
def unwrap(text: str) -> str:
    """``"${a == 1}"`` → ``"a == 1"``: the whole expression may be written inside ``${...}``."""
    stripped = text.strip()
    if stripped.startswith("${") and stripped.endswith("}"):
        return stripped[2:-1]
    return text


def _tokens(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            if text[pos:].strip() == "":
                break
            where = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise ExpressionError(f"unexpected {text[where]!r} at position {where + 1}{_hint(text[where])}")
        group = match.lastgroup or "op"
        value = match.group(group)
        kind = "keyword" if group == "name" and value in KEYWORDS else group
        tokens.append(Token(kind, value, match.start(group)))
        pos = match.end()
        if len(tokens) > MAX_TOKENS:
            raise ExpressionError(f"the expression has more than {MAX_TOKENS} tokens; split the condition")
    tokens.append(Token("end", "", len(text)))
    return tokens


def _hint(char: str) -> str:
    if char in "=!":
        return " (compare with == or !=)"
    if char in "&|":
        return " (write and / or)"
    if char in "'\"":
        return " (a string that is not closed)"
    if char in "+*/%":
        return " (there is no arithmetic; compare values instead)"
    return ""


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.at = 0
        self.depth = 0

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.at + offset, len(self.tokens) - 1)]

    def take(self) -> Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token.text != text or token.kind not in ("op", "keyword"):
            raise ExpressionError(f"expected {text!r} at position {token.pos + 1}, got {_shown(token)}")

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"the expression nests more than {MAX_DEPTH} deep")

    def expr(self) -> Node:
        self.nested()
        node = self.conjunction()
        while self.peek().kind == "keyword" and self.peek().text == "or":
            self.take()
            node = Logic("or", node, self.conjunction())
        self.depth -= 1
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.peek().kind == "keyword" and self.peek().text == "and":
            self.take()
            node = Logic("and", node, self.negation())
        return node

    def negation(self) -> Node:
        token = self.peek()
        if token.kind == "keyword" and token.text == "not" and self.peek(1).text != "in":
            self.take()
            self.nested()
            node = Not(self.negation())
            self.depth -= 1
            return node
        return self.comparison()

    def comparison(self) -> Node:
        left = self.operand()
        op = self._comparison_op()
        if op is None:
            return left
        node = Compare(op, left, self.operand())
        if self._comparison_op(peek_only=True) is not None:
            raise ExpressionError(
                f"comparisons do not chain (at position {self.peek().pos + 1}); join them with and"
            )
        return node

    def _comparison_op(self, peek_only: bool = False) -> str | None:
        token = self.peek()
        if token.kind == "keyword" and token.text == "not" and self.peek(1).text == "in":
            if not peek_only:
                self.at += 2
            return "not in"
        if token.text in COMPARISONS and token.kind in ("op", "keyword"):
            if not peek_only:
                self.take()
            return token.text
        return None

    def operand(self) -> Node:
        token = self.take()
        if token.kind == "number" or (token.kind == "op" and token.text == "-"):
            return Literal(self._number(token))
        if token.kind == "string":
            return Literal(_unquote(token.text))
        if token.kind == "keyword" and token.text in ("true", "false", "null"):
            return Literal({"true": True, "false": False, "null": None}[token.text])
        if token.kind == "name":
            if self.peek().text == "(" and self.peek().kind == "op":
                raise ExpressionError(f"{token.text}(...) at position {token.pos + 1}: calls are not allowed")
            return _name(token)
        if token.text == "(" and token.kind == "op":
            node = self.expr()
            self.expect(")")
            return node
        if token.text == "[" and token.kind == "op":
            return self._list()
        raise ExpressionError(f"expected a value at position {token.pos + 1}, got {_shown(token)}")

    def _number(self, token: Token) -> float | int:
        sign = 1
        if token.kind == "op":  # unary minus: only before a number
            token = self.take()
            sign = -1
            if token.kind != "number":
                raise ExpressionError(f"'-' is only allowed before a number (position {token.pos + 1})")
        value = float(token.text) if "." in token.text else int(token.text)
        return sign * value

    def _list(self) -> Node:
        self.nested()
        items: list[Node] = []
        if not (self.peek().kind == "op" and self.peek().text == "]"):
            items.append(self.expr())
            while self.peek().kind == "op" and self.peek().text == ",":
                self.take()
                items.append(self.expr())
        self.expect("]")
        self.depth -= 1
        return ListOf(tuple(items))


def _shown(token: Token) -> str:
    return "the end" if token.kind == "end" else repr(token.text)


def _unquote(text: str) -> str:
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _name(token: Token) -> Name:
    parts = tuple(token.text.split("."))
    if parts[0] == "params":
        if len(parts) < 2:
            raise ExpressionError(f"'params' at position {token.pos + 1} needs a name: params.NAME")
        return Name(parts)
    if parts[0] in SCOPES:
        return Name(parts)
    return Name(("params", *parts))


@lru_cache(maxsize=1024)
def parse_expression(text: str) -> Expression:
    """Parse ``text`` (optionally wrapped in ``${...}``); raises :class:`ExpressionError`."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(
            f"the expression is {len(text)} characters long; the limit is {MAX_EXPRESSION_LENGTH}"
        )
    source = unwrap(text)
    if not source.strip():
        raise ExpressionError("the expression is empty")
    parser = _Parser(_tokens(source))
    tree = parser.expr()
    rest = parser.peek()
    if rest.kind != "end":
        raise ExpressionError(f"unexpected {_shown(rest)} at position {rest.pos + 1}; join conditions with and/or")
    return Expression(source, tree)
