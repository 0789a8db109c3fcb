"""A class, with no accounts: a join code for the students, a secret for the teacher, and the view they share.

A teacher starts a class (`Classroom.start`) and gets two things:
- a **join code**, six characters from an alphabet without look-alikes (no 0/O, 1/I/L), for the projector: with
  it a page can follow the teacher and answer questions, nothing more;
- a **teacher secret**, 192 random bits (`secrets.token_urlsafe(24)`), in the teacher's link. Only the secret
  drives the class, and it reopens the class from any browser. The store keeps its SHA-256, never the secret; a
  secret is checked in constant time (`hmac.compare_digest`), and an address that fails too often is refused for
  a while.

What the class looks at is the teacher's view: an `ExplorerState`, the very value a share link holds, so following
is "apply this state". Each change raises the class's version; a follower's page compares versions, which costs
nothing, and reads the state only when it changed.

The class itself lives in a `ClassStore` (`explorer.class_store`), so it outlives a restart and is shared by every
app process. The limits (classes per server, students per class, an idle expiry, guesses) are `Limits`, some of
them the server's configuration (`Limits.of`).
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .class_store import ClassFull, ClassRow, ClassStore
from .config import DEFAULTS, Config
from .i18n import _
from .state import ExplorerError, ExplorerState

DEFAULT_STORE = Path(__file__).resolve().parent.parent / "var" / "classes.db"
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # 31 characters: no 0/O, 1/I/L
CODE_LENGTH = 6  # 31**6 ≈ 887 million codes
SECRET_BYTES = 24  # 192 bits


class ClassroomError(ExplorerError):
    """A class cannot be started, joined or driven; the message says why, in the user's language."""


@dataclass(frozen=True)
class Limits:
    """How much one server gives to classes, some configurable (`of`)."""

    classes: int = 20  # classes at once on one server
    students: int = 120  # pages in one class
    idle_s: float = 4 * 3600  # a class whose teacher does nothing for this long is forgotten
    connected_s: float = 30  # a student's page not heard from for this long is no longer counted as connected
    guesses: int = 10  # failed teacher secrets from one address …
    guess_window_s: float = 600  # … within this many seconds, and that address is refused until they age out

    @classmethod
    def of(cls, config: Config) -> Limits:
        """The limits the server's configuration sets (EXPLORER_CLASSES, EXPLORER_CLASS_STUDENTS and
        EXPLORER_CLASS_IDLE_S; the others fixed)."""
        return cls(classes=config.classes, students=config.class_students, idle_s=config.class_idle_s)


def new_code() -> str:
    """A random join code: `CODE_LENGTH` characters of `ALPHABET`."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(text: object) -> str | None:
    """A typed join code as stored (upper case, spaces and dashes dropped), or None if it cannot be one."""
    if not isinstance(text, str) or len(text) > 32:
        return None
    code = text.upper().replace(" ", "").replace("-", "")
    return code if len(code) == CODE_LENGTH and all(c in ALPHABET for c in code) else None


def shared(view: ExplorerState) -> ExplorerState:
    """What of the teacher's view the class is shown: everything but the teacher's own `OWN_FIELDS`."""
    return view.replace(**{name: getattr(ExplorerState, name) for name in OWN_FIELDS})


def secret_hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class Teacher:
    """What the teacher holds: the class's code and the secret that drives it."""

    code: str
    secret: str


@dataclass
class Seat:
    """A page's place in a class, kept with its explorer (never sent to the browser as it is): the teacher's, which
    holds the secret, or a student's, which holds the page's id and whether it follows the teacher."""

    code: str
    teacher: Teacher | None = None
    student: str = ""
    following: bool = True
    version: int = 0  # the class's version this page shows (a student's) or last set (the teacher's)
    shown: str = ""  # the view the teacher's page last showed the class (a share link's token)

    @property
    def teaching(self) -> bool:
        return self.teacher is not None


# What a student keeps of their own when they follow: the page's language, its layout and their Train tab.
OWN_FIELDS = ("language", "presentation", "training")


def join_link(base: str, code: str) -> str:
    """The link a student opens to join (`base`: the page's address, without its query)."""
    return f"{base.split('?', 1)[0]}?class={code}"


def qr_svg(link: str) -> str:
    """The QR code of `link`, as an SVG data URI to put in an `<img>` (segno, error correction M)."""
    import segno

    return segno.make(link, error="m").svg_data_uri(scale=8, border=2, dark="#1e1b4b", omitsize=True)


