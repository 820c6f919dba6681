"""One writer at a time: an exclusive lock on a folder, safe against planted lock files.

Why: two processes writing one output folder or one progress file interleave their writes
and lose each other's work (two drills on one progress file lost the first one's answers).
:func:`exclusive_lock` makes the second writer stop at once, before it writes anything,
with a one-line :class:`LockError` naming the first one's pid.

How the lock file is opened, and why:

- it lives *inside* the folder it protects (``name`` is a bare file name), opened
  relative to that folder's descriptor, so it is never written outside the folder;
- ``O_NOFOLLOW``: a lock file that is a symbolic link (planted to point at another file,
  which would be overwritten with our pid) is refused, not followed;
- the opened file must be a regular file with one link: a hard link to another file, a
  FIFO or a device is refused without writing to it;
- the pid is written only *after* the lock is held, so a refused process changes nothing;
- the lock is an ``flock``, which the operating system drops when the holder exits,
  however it exits (kill -9 included): no stale lock, no lock file to clean up;
- after locking, the name must still point at the locked file: a holder may remove its
  lock file (and the folder it had made) before releasing it, and a process that opened
  the old file meanwhile tries again instead of holding an orphan.

:func:`held_above` tells whether a folder *containing* this one is held by another process
(a ``lab train`` into a run folder of a running sweep), probing existing lock files only.

Re-entrant within a process (a runner holding a folder may call code that takes the same
lock) and thread-safe. Where ``fcntl`` is missing (Windows) there is no lock.

numpy-free and torch-free: the drill and the engine's output folders share it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading

__all__ = ["LOCK_NAME", "LockError", "exclusive_lock", "is_held", "held_above"]

#: The lock file of an output folder (``grpolab.grpo.records.output_lock`` uses this name).
LOCK_NAME = ".grpolab.lock"

_HELD: dict[str, list] = {}  # lock file's real path -> [open descriptor, depth]
_GUARD = threading.RLock()


class LockError(ValueError):
    """The lock is held by another process (``pid``, if it wrote one), or its lock file is
    unsafe to use (a symlink, a hard link, a device). Printed as one line by the CLI."""

    def __init__(self, message: str, pid: int | None = None):
        super().__init__(message)
        self.pid = pid


def _key(folder: str, name: str) -> str:
    return os.path.join(os.path.realpath(folder), name)


def is_held(folder, name: str = LOCK_NAME) -> bool:
    """True if this process holds the lock ``name`` in ``folder``."""
    with _GUARD:
        return _key(os.fspath(folder), name) in _HELD


def _open_lock_file(folder: str, name: str) -> int:
    """Open (creating) ``folder/name`` without following a symlink; refuse anything but a
    plain, singly linked regular file. Returns the descriptor."""
    shown = os.path.join(folder, name)
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    dir_fd = None
    if os.open in os.supports_dir_fd:
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                         | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(name if dir_fd is not None else shown, flags, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(shown):
            raise LockError(f"{shown} is a symbolic link; grpolab does not follow links for its "
                            f"lock files (one could point outside {folder}); remove it and "
                            "rerun") from None
        if exc.errno == errno.EISDIR:
            raise LockError(f"{shown} is a folder, not a lock file; remove it and rerun") from None
        raise LockError(f"cannot create the lock file {shown}: {exc.strerror} (a writer needs "
                        f"a lock file inside {folder})") from None
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        what = "has other hard links" if stat.S_ISREG(st.st_mode) else "is not a regular file"
        raise LockError(f"{shown} {what}; grpolab will not write its pid into it (it could be "
                        "another file); remove it and rerun")
    return fd


def _still_named(fd: int, folder: str, name: str) -> bool:
    """True if ``folder/name`` is still the file open as ``fd`` (it was not unlinked or
    replaced between our open and our flock)."""
    try:
        st = os.lstat(os.path.join(folder, name))
    except OSError:
        return False
    here = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


def _holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def held_above(folder, name: str = LOCK_NAME) -> tuple[str, int | None] | None:
    """``(ancestor, pid)`` for the nearest folder above ``folder`` whose lock file ``name``
    another process holds, or None. Lock files are only probed (opened read-only without
    following links, a shared lock tried and dropped), never created; folders this
    process holds itself are skipped."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX machines have it
        return None
    here = os.path.dirname(os.path.abspath(os.fspath(folder)))
    while True:
        if not is_held(here, name):
            path = os.path.join(here, name)
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                fd = None
            if fd is not None:
                try:
                    if stat.S_ISREG(os.fstat(fd).st_mode):
                        try:
                            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                            fcntl.flock(fd, fcntl.LOCK_UN)
                        except OSError:
                            return here, _holder(fd)
                finally:
                    os.close(fd)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


@contextlib.contextmanager
def exclusive_lock(folder, name: str = LOCK_NAME, *, subject: str | None = None,
                   holder: str = "another grpolab run",
                   remedy: str = "wait for it to finish, or pass another output folder"):
    """Hold ``folder/name`` exclusively for the duration of the ``with`` block.

    ``folder`` must exist. A second process asking for the same lock gets at once
    ``LockError("{subject} is in use by {holder} (pid N); {remedy}")``; ``subject`` is
    ``folder`` unless given (e.g. ``"progress file X"``).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX machines have it
        yield
        return
    folder = os.fspath(folder)
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise ValueError(f"name must be a bare file name inside the folder, got {name!r}")
    key = _key(folder, name)
    with _GUARD:  # held while acquiring, so two threads of one process cannot both try
        entry = _HELD.get(key)
        if entry is not None:
            entry[1] += 1
        else:
            for _ in range(100):
                fd = _open_lock_file(folder, name)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    pid = _holder(fd)
                    os.close(fd)
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        raise
                    raise LockError(f"{folder if subject is None else subject} is in use by "
                                    f"{holder} (pid {pid if pid is not None else 'unknown'}); "
                                    f"{remedy}", pid) from None
                if _still_named(fd, folder, name):
                    break
                # the holder removed the lock file (with the folder it had made) just
                # before releasing it: ours is an orphan that nobody else would see
                os.close(fd)
            else:  # pragma: no cover - a lock file replaced 100 times in a row
                raise LockError(f"{os.path.join(folder, name)} keeps being replaced; rerun")
            try:  # the pid only names the holder: a full disk must not cost the lock
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            except OSError:
                pass
            _HELD[key] = [fd, 1]
    if entry is not None:
        try:
            yield
        finally:
            with _GUARD:
                entry[1] -= 1
        return
    try:
        yield
    finally:
        with _GUARD:
            _HELD.pop(key, None)
        os.close(fd)  # closing the descriptor releases the flock
