"""A SQL cell's text as Spark's lexer reads it: statements, variables, kinds, outcomes.

**Statements.** ``split_statements`` cuts a cell on ``;`` where Spark's own lexer
(``SqlBaseLexer.g4``) would see a ``SEMICOLON`` token: not inside ``'...'`` or ``"..."``
strings (a backslash escapes the next character), raw strings (``r'...'``, no escapes),
back-quoted names (```a``b```), ``--`` comments (to the end of the line; a backslash
right before the newline continues them, as Spark's lexer does) or ``/* ... */``
comments, which nest in Spark (SPARK-28880: ``/* a /* b */ ; c */`` is one comment). A
hint (``/*+ ... */``) is not a comment for Spark but holds no statement end either. A
SQL script (``BEGIN ... END``, on by default in Spark 4) is one statement with its
inner ``;``. Comments stay in the statements they are in, so Spark's error positions
match the text; statements that are only comments are dropped.

**Variables.** ``{name}`` outside strings and comments names a variable of the
notebook. A DataFrame stays ``{name}`` for PySpark's own formatter
(``spark.sql("SELECT * FROM {df}", df=df)``: a temporary view for that call); any other
value becomes the named parameter marker ``:name`` with the value in ``args``, so Spark
receives it as a bound literal, never as pasted text. Parameter markers go where a
literal may go (Spark's docs, "Parameter markers"); an object's name is written
``IDENTIFIER({t})`` (Spark's docs, "IDENTIFIER clause": ``SELECT * FROM
IDENTIFIER({t})`` with ``t = "my_view"``). ``{{`` and ``}}`` are literal braces, as in
``str.format`` (``${{x}}`` is Spark's own ``${x}`` variable substitution). Inside
strings and comments nothing is read: ``'{x}'`` and ``'{{'`` reach Spark as written.
``SET key = {v}``, ``RESET``, ``ADD`` and ``LIST`` take their text as it is (Spark
would set the value to ``:v``), so a variable there is refused. ``bind_variables``
returns the text for ``spark.sql(sql, args=args or None, **frames)``: with ``frames``
PySpark's formatter turns ``{{`` into ``{`` (so every literal brace is doubled),
without them nobody does (so none is). Spark's parameter names are case-sensitive and
may be any Python identifier (checked on Spark 4.3: ``:a`` and ``:A``, ``:é``,
``:select``).

**Kinds.** ``statement_kind`` is the first keyword; ``is_command`` says whether the
result is an outcome (``CREATE``, ``INSERT``, ``SET k = v``, ...) rather than a table
to read; ``outcome_line`` is that outcome in one line.
"""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum

from ..errors import SqlInputError


class _Kind(Enum):
    CODE = "code"
    STRING = "string"  # '...', "...", r'...': a literal (or, in ANSI mode, "..." a name)
    QUOTED_NAME = "quoted name"  # `...`
    LINE_COMMENT = "line comment"
    BLOCK_COMMENT = "block comment"
    HINT = "hint"  # /*+ ... */
    SEMICOLON = "semicolon"


_COMMENTS = (_Kind.LINE_COMMENT, _Kind.BLOCK_COMMENT, _Kind.HINT)


@dataclass(frozen=True)
class _Piece:
    kind: _Kind
    start: int
    end: int


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _string_end(text: str, start: int, escapes: bool) -> int:
    """The end of the quoted run opened at ``start`` (past its closing quote, or the
    text's end when it is not closed: Spark then reports the error)."""
    quote, i = text[start], start + 1
    while i < len(text):
        if escapes and text[i] == "\\":
            i += 2
        elif text[i] == quote:
            return i + 1
        else:
            i += 1
    return len(text)


def _quoted_name_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "`":
            if text.startswith("``", i):
                i += 2
                continue
            return i + 1
        i += 1
    return len(text)


def _line_comment_end(text: str, start: int) -> int:
    i = start + 2
    while i < len(text) and text[i] not in "\r\n":
        i += 2 if text.startswith("\\\n", i) else 1  # Spark: '\\\n' continues the comment
    return i


