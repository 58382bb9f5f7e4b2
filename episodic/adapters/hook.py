"""`episodic-hook`: the agent hook that does not stall the agent.

    episodic-hook claude-code --user alice     (Claude Code: hook JSON on stdin)
    episodic-hook jsonl PATH --user alice      (any growing JSONL transcript)

It imports nothing but the standard library and episodic/spool.py: it checks
its input, records the transcript in the spool (one small file) and returns.
The lines are captured by whoever holds the memory open: `episodic api`
(within a second), `episodic capture drain`, or the next consolidate run.
Exit codes: 0 ok, 1 bad input (one `error:` line on stderr). Not the CLI's
2: to Claude Code a hook's 2 is a blocking error (a Stop hook's keeps the
agent from finishing), any other code a notice the agent goes on past."""

from __future__ import annotations

import json
import os
import stat
import sys

from episodic.spool import enqueue, home_of

USAGE = "usage: episodic-hook claude-code [--user U] | episodic-hook jsonl PATH [--user U]"


def _fail(reason: str) -> int:
    sys.stderr.write(f"error: {reason}\n")
    return 1


def _user(args: list[str]) -> tuple[str, list[str]]:
    if "--user" in args:
        i = args.index("--user")
        if i + 1 >= len(args) or not args[i + 1].strip():
            raise ValueError("--user needs a value")
        return args[i + 1], args[:i] + args[i + 2 :]
    return "", args  # a transcript's own users (Claude Code: "default")


def _transcript(value: object) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError("no usable transcript path")
    path = os.path.abspath(os.path.expanduser(value))
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path}: not a regular file (a FIFO, device or directory)")
    return path


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        user, args = _user(args)
        if args[:1] == ["claude-code"] and len(args) == 1:
            try:
                hook = json.loads(sys.stdin.read() or "{}")
            except ValueError as e:
                return _fail(f"the hook input is not JSON: {e}")
            path = _transcript(hook.get("transcript_path") if isinstance(hook, dict) else None)
            fmt = "claude-code"
        elif args[:1] == ["jsonl"] and len(args) == 2:
            path, fmt = _transcript(args[1]), "jsonl"
        else:
            return _fail(USAGE)
        enqueue(home_of(), user, path, fmt)
    except ValueError as e:
        return _fail(str(e))
    except OSError as e:
        return _fail(f"cannot write the spool: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