class Classroom:
    """Every class on this server, through one store: start, reopen, join, show, and the counts."""

    def __init__(self, store: ClassStore, limits: Limits | None = None, clock: Callable[[], float] = time.time):
        self.store = store
        self.limits = limits or Limits()
        self.clock = clock

    @classmethod
    def at(cls, path: str | os.PathLike | None = None, config: Config = DEFAULTS) -> Classroom:
        """The classes kept in the SQLite file `path` (made with its folder if needed), by default the
        configuration's (EXPLORER_CLASS_DB, else `var/classes.db` in the project's folder), with its limits."""
        from .class_store import SQLiteStore

        path = Path(path or config.class_db or DEFAULT_STORE)
        path.parent.mkdir(parents=True, exist_ok=True)
        return cls(SQLiteStore(path), Limits.of(config))

    @classmethod
    def temporary(cls) -> Classroom:
        """Classes in a file of their own in the temporary folder, deleted when the interpreter ends (a page built
        by a test or a benchmark that does not say where its classes live)."""
        folder = tempfile.mkdtemp(prefix="transformer-explorer-classes-")
        atexit.register(shutil.rmtree, folder, True)
        return cls.at(Path(folder) / "classes.db")

    # The teacher

    def start(self, first_view: ExplorerState | None = None) -> Teacher:
        """Start a class showing `first_view`: its code and the teacher's secret. Refused when the server is full."""
        now = self.clock()
        self.store.expire(now - self.limits.idle_s)
        secret = secrets.token_urlsafe(SECRET_BYTES)
        view = first_view.to_link() if first_view is not None else ""
        for _attempt in range(8):  # a code already in use is drawn again
            code = new_code()
            if self.store.find(code) is not None:
                continue
            row = ClassRow(code, secret_hash(secret), now, now, 1, view, "", 0, 0)
            try:
                self.store.open_class(row, self.limits.classes)
            except ClassFull:
                raise ClassroomError(
                    _("this server already runs {count} classes, its limit: try again when one has ended").format(
                        count=self.limits.classes
                    )
                ) from None
            return Teacher(code, secret)
        raise ClassroomError(_("no free class code was found: try again"))

    def teacher(self, code: object, secret: object, address: str) -> ClassRow:
        """The class that `secret` drives. Any mismatch is the same message; an address that guesses too often is
        refused before its secret is even checked."""
        now = self.clock()
        key = f"secret:{address}"
        if self.store.attempts(key, now - self.limits.guess_window_s) >= self.limits.guesses:
            raise ClassroomError(_("too many wrong teacher links from your address: wait ten minutes"))
        row = self._live(normal_code(code))
        given = secret_hash(secret) if isinstance(secret, str) and len(secret) <= 256 else b""
        if row is None or not hmac.compare_digest(row.secret_hash, given):
            self.store.failed_attempt(key, now, self.limits.guess_window_s)
            raise ClassroomError(_("this teacher link is not valid, or its class has ended"))
        return row

    def show(self, teacher: Teacher, view: ExplorerState, address: str = "") -> int:
        """The teacher shows `view` to the class: the new version."""
        row = self.teacher(teacher.code, teacher.secret, address)
        token = shared(view).to_link()
        return row.version if token == row.view else self.store.show(teacher.code, token, self.clock())

    def lead(self, row: ClassRow, view: ExplorerState, lesson: str, moment: int) -> int:
        """The teacher moves the class through a lesson, or loads or edits one (`row`: the class, its secret checked
        by `teacher`): the class shows `view`, at `moment` of `lesson` (its JSON, "" for none), and every page hears
        of it, even when the view is the one shown already (a moment's note is new). The new version."""
        return self.store.show(row.code, shared(view).to_link(), self.clock(), moment=moment, lesson=lesson)

    def end(self, code: object, secret: object, address: str = "") -> None:
        """The teacher ends the class: its students, questions and answers are forgotten."""
        row = self.teacher(code, secret, address)
        self.store.end(row.code)

    def publish(self, seat: Seat, view: ExplorerState) -> bool:
        """After an action of the teacher's page: the class sees `view` too, if it differs from what it last saw.
        The seat lives on the server with the page's explorer, so its secret was checked when it was made."""
        if not seat.teaching:
            return False
        token = shared(view).to_link()
        if token == seat.shown:
            return False
        seat.version, seat.shown = self.store.show(seat.code, token, self.clock()), token
        return True

    # The students

    def join(self, code: object, student: str) -> ClassRow:
        """A student's page joins the class of `code` (typed or from `?class=`): the class, or a clear message."""
        row = self._live(normal_code(code))
        if row is None:
            raise ClassroomError(_("there is no class with this code: check it with your teacher"))
        try:
            self.store.join(row.code, student, self.clock(), self.limits.students)
        except ClassFull:
            raise ClassroomError(
                _("this class is full ({count} students): ask your teacher").format(count=self.limits.students)
            ) from None
        return row

    def view(self, row: ClassRow, own: ExplorerState | str) -> ExplorerState | None:
        """The teacher's view as a student's page applies it, keeping the student's `OWN_FIELDS` (from `own`, their
        state, or just their language). None before the teacher has shown anything."""
        if not row.view:
            return None
        if isinstance(own, str):
            own = ExplorerState(language=own)
        return ExplorerState.from_link(row.view).replace(**{name: getattr(own, name) for name in OWN_FIELDS})

    def news(self, code: str, student: str, following: bool) -> ClassRow | None:
        """A student's page asks what the class looks at (and says whether it follows): the class, or None if it
        has ended. The page applies the view only when the version differs from the one it shows."""
        row = self._live(code)
        if row is not None:
            self.store.seen(code, student, following, self.clock())
        return row

    def counts(self, code: str) -> tuple[int, int]:
        """How many students are connected (heard from recently) and how many of them follow: counts, never names."""
        return self.store.counts(code, self.clock() - self.limits.connected_s)

    def _live(self, code: str | None) -> ClassRow | None:
        """The class of `code`, unless it does not exist or has been idle too long."""
        if code is None:
            return None
        row = self.store.find(code)
        if row is None or row.active < self.clock() - self.limits.idle_s:
            return None
        return row
