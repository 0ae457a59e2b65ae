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

A key can also be stored (`acp-bridge login`, the ACP `authenticate`/`logout` methods): one per endpoint
(its base URL) in `credentials.json` under the user's config directory (`$XDG_CONFIG_HOME/acp-bridge`, else
`~/.config/acp-bridge`, as the XDG Base Directory specification says), written whole and atomically with
mode 0600 in a 0700 directory. `KeySource` answers the key to use for an endpoint at each request: an
environment variable first (they keep working and win), else the stored key, re-read when the file
changed, so a login or logout in another process takes effect on the next request.

Must not: log or echo a secret's value; write anywhere but the entries being removed and the credentials
file; import anything but the standard library (the command line imports this at start-up).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

log = logging.getLogger(__name__)

# Where the model key is looked up, in this order (named in configuration and authentication errors).
API_KEY_ENV_VARS: Final = ("ACP_BRIDGE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")
# Every variable the bridge treats as its own secret: kept from tools, and from its own environment.
SECRET_ENV_VARS: Final = API_KEY_ENV_VARS

# Where a stored key came from, as error messages name it.
STORED_KEY_SOURCE: Final = "the key stored by `acp-bridge login`"
CREDENTIALS_FILE: Final = "credentials.json"

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


# --- the stored key --------------------------------------------------------------------------------


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/acp-bridge` (an absolute value only, as the XDG specification says), else
    `~/.config/acp-bridge`."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "acp-bridge"


def credentials_path() -> Path:
    return config_dir() / CREDENTIALS_FILE


def endpoint_id(base_url: str) -> str:
    """The key a stored credential is filed under: the base URL without trailing slashes, its scheme and
    host lower-cased (`https://API.deepseek.com/` and `https://api.deepseek.com` are one endpoint)."""
    url = base_url.strip().rstrip("/")
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}"


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("the credentials file %s is unreadable (%s); ignoring it", path, type(exc).__name__)
        return {}
    return data if isinstance(data, dict) else {}


def read_stored_key(base_url: str, path: Path | None = None) -> str | None:
    """The key stored for the endpoint at `base_url`, or None."""
    endpoints = _read_file(path or credentials_path()).get("endpoints")
    entry = endpoints.get(endpoint_id(base_url)) if isinstance(endpoints, dict) else None
    key = entry.get("apiKey") if isinstance(entry, dict) else None
    return key.strip() if isinstance(key, str) and key.strip() else None


def store_key(base_url: str, key: str, path: Path | None = None) -> Path:
    """File `key` under the endpoint at `base_url` (replacing its previous key) and return the file's path.
    Raises OSError when the file cannot be written."""
    target = path or credentials_path()
    data = _read_file(target)
    stored = data.get("endpoints")
    endpoints: dict[str, Any] = stored if isinstance(stored, dict) else {}
    stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    endpoints[endpoint_id(base_url)] = {"apiKey": key.strip(), "storedAt": stamp}
    _write_file(target, {"version": 1, "endpoints": endpoints})
    return target


def forget_key(base_url: str, path: Path | None = None) -> bool:
    """Remove the key stored for the endpoint at `base_url`; True if there was one. The file goes when it
    holds no key any more. Raises OSError when the file cannot be rewritten."""
    target = path or credentials_path()
    data = _read_file(target)
    endpoints = data.get("endpoints")
    if not isinstance(endpoints, dict) or endpoints.pop(endpoint_id(base_url), None) is None:
        return False
    if endpoints:
        _write_file(target, {"version": 1, "endpoints": endpoints})
    else:
        target.unlink(missing_ok=True)
    return True


def _write_file(path: Path, data: dict[str, Any]) -> None:
    """Write `data` to `path` whole (a temporary file renamed over it), mode 0600 whatever the umask, in a
    directory made 0700: a reader sees the old file or the new one, and nobody else can read either."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".credentials-", dir=path.parent)  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class KeySource:
    """The key for one endpoint, asked for at each request: an environment variable (they win), else the
    stored key. The file is re-read only when it was replaced or changed (inode, modification time, size).
    """

    def __init__(self, base_url: str, path: Path | None = None) -> None:
        self.base_url = base_url
        self._path = path
        self._seen: tuple[int, int, int] | None = None
        self._stored: str | None = None

    def current(self) -> tuple[str | None, str | None]:
        """(key, where it came from: an env var's name or `STORED_KEY_SOURCE`), or (None, None)."""
        key, source = api_key_from_environment()
        if key is not None:
            return key, source
        path = self._path or credentials_path()
        try:
            stat = path.stat()
            # The inode too: every write renames a new file into place.
            seen: tuple[int, int, int] | None = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen = None
        if seen != self._seen:
            self._seen = seen
            self._stored = read_stored_key(self.base_url, path) if seen is not None else None
        return (self._stored, STORED_KEY_SOURCE) if self._stored else (None, None)