def _block_comment_end(text: str, start: int) -> int:
    """Past the ``*/`` that closes the comment at ``start``, nested ones included."""
    depth, i = 1, start + 2
    while i < len(text):
        if text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        elif text.startswith("/*", i) and not text.startswith("/*+", i):
            depth += 1
            i += 2
        else:
            i += 1
    return len(text)


def _pieces(text: str) -> Iterator[_Piece]:
    """``text`` cut into runs of code, strings, names, comments and semicolons."""
    i, code_start = 0, 0

    def code_until(end: int) -> Iterator[_Piece]:
        if end > code_start:
            yield _Piece(_Kind.CODE, code_start, end)

    while i < len(text):
        char, following = text[i], text[i + 1 : i + 2]
        at_word_start = i == 0 or not _is_word_char(text[i - 1])
        piece: _Piece | None = None
        if char in "'\"":
            piece = _Piece(_Kind.STRING, i, _string_end(text, i, escapes=True))
        elif char in "rR" and following in ("'", '"') and at_word_start:
            piece = _Piece(_Kind.STRING, i, _string_end(text, i + 1, escapes=False))
        elif char == "`":
            piece = _Piece(_Kind.QUOTED_NAME, i, _quoted_name_end(text, i))
        elif char == "-" and following == "-":
            piece = _Piece(_Kind.LINE_COMMENT, i, _line_comment_end(text, i))
        elif text.startswith("/*+", i):
            end = text.find("*/", i + 3)
            piece = _Piece(_Kind.HINT, i, len(text) if end < 0 else end + 2)
        elif char == "/" and following == "*":
            piece = _Piece(_Kind.BLOCK_COMMENT, i, _block_comment_end(text, i))
        elif char == ";":
            piece = _Piece(_Kind.SEMICOLON, i, i + 1)
        if piece is None:
            i += 1
            continue
        yield from code_until(i)
        yield piece
        i = code_start = piece.end
    yield from code_until(len(text))


_WORD = re.compile(r"\w+")
#: What ``END`` closes without a ``BEGIN`` or ``CASE`` of its own: ``END IF``, ...
_END_OF_STATEMENT_BLOCK = frozenset({"IF", "WHILE", "LOOP", "REPEAT", "FOR"})


class _ScriptDepth:
    """How deep a ``BEGIN ... END`` script is at each word (scripting's compound
    statements: ``BEGIN``/``CASE`` open, ``END`` closes, ``END IF`` and the like close a
    block that opened without either)."""

    def __init__(self) -> None:
        self.depth = 0
        self.pending_end = False

    def word(self, word: str) -> None:
        if self.pending_end:
            self.pending_end = False
            if word in _END_OF_STATEMENT_BLOCK:
                return
            self.depth -= 1
        if word in ("BEGIN", "CASE"):
            self.depth += 1
        elif word == "END":
            self.pending_end = True

    def inside(self) -> bool:
        if self.pending_end:  # END then ';': it closed its block
            self.pending_end = False
            self.depth -= 1
        return self.depth > 0


def _has_content(text: str, pieces: list[_Piece]) -> bool:
    return any(
        p.kind in (_Kind.STRING, _Kind.QUOTED_NAME)
        or (p.kind is _Kind.CODE and text[p.start : p.end].strip())
        for p in pieces
    )


def split_statements(text: str) -> list[str]:
    """The statements of a SQL cell, stripped, without the ``;`` between them; empty
    and comment-only ones left out."""
    return [statement for _, statement in _split(text)]


def statement_lines(text: str) -> list[int]:
    """The line (from 0) of ``text`` where each of ``split_statements(text)`` has its
    first code (a comment before it is not its start)."""
    return [text.count("\n", 0, start) for start, _ in _split(text)]


