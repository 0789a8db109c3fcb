"""Where a class lives between requests: the store behind `explorer.classroom`.

A class is shared by many pages and must outlive a restart, so it is not a page's state but rows in a store. The
interface is `ClassStore`, small on purpose: a deployment across several machines replaces it with one on
PostgreSQL or Redis (docs/classroom.md says how) and nothing else changes. `SQLiteStore` is the embedded default:
one file, in WAL mode, so that every app process on one machine (the nginx set-up of docs/deployment.md) shares
the same classes, whichever process a page reaches.

What is kept, per class (its join code):
- the hash of the teacher's secret (never the secret), when it began and when the teacher last acted;
- what the class is looking at: the teacher's view (a share link's token), a version that goes up on every change
  a page should notice, the lesson and where it stands;
- the students: an id per page (not a name), when each last asked, and whether it follows the teacher;
- the questions asked, and one answer per student per question.

Every method is one transaction. Times are seconds (`time.time()`), given by the caller, so tests choose them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class ClassRow:
    """One class as stored."""

    code: str
    secret_hash: bytes
    began: float
    active: float  # when the teacher last changed something
    version: int
    view: str  # the teacher's view: a share link's token ("" before the first)
    lesson: str  # the lesson's JSON ("" for none)
    moment: int  # where the lesson stands (0-based)
    question: int  # the question now asked (0 for none)


@dataclass(frozen=True)
class QuestionRow:
    """One question asked of a class."""

    number: int
    body: str  # the question's JSON: its kind, choices and the model's answer
    revealed: bool


class ClassFull(Exception):
    """A limit of the store is reached: classes on the server, or students in a class."""


class ClassStore(Protocol):
    """What `explorer.classroom` needs of a store. Every method is atomic across processes."""

    def open_class(self, row: ClassRow, max_classes: int) -> None: ...
    def find(self, code: str) -> ClassRow | None: ...
    def count_classes(self) -> int: ...
    def show(
        self, code: str, view: str, now: float, *, moment: int | None = None, lesson: str | None = None
    ) -> int: ...
    def join(self, code: str, student: str, now: float, max_students: int) -> None: ...
    def seen(self, code: str, student: str, following: bool, now: float) -> None: ...
    def counts(self, code: str, since: float) -> tuple[int, int]: ...
    def touch(self, code: str, students: list[str], now: float) -> None: ...
    def has_student(self, code: str, student: str) -> bool: ...
    def versions(self, codes: list[str]) -> dict[str, int]: ...
    def ask(self, code: str, body: str, now: float) -> int: ...
    def question(self, code: str, number: int) -> QuestionRow | None: ...
    def answer(self, code: str, number: int, student: str, choice: str, now: float) -> bool: ...
    def tally(self, code: str, number: int) -> dict[str, int]: ...
    def choice_of(self, code: str, number: int, student: str) -> str | None: ...
    def reveal(self, code: str, number: int, now: float) -> int: ...
    def failed_attempt(self, key: str, now: float, window: float) -> int: ...
    def attempts(self, key: str, since: float) -> int: ...
    def expire(self, before: float) -> list[str]: ...
    def end(self, code: str) -> None: ...


SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY,
    secret_hash BLOB NOT NULL UNIQUE,
    began REAL NOT NULL,
    active REAL NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    view TEXT NOT NULL DEFAULT '',
    lesson TEXT NOT NULL DEFAULT '',
    moment INTEGER NOT NULL DEFAULT 0,
    question INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS students (
    code TEXT NOT NULL REFERENCES classes(code) ON DELETE CASCADE,
    student TEXT NOT NULL,
    seen REAL NOT NULL,
    following INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (code, student)
);
CREATE TABLE IF NOT EXISTS questions (
    code TEXT NOT NULL REFERENCES classes(code) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    body TEXT NOT NULL,
    asked REAL NOT NULL,
    revealed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (code, number)
);
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL,
    number INTEGER NOT NULL,
    student TEXT NOT NULL,
    choice TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (code, number, student),
    FOREIGN KEY (code, number) REFERENCES questions(code, number) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS attempts (
    key TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_by_key ON attempts(key, at);
"""


