"""The bridge's secrets (the model API key), read once at start-up and kept out of every tool's reach.

`claim_secrets()` runs before any tool can: it moves each variable of `SECRET_ENV_VARS` from the
environment into this module, and `api_key_from_environment()` finds the key there afterwards (the LSP
face loads the editor's chosen model later, at `initialize`). Removing a variable from `os.environ`
(unsetenv) is what child processes inherit, so `bash`, ripgrep and any other tool start without it.

But `/proc/<pid>/environ` shows the environment block the kernel copied onto the stack at `execve`, and
unsetenv only drops the pointer to it: a command could still read the key from `/proc/$PPID/environ`.
So on Linux the entry is also overwritten in place, through `/proc/self/mem` at the block's address
(`env_start` in `/proc/self/stat`, proc(5)): the same memory that file reads, so what it shows afterwards
is what any process sees; the write is checked against what is read back first, so nothing else is ever
touched (about 0.1 ms). The alternatives, measured: re-executing the interpreter with the key passed over
a pipe pays a second interpreter start-up and command-line import (about 30 ms on a 2-core machine, a
fifth of the ~155 ms spawn → `initialize`, where the budget allows 5%); running each command under an
intermediate process costs a process per command and only moves the problem one `$PPID` further up (the
bridge's block stays readable by its pid).
Elsewhere (no /proc) only the environment proper is cleaned, which is all a child process inherits.

Must not: log or echo a secret's value; write anywhere but the entries being removed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Final

log = logging.getLogger(__name__)

# Where the model key is looked up, in this order (named in configuration and authentication errors).
API_KEY_ENV_VARS: Final = ("ACP_BRIDGE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")
# Every variable the bridge treats as its own secret: kept from tools, and from its own environment.
SECRET_ENV_VARS: Final = API_KEY_ENV_VARS

_claimed: dict[str, str] = {}


def claim_secrets(names: Iterable[str] = SECRET_ENV_VARS) -> None:
    """Take `names` out of this process's environment (and its initial environment block), keeping their
    values for `api_key_from_environment`. Call it once, at start-up, before any tool runs."""
    taken = []
    for name in names:
        value = os.environ.pop(name, None)
        if value is not None:
            _claimed[name] = value
            taken.append(name)
    if taken:
        _blank_initial_entries(taken)


def api_key_from_environment() -> tuple[str | None, str | None]:
    """The first non-empty key of `API_KEY_ENV_VARS` and the variable it came from, from the environment
    or (once claimed) from what `claim_secrets` kept."""
    for name in API_KEY_ENV_VARS:
        value = (os.environ.get(name) or _claimed.get(name) or "").strip()
        if value:
            return value, name
    return None, None


def _blank_initial_entries(names: list[str]) -> None:
    """Zero the `NAME=value` entries of `names` in the environment block `execve` left on our stack."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        # proc(5): env_start and env_end are fields 50 and 51; `fields` starts at field 3 (state).
        start, end = int(fields[47]), int(fields[48])
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            wanted = tuple(name.encode() + b"=" for name in names)
            offset = 0
            for entry in block.split(b"\0"):
                if entry.startswith(wanted):
                    mem.seek(start + offset)
                    if mem.read(len(entry)) == entry:  # still the block we parsed
                        mem.seek(start + offset)
                        mem.write(b"\0" * len(entry))
                offset += len(entry) + 1
    except (OSError, IndexError, ValueError) as exc:
        # No /proc (not Linux), or a kernel that refuses: the environment proper is clean anyway.
        log.debug("could not blank the initial environment block: %s", exc)