def _split(text: str) -> list[tuple[int, str]]:
    # (where its first code starts, the statement) for each statement of ``text``.
    statements: list[tuple[int, str]] = []
    current: list[_Piece] = []
    first_word: str | None = None
    script = _ScriptDepth()

    def close() -> None:
        nonlocal first_word, script
        if current and _has_content(text, current):
            code = next(p for p in current if _has_content(text, [p]))
            piece = text[code.start : code.end]
            start = code.start + len(piece) - len(piece.lstrip())
            statements.append((start, text[current[0].start : current[-1].end].strip()))
        current.clear()
        first_word, script = None, _ScriptDepth()

    for piece in _pieces(text):
        if piece.kind is _Kind.SEMICOLON and not (first_word == "BEGIN" and script.inside()):
            close()
            continue
        current.append(piece)
        if piece.kind is _Kind.CODE:
            for match in _WORD.finditer(text, piece.start, piece.end):
                word = match.group().upper()
                first_word = first_word or word
                if first_word == "BEGIN":
                    script.word(word)
    close()
    return statements


@dataclass(frozen=True)
class BoundStatement:
    """A statement ready for ``spark.sql(sql, args=args or None, **frames)``."""

    sql: str
    #: Named parameters: ``:name`` in ``sql``, bound by Spark as literals.
    args: dict[str, object]
    #: DataFrames: ``{key}`` in ``sql``, for PySpark's formatter.
    frames: dict[str, object]


#: ``SparkSession.sql``'s own parameters: a DataFrame cannot be passed under these names.
_SQL_CALL_NAMES = frozenset({"self", "sqlQuery", "args"})
#: Statements whose text Spark reads as it is, where a parameter marker stays text.
_RAW_TEXT_KINDS = frozenset({"SET", "RESET", "ADD", "LIST"})


@dataclass(frozen=True)
class _Literal:
    text: str


@dataclass(frozen=True)
class _Variable:
    name: str


def _shown(field: str) -> str:
    return "{" + field + "}"


def _variable_name(field: str) -> str:
    if not field.isidentifier() or keyword.iskeyword(field):
        raise SqlInputError(
            f"SQL variable {_shown(field)} is not a Python name: write {{name}} with a "
            "variable's name (attributes, indexes and formats are not read), or {{ and }} "
            "for literal braces."
        )
    return field


def _code_parts(code: str) -> Iterator[_Literal | _Variable]:
    """A run of code cut into literal text and ``{name}`` variables."""
    i, literal_start = 0, 0
    while i < len(code):
        char = code[i]
        if char not in "{}":
            i += 1
            continue
        if i > literal_start:
            yield _Literal(code[literal_start:i])
        if code.startswith(char * 2, i):
            yield _Literal(char)
            i += 2
        elif char == "}":
            raise SqlInputError("The SQL has a '}' without its '{': write }} for a literal brace.")
        else:
            close = code.find("}", i + 1)
            if close < 0:
                raise SqlInputError(
                    f"The SQL has a '{{' without its '}}' near {code[i : i + 20]!r}: write "
                    "{name} for a variable, {{ for a literal brace."
                )
            yield _Variable(_variable_name(code[i + 1 : close]))
            i = close + 1
        literal_start = i
    if literal_start < len(code):
        yield _Literal(code[literal_start:])


def _statement_parts(statement: str) -> list[_Literal | _Variable]:
    parts: list[_Literal | _Variable] = []
    for piece in _pieces(statement):
        text = statement[piece.start : piece.end]
        if piece.kind is _Kind.CODE:
            parts.extend(_code_parts(text))
        else:
            parts.append(_Literal(text))  # braces in strings and comments are text
    return parts


def _unknown_variable(name: str, namespace: Mapping[str, object]) -> SqlInputError:
    public = [key for key in namespace if isinstance(key, str) and not key.startswith("_")]
    close = difflib.get_close_matches(name, public, n=1)
    hint = f"did you mean {_shown(close[0])}?" if close else "write {{ and }} for literal braces"
    return SqlInputError(f"SQL variable {_shown(name)} is not defined in the notebook ({hint}).")


def _frame_key(name: str, taken: set[str]) -> str:
    if name not in _SQL_CALL_NAMES:
        return name
    key = f"{name}_frame"
    while key in taken:
        key += "_"
    return key