class SQLiteStore:
    """`ClassStore` in one SQLite file, in WAL mode: every process and thread that opens the same path shares it.

    One connection per thread; a write takes the database's write lock at its start (BEGIN IMMEDIATE), so two
    processes never interleave the read and the write of one method."""

    def __init__(self, path: str | Path, timeout: float = 5.0):
        self.path = str(path)
        self.timeout = timeout
        self._local = threading.local()
        self._connection().executescript(SCHEMA)  # CREATE … IF NOT EXISTS: every process may run it

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL's safe setting: a crash loses at most the last moment
            db.execute("PRAGMA foreign_keys=ON")
            self._local.db = db
        return db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _read(self, sql: str, *args) -> list[tuple]:
        return self._connection().execute(sql, args).fetchall()

    def close(self) -> None:
        """Close this thread's connection (the others close with their threads)."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # Classes

    def open_class(self, row: ClassRow, max_classes: int) -> None:
        """Store a new class, unless the server already holds `max_classes` (ClassFull)."""
        with self._write() as db:
            (count,) = db.execute("SELECT count(*) FROM classes").fetchone()
            if count >= max_classes:
                raise ClassFull("classes")
            db.execute(
                "INSERT INTO classes (code, secret_hash, began, active, version, view, lesson, moment, question) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row.code, row.secret_hash, row.began, row.active, row.version, row.view, row.lesson, row.moment, 0),
            )

    def find(self, code: str) -> ClassRow | None:
        rows = self._read(f"SELECT {_CLASS_COLUMNS} FROM classes WHERE code = ?", code)
        return ClassRow(*rows[0]) if rows else None

    def count_classes(self) -> int:
        return self._read("SELECT count(*) FROM classes")[0][0]

    def show(self, code: str, view: str, now: float, *, moment: int | None = None, lesson: str | None = None) -> int:
        """The teacher shows `view` (and moves the lesson to `moment`, or loads another `lesson`): the new version."""
        with self._write() as db:
            db.execute(
                "UPDATE classes SET view = ?, active = ?, version = version + 1, moment = coalesce(?, moment), "
                "lesson = coalesce(?, lesson) WHERE code = ?",
                (view, now, moment, lesson, code),
            )
            return _version(db, code)

    # Students

    def join(self, code: str, student: str, now: float, max_students: int) -> None:
        """Add a student to a class (again: only seen), unless it already has `max_students` (ClassFull)."""
        with self._write() as db:
            if db.execute("SELECT 1 FROM students WHERE code = ? AND student = ?", (code, student)).fetchone():
                db.execute("UPDATE students SET seen = ? WHERE code = ? AND student = ?", (now, code, student))
                return
            (count,) = db.execute("SELECT count(*) FROM students WHERE code = ?", (code,)).fetchone()
            if count >= max_students:
                raise ClassFull("students")
            db.execute(
                "INSERT INTO students (code, student, seen, following) VALUES (?, ?, ?, 1)", (code, student, now)
            )

    def seen(self, code: str, student: str, following: bool, now: float) -> None:
        """A student's page asked for news: when, and whether it follows the teacher or explores on its own."""
        with self._write() as db:
            db.execute(
                "UPDATE students SET seen = ?, following = ? WHERE code = ? AND student = ?",
                (now, int(following), code, student),
            )

    def touch(self, code: str, students: list[str], now: float) -> None:
        """The pages of `students` are still connected (their streams are open): one write for all of them."""
        with self._write() as db:
            db.executemany(
                "UPDATE students SET seen = ? WHERE code = ? AND student = ?", [(now, code, s) for s in students]
            )

    def has_student(self, code: str, student: str) -> bool:
        return bool(self._read("SELECT 1 FROM students WHERE code = ? AND student = ?", code, student))

    def versions(self, codes: list[str]) -> dict[str, int]:
        """The version of each of `codes` that still exists: one read, however many classes a process serves."""
        if not codes:
            return {}
        marks = ",".join("?" * len(codes))
        return dict(self._read(f"SELECT code, version FROM classes WHERE code IN ({marks})", *codes))

    def counts(self, code: str, since: float) -> tuple[int, int]:
        """How many students were seen since `since`, and how many of them follow the teacher."""
        connected, following = self._read(
            "SELECT count(*), coalesce(sum(following), 0) FROM students WHERE code = ? AND seen >= ?", code, since
        )[0]
        return connected, following

    # Questions and answers

    def ask(self, code: str, body: str, now: float) -> int:
        """Ask the class a new question: its number (1, 2, …). It becomes the class's question; the version goes up."""
        with self._write() as db:
            (last,) = db.execute("SELECT coalesce(max(number), 0) FROM questions WHERE code = ?", (code,)).fetchone()
            number = last + 1
            db.execute(
                "INSERT INTO questions (code, number, body, asked) VALUES (?, ?, ?, ?)", (code, number, body, now)
            )
            db.execute(
                "UPDATE classes SET question = ?, active = ?, version = version + 1 WHERE code = ?", (number, now, code)
            )
            return number

    def question(self, code: str, number: int) -> QuestionRow | None:
        rows = self._read("SELECT number, body, revealed FROM questions WHERE code = ? AND number = ?", code, number)
        return QuestionRow(rows[0][0], rows[0][1], bool(rows[0][2])) if rows else None

    def answer(self, code: str, number: int, student: str, choice: str, now: float) -> bool:
        """A student's answer, replacing their earlier one; False once the question is revealed (or unknown)."""
        with self._write() as db:
            open_ = db.execute(
                "SELECT 1 FROM questions WHERE code = ? AND number = ? AND revealed = 0", (code, number)
            ).fetchone()
            if not open_:
                return False
            db.execute(
                "INSERT INTO answers (code, number, student, choice, at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (code, number, student) DO UPDATE SET choice = excluded.choice, at = excluded.at",
                (code, number, student, choice, now),
            )
            return True

    def tally(self, code: str, number: int) -> dict[str, int]:
        """How many students chose each answer (counts only: who chose what never leaves the store)."""
        rows = self._read(
            "SELECT choice, count(*) FROM answers WHERE code = ? AND number = ? GROUP BY choice", code, number
        )
        return dict(rows)

    def choice_of(self, code: str, number: int, student: str) -> str | None:
        """A student's own answer to a question (shown on their page only), or None."""
        rows = self._read(
            "SELECT choice FROM answers WHERE code = ? AND number = ? AND student = ?", code, number, student
        )
        return rows[0][0] if rows else None

    def reveal(self, code: str, number: int, now: float) -> int:
        """Close a question to answers and show the model's answer: the new version."""
        with self._write() as db:
            db.execute("UPDATE questions SET revealed = 1 WHERE code = ? AND number = ?", (code, number))
            db.execute("UPDATE classes SET active = ?, version = version + 1 WHERE code = ?", (now, code))
            return _version(db, code)

    # Guessing and expiry

    def failed_attempt(self, key: str, now: float, window: float) -> int:
        """Record a failed attempt at a teacher's secret from `key` (an address): how many in the last `window` s."""
        with self._write() as db:
            db.execute("DELETE FROM attempts WHERE at < ?", (now - window,))
            db.execute("INSERT INTO attempts (key, at) VALUES (?, ?)", (key, now))
            return db.execute("SELECT count(*) FROM attempts WHERE key = ?", (key,)).fetchone()[0]

    def attempts(self, key: str, since: float) -> int:
        """How many failed attempts `key` made since `since`."""
        return self._read("SELECT count(*) FROM attempts WHERE key = ? AND at >= ?", key, since)[0][0]

    def expire(self, before: float) -> list[str]:
        """Forget the classes whose teacher has done nothing since `before`, with their students and answers."""
        with self._write() as db:
            codes = [code for (code,) in db.execute("SELECT code FROM classes WHERE active < ?", (before,))]
            db.executemany("DELETE FROM classes WHERE code = ?", [(code,) for code in codes])
            return codes

    def end(self, code: str) -> None:
        """Forget one class, with its students and answers."""
        with self._write() as db:
            db.execute("DELETE FROM classes WHERE code = ?", (code,))


_CLASS_COLUMNS = "code, secret_hash, began, active, version, view, lesson, moment, question"


def _version(db: sqlite3.Connection, code: str) -> int:
    row = db.execute("SELECT version FROM classes WHERE code = ?", (code,)).fetchone()
    return row[0] if row else 0
