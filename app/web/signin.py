"""What this process remembers about signing in: the sessions it handed out, and who keeps
failing to sign in. Both are per process, like everything in it.

Sessions: a session cookie works only while its id is in ``SessionStore``. Signing out takes
it out, so the cookie is dead even if someone replays it. A restart signs everyone out (they
sign in again), which is the safe way round: a list of revoked cookies would be forgotten on
restart and let them work again.

Failed sign-ins (``SignInLimiter``): a wrong token on the login form, a wrong Bearer token or
Basic password. After ``FREE_FAILURES`` of them a client address is blocked, for a time that
doubles with each further failure, up to ``MAX_BLOCK_SECONDS``. While blocked, its
credentials are not even tried (a right guess must not be told from a wrong one). Its
failures are forgotten an hour after the last one, not on a success: a script signing in
from an address it shares with an attacker (a NAT, a proxy) must not wipe the count there.

Over all addresses together, more than ``GLOBAL_FAILURES`` failures in
``GLOBAL_WINDOW_SECONDS`` block every address until they stop, except addresses that have
signed in before. So an attacker spread over many addresses slows guessing to a crawl but
cannot lock out the real user, and no block outlives the failures that caused it by more
than ``MAX_BLOCK_SECONDS``. A browser already signed in is never limited: its cookie is not
a guess.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FREE_FAILURES = 5
FIRST_BLOCK_SECONDS = 2.0
MAX_BLOCK_SECONDS = 300.0
FORGET_FAILURES_SECONDS = 3600.0
GLOBAL_FAILURES = 60
GLOBAL_WINDOW_SECONDS = 60.0
MAX_ADDRESSES = 10_000
MAX_SESSIONS = 10_000
# An address that signed in is spared the overall limit for as long as a session lasts.
TRUSTED_SECONDS = 7 * 24 * 3600.0
MAX_TRUSTED = 1_000

Clock = Callable[[], float]


class SessionStore:
    """The ids of the sessions this process handed out and that have not ended: signed out,
    older than ``lifetime`` seconds, or pushed out by ``max_sessions`` newer ones. Used from
    the event loop and from the login route's worker threads alike, hence the lock."""

    def __init__(
        self, *, lifetime: float, max_sessions: int = MAX_SESSIONS, clock: Clock = time.time
    ) -> None:
        self._lifetime = lifetime
        self._max = max_sessions
        self._clock = clock
        self._issued: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def issue(self) -> str:
        session_id = secrets.token_hex(16)
        with self._lock:
            now = self._clock()
            self._forget_expired(now)
            while len(self._issued) >= self._max:
                self._issued.popitem(last=False)
            self._issued[session_id] = now
        return session_id

    def is_live(self, session_id: str) -> bool:
        with self._lock:
            issued = self._issued.get(session_id)
        return issued is not None and self._clock() - issued <= self._lifetime

    def end(self, session_id: str) -> None:
        with self._lock:
            self._issued.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._issued)

    def _forget_expired(self, now: float) -> None:
        while self._issued:
            oldest = next(iter(self._issued.values()))
            if now - oldest <= self._lifetime:
                return
            self._issued.popitem(last=False)


@dataclass
class _Failures:
    count: int
    last: float
    blocked_until: float


@dataclass(frozen=True)
class Attempt:
    """How a sign-in attempt went: ``ok``, or refused untried for ``retry_after`` seconds."""

    ok: bool
    retry_after: float | None = None


class SignInLimiter:
    """Failed sign-ins per client address and overall; see the module's docstring. Used
    from the event loop and from worker threads: ``attempt`` checks, tries and counts under
    one lock, so a burst of parallel guesses cannot all slip in before the first is counted.
    """

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self._clock = clock
        self._max_addresses = max_addresses
        self._failures: OrderedDict[str, _Failures] = OrderedDict()
        self._recent: deque[float] = deque(maxlen=GLOBAL_FAILURES)
        self._trusted: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.RLock()

    def attempt(self, address: str, verify: Callable[[], bool]) -> Attempt:
        """``verify()`` (a credential check) unless ``address`` must wait, counted."""
        with self._lock:
            wait = self.retry_after(address)
            if wait is not None:
                return Attempt(ok=False, retry_after=wait)
            ok = verify()
            if ok:
                self.succeeded(address)
            else:
                self.failed(address)
            return Attempt(ok=ok)

    def retry_after(self, address: str) -> float | None:
        """Seconds until ``address`` may try to sign in again; None when it may now."""
        with self._lock:
            now = self._clock()
            wait = max(self._own_wait(address, now), self._overall_wait(address, now))
        return wait if wait > 0 else None

    def failed(self, address: str) -> None:
        with self._lock:
            self._failed(address, self._clock())

    def _failed(self, address: str, now: float) -> None:
        self._recent.append(now)
        record = self._failures.pop(address, None)
        if record is None or now - record.last > FORGET_FAILURES_SECONDS:
            record = _Failures(count=0, last=now, blocked_until=now)
        record.count += 1
        record.last = now
        beyond = record.count - FREE_FAILURES
        if beyond >= 0:
            block = min(FIRST_BLOCK_SECONDS * 2 ** min(beyond, 32), MAX_BLOCK_SECONDS)
            record.blocked_until = now + block
        self._failures[address] = record  # newest last: the oldest are dropped first
        while len(self._failures) > self._max_addresses:
            self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._trusted.pop(address, None)
            self._trusted[address] = self._clock()
            while len(self._trusted) > MAX_TRUSTED:
                self._trusted.popitem(last=False)

    def remembered_addresses(self) -> int:
        return len(self._failures)

    def _own_wait(self, address: str, now: float) -> float:
        record = self._failures.get(address)
        return 0.0 if record is None else record.blocked_until - now

    def _overall_wait(self, address: str, now: float) -> float:
        if len(self._recent) < GLOBAL_FAILURES:
            return 0.0
        trusted_at = self._trusted.get(address)
        if trusted_at is not None and now - trusted_at <= TRUSTED_SECONDS:
            return 0.0
        return self._recent[0] + GLOBAL_WINDOW_SECONDS - now


@dataclass
class SignIns:
    """This process's sign-in state, shared by the access guard and the login routes."""

    sessions: SessionStore
    limiter: SignInLimiter


def client_address(scope: Mapping[str, Any]) -> str:
    """The client's address as the server saw it (behind a trusted proxy, the one the
    proxy forwarded); one name for clients that have none."""
    client = scope.get("client")
    if isinstance(client, list | tuple) and client and isinstance(client[0], str):
        return client[0]
    return "unknown"