def bind_variables(
    statement: str,
    namespace: Mapping[str, object],
    is_dataframe: Callable[[object], bool],
) -> BoundStatement:
    """``statement`` with its ``{name}`` variables bound from ``namespace``: DataFrames
    (``is_dataframe``) as PySpark's formatter takes them, other values as named
    parameters. Raises ``SqlInputError`` (one line, nothing bound) for an unknown or
    malformed name, an unbalanced brace, or a variable where Spark reads plain text."""
    parts = _statement_parts(statement)
    names = list(dict.fromkeys(p.name for p in parts if isinstance(p, _Variable)))
    kind = statement_kind(statement)
    if names and kind in _RAW_TEXT_KINDS and not (kind == "SET" and _is_set_variable(statement)):
        raise SqlInputError(
            f"SQL variable {_shown(names[0])} cannot be bound in a {kind} statement: Spark "
            "reads its text as it is, not as a parameter (write the value itself)."
        )
    for name in names:
        if name not in namespace:
            raise _unknown_variable(name, namespace)
    taken = set(names)
    keys: dict[str, str] = {}
    for name in names:
        if is_dataframe(namespace[name]):
            keys[name] = _frame_key(name, taken)
            taken.add(keys[name])
    frames = {keys[name]: namespace[name] for name in keys}
    args = {name: namespace[name] for name in names if name not in keys}
    return BoundStatement(_render(parts, keys, doubled=bool(frames)), args, frames)


def _render(parts: list[_Literal | _Variable], frame_keys: dict[str, str], doubled: bool) -> str:
    out: list[str] = []
    after_marker = False  # a word character right after ":name" would lengthen the name
    for part in parts:
        if isinstance(part, _Literal):
            text = part.text.replace("{", "{{").replace("}", "}}") if doubled else part.text
            if after_marker and text and _is_word_char(text[0]):
                out.append(" ")
            out.append(text)
            after_marker = False
        elif part.name in frame_keys:
            out.append(_shown(frame_keys[part.name]))
            after_marker = False
        else:
            if out and out[-1].endswith(":"):
                out.append(" ")  # "x:{v}" must not become the cast "x::v"
            out.append(f":{part.name}")
            after_marker = True
    return "".join(out)


def _code_words(statement: str) -> Iterator[tuple[str, int]]:
    """The words of ``statement`` outside strings and comments, upper-cased, each with
    its depth in parentheses."""
    depth = 0
    for piece in _pieces(statement):
        if piece.kind is not _Kind.CODE:
            continue
        for match in re.finditer(r"\w+|[()]", statement[piece.start : piece.end]):
            token = match.group()
            if token == "(":
                depth += 1
            elif token == ")":
                depth = max(0, depth - 1)
            else:
                yield token.upper(), depth


def statement_kind(statement: str) -> str:
    """The statement's first keyword, upper-cased (``"SELECT"``, ``"CREATE"``); ``""``
    when it starts with something else (a string, a quoted name)."""
    for piece in _pieces(statement):
        if piece.kind in _COMMENTS:
            continue
        if piece.kind is not _Kind.CODE:
            return ""
        code = statement[piece.start : piece.end].lstrip(" \t\r\n\f\v(")
        if code:
            match = re.match(r"\w+", code)
            return match.group().upper() if match else ""
    return ""


#: First keywords whose result is an outcome, not a table to read.
_COMMAND_KINDS = frozenset(
    {
        "CREATE", "DROP", "ALTER", "INSERT", "MERGE", "UPDATE", "DELETE", "TRUNCATE",
        "USE", "CACHE", "UNCACHE", "REFRESH", "ADD", "LOAD", "MSCK", "REPAIR", "ANALYZE",
        "COMMENT", "RESET", "CLEAR", "DECLARE", "REPLACE",
    }
)  # fmt: skip
#: In ``WITH ... `` and ``FROM t ...`` statements, the words that say what runs.
_MAIN_VERBS = frozenset({"SELECT", "INSERT", "MERGE", "UPDATE", "DELETE", "VALUES", "TABLE"})


def _is_set_variable(statement: str) -> bool:
    words = [word for word, _ in _code_words(statement)]
    return len(words) > 1 and words[1] in ("VAR", "VARIABLE")


def is_command(statement: str) -> bool:
    """True when the statement's result is an outcome (DDL, DML, ``SET k = v``, ``USE``,
    ...) rather than a table to read (``SELECT``, ``SHOW``, ``DESCRIBE``, plain ``SET``)."""
    kind = statement_kind(statement)
    if kind == "SET":
        return _is_set_variable(statement) or any(
            "=" in statement[p.start : p.end] for p in _pieces(statement) if p.kind is _Kind.CODE
        )
    if kind in ("WITH", "FROM"):
        # WITH c AS (...) INSERT INTO t ... and FROM t INSERT ...: the verb outside the
        # parentheses says what runs.
        verbs = (w for w, depth in _code_words(statement) if depth == 0 and w in _MAIN_VERBS)
        return next(verbs, "SELECT") in _COMMAND_KINDS
    return kind in _COMMAND_KINDS


#: The words after which an outcome line names the object.
_OBJECT_WORDS = frozenset(
    {"VIEW", "TABLE", "DATABASE", "SCHEMA", "NAMESPACE", "FUNCTION", "INTO", "USE", "UPDATE"}
)
_NAME_PART = r"(?:`(?:[^`]|``)*`|\w+)"
_NAME = re.compile(rf"IDENTIFIER\s*\([^)]{{0,60}}\)|{_NAME_PART}(?:\s*\.\s*{_NAME_PART})*", re.I)
_BEFORE_NAME = re.compile(r"\s*(?:(?:IF\s+(?:NOT\s+)?EXISTS|TABLE)\s+)*", re.I)
_OUTCOME_HEAD_CHARS = 80


def _without_comments(statement: str) -> str:
    return "".join(
        " " if p.kind in _COMMENTS else statement[p.start : p.end] for p in _pieces(statement)
    )


def _outcome_head(statement: str) -> str:
    """``CREATE TEMPORARY VIEW v`` for ``CREATE TEMPORARY VIEW v AS SELECT ...``: the
    leading keywords and the object's name; else the statement's text."""
    text = " ".join(_without_comments(statement).split())
    words = list(re.finditer(r"\w+", text))[:8]  # the object word comes early, or never
    object_words = _OBJECT_WORDS | (
        {"FROM"} if words and words[0].group().upper() == "DELETE" else set()
    )
    for word in words:
        if word.group().upper() in object_words:
            before = _BEFORE_NAME.match(text, word.end())
            name = _NAME.match(text, before.end() if before else word.end())
            return text[: name.end()] if name else text
    return text


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def outcome_line(statement: str, seconds: float) -> str:
    """The one line a command ends with: ``CREATE TEMPORARY VIEW v: done in 0.3 s.``"""
    head = _cut(_outcome_head(statement), _OUTCOME_HEAD_CHARS)
    return f"{head}: done in {_duration(seconds)}."


def statement_before_cursor(text: str) -> str | None:
    """The code of the statement ``text`` (a cell up to the cursor) ends in: what follows
    its last statement-ending ``;``, with strings and comments blanked (so a word in
    them is never read as code). None when ``text`` ends inside a string, a quoted
    name or a comment (nothing to complete there)."""
    pieces = list(_pieces(text))
    last = pieces[-1] if pieces else None
    if (
        last is not None
        and last.end == len(text)
        and last.kind not in (_Kind.CODE, _Kind.SEMICOLON)
    ):
        body = text[last.start : last.end]
        closed = {
            _Kind.STRING: len(body) >= 2 and body[-1] == body.lstrip("rR")[0],
            _Kind.QUOTED_NAME: len(body) >= 2 and body.endswith("`"),
            _Kind.BLOCK_COMMENT: body.endswith("*/") and len(body) >= 4,
            _Kind.HINT: body.endswith("*/") and len(body) >= 5,
        }.get(last.kind, False)
        if not closed:
            return None
    start = max((p.end for p in pieces if p.kind is _Kind.SEMICOLON), default=0)
    kept = []
    for piece in pieces:
        if piece.end <= start:
            continue
        part = text[max(piece.start, start) : piece.end]
        kept.append(part if piece.kind in (_Kind.CODE, _Kind.QUOTED_NAME) else " " * len(part))
    return "".join(kept)
