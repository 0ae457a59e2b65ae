"""What an "always" answer for a shell command covers: an argv prefix, or only the exact command text.

`command_prefix(command, arg_ok)` returns the argv prefix a rule made from `command` covers (`npm test`,
`git status`, `python3 app.py`), or None when only the exact command may be covered. A prefix rule covers
a later command exactly when that command gets the same prefix from this function, so a rule never covers
a command more dangerous than its label says: whatever makes a command exact-only here also keeps it out
of every prefix rule. Exact-only:

- anything the shell would interpret beyond plain words: `&&`, `||`, `;`, `|`, `&`, redirections,
  `$` (variables, `$(…)`, `$'…'`), backticks, braces, newlines, leading `NAME=value` assignments, quoting
  `shlex` cannot split, and unquoted wildcards (`*`, `?`, `[`: the shell replaces them with file names,
  and a file can be named like an option, `--output=x`);
- programs that run other programs or destroy or overwrite data, whatever their arguments (`EXACT_ONLY`:
  `find`, `xargs`, `awk`, `sed`, `env`, `sudo`, `timeout`, `nohup`, `rm`, `mv`, `cp`, `dd`, `chmod`, `curl`…);
- an interpreter given inline code or options (`python -c`, `node -e`, `perl -e`, `bash -c`), or alone;
- a tool with sub-commands given alone (`git`, `make`), with options before its sub-command (`git -C x`,
  `git --no-pager log`, `cargo +nightly`), or with a sub-command that installs, configures, deletes or
  runs arbitrary code (`npm install`, `npm exec`, `git config`, `git clean`, `cargo install`, `go generate`;
  `git`, `docker`, `kubectl`, `pip`, `uv`, `rustup`, `brew` and `pre-commit` allow only a listed set of
  read-mostly ones);
- a dangerous option anywhere after the program (`git log --output=…`, `git -c`/`--config`,
  `git diff --ext-diff`, `rg --pre`, `fd --exec`, `sort --compress-program`, `npm test --script-shell=…`,
  `make -f`, `go test -toolexec`, `cargo --config`), including any abbreviation a long-option parser
  would accept (`--out`);
- an argument `arg_ok` refuses: the session refuses paths outside the workspace (absolute, `~`, `..`, or
  through a symlink) and paths whose change makes later commands run code (`.git/hooks/x`).

The lists are the policy: extend them when a tool is found to run code or destroy data through an option.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

# Shell syntax that makes the command more than one plain program invocation, or lets the shell rewrite
# its words (expansions): such a command can only be approved as the exact text.
_SHELL_SYNTAX = ("&", "|", ";", "`", "$", ">", "<", "\n", "\r", "{", "}", "(", ")")
_GLOB_CHARS = frozenset("*?[")
# Quoted or backslash-escaped text: the shell expands no wildcard in it.
_QUOTED = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|\\.""")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Programs whose every use may run another program or destroy/overwrite data.
EXACT_ONLY = _words(
    # run other programs (or code given as an argument)
    """find xargs parallel awk gawk mawk nawk busybox sed gsed env sudo doas su pkexec runuser chroot
    unshare nsenter nice ionice renice taskset chrt timeout nohup setsid stdbuf time watch flock script
    expect strace ltrace gdb lldb valgrind exec eval command builtin source . trap ssh at batch crontab
    systemd-run systemctl service launchctl tmux screen xdg-open open osascript npx bunx pnpx uvx pipx
    entr watchexec nodemon nc ncat netcat socat sqlite3 psql mysql vim vi nvim view ex ed emacs
    docker-compose"""
    # destroy, overwrite or move data (or processes)
    """ rm rmdir unlink shred truncate dd mv cp ln install chmod chown chgrp chattr setfacl tee rsync scp
    sftp tar zip unzip gzip gunzip bzip2 xz zstd split csplit uniq patch mkfs mount umount kill pkill
    killall curl wget"""
)

_INTERPRETERS = _words(
    "node nodejs ruby perl bash sh zsh dash ksh fish php lua luajit rscript tclsh julia java pwsh"
)
_PYTHON = re.compile(r"(?:python|pypy)[0-9.]*")


@dataclass(frozen=True, slots=True)
class Program:
    """How one program's command line is judged.

    `subcommand`: the first argument names what runs (`git status`, `npm test`, `make test`) and joins the
    prefix; `prefix_subcommands`, when set, are the only ones that may (the rest: exact);
    `exact_subcommands` never may. `run_verbs`: after these the script name joins the prefix too
    (`npm run build`). `long_options`: dangerous `--name[=value]` options (abbreviations count: GNU
    getopt_long and git accept any unambiguous prefix); `short_options`: dangerous one-letter options,
    alone or bundled (`-fdx`); `single_dash_long`: `-name` is a long option spelled in full (go, gcc),
    and a short option is then only its first letter (`-B/dir`). `one_positional`: a second positional
    argument is another target (`make test install`)."""

    subcommand: bool = False
    prefix_subcommands: frozenset[str] | None = None
    exact_subcommands: frozenset[str] = frozenset()
    run_verbs: frozenset[str] = frozenset()
    long_options: frozenset[str] = frozenset()
    short_options: str = ""
    single_dash_long: bool = False
    one_positional: bool = False


_PLAIN = Program()

_NODE_PACKAGE_MANAGER = Program(
    subcommand=True,
    # install (runs dependencies' scripts), run packages, configure, publish, delete, change versions
    exact_subcommands=_words(
        """install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install ic
        install-clean isntall-clean install-test it install-ci-test cit exec x dlx create init innit config
        c set get publish unpublish uninstall remove rm r un unlink link ln update up upgrade udpate rebuild
        rb explore edit patch patch-commit import prune dedupe ddp audit version verison pkg pm cache login
        logout adduser add-user token owner access team deprecate dist-tag hook org profile shrinkwrap
        set-script env plugin workspace workspaces recursive store self-update"""
    ),
    run_verbs=_words("run run-script rum urn"),
    long_options=_words("script-shell prefix dir cwd node-options userconfig globalconfig registry"),
    short_options="C",
)

_PYTHON_PROJECT = Program(
    subcommand=True,
    exact_subcommands=_words(
        "add remove install update sync lock config self publish source cache init new env shell python "
        "plugin tool pip"
    ),
    run_verbs=_words("run"),
)

_GIT = Program(
    subcommand=True,
    # Read-mostly sub-commands, plus add/commit/fetch/pull; the rest (config, clean, reset, checkout,
    # restore, rm, stash, branch, push, rebase, submodule, bisect, worktree, aliases…) are exact-only.
    prefix_subcommands=_words(
        """status log show diff blame annotate describe rev-parse rev-list ls-files ls-tree shortlog grep
        fetch pull add commit merge-base cat-file show-ref show-branch whatchanged count-objects version
        help check-ignore for-each-ref name-rev cherry range-diff"""
    ),
    long_options=_words(
        """config config-env output output-directory ext-diff textconv open-files-in-pager upload-pack
        receive-pack exec exec-path git-dir work-tree namespace template separate-git-dir"""
    ),
    short_options="cO",  # -c name=value, grep -O<pager>
)

_CONTAINERS = Program(
    subcommand=True,
    prefix_subcommands=_words(
        "ps images logs inspect version info stats top port diff history events search"
    ),
)

_COMPILER = Program(single_dash_long=True, long_options=_words("wrapper fplugin specs"), short_options="B")

PROGRAMS: dict[str, Program] = {
    "git": _GIT,
    **dict.fromkeys(("npm", "pnpm", "yarn", "bun"), _NODE_PACKAGE_MANAGER),
    **dict.fromkeys(("poetry", "pdm", "hatch", "pipenv", "rye"), _PYTHON_PROJECT),
    **dict.fromkeys(("docker", "podman"), _CONTAINERS),
    **dict.fromkeys(("gcc", "g++", "cc", "c++", "clang", "clang++"), _COMPILER),
    "cargo": Program(
        subcommand=True,
        exact_subcommands=_words(
            "install uninstall publish login logout owner yank add remove rm update new init vendor"
        ),
        long_options=_words("config manifest-path"),
        short_options="Z",
    ),
    "go": Program(
        subcommand=True,
        exact_subcommands=_words("install get env generate tool clean work"),
        run_verbs=_words("run"),
        long_options=_words("toolexec exec overlay"),
        single_dash_long=True,
    ),
    **dict.fromkeys(
        ("make", "gmake"),
        Program(
            subcommand=True,
            long_options=_words("file makefile directory eval include-dir"),
            short_options="fCEI",
            one_positional=True,
        ),
    ),
    "uv": Program(
        subcommand=True,
        prefix_subcommands=_words("run tree lock build"),
        run_verbs=_words("run"),
        long_options=_words(
            """with with-editable with-requirements index default-index index-url extra-index-url
            find-links config-file directory project"""
        ),
    ),
    **dict.fromkeys(
        ("pip", "pip3"),
        Program(subcommand=True, prefix_subcommands=_words("list show freeze check help inspect index")),
    ),
    "deno": Program(
        subcommand=True,
        exact_subcommands=_words("install uninstall eval repl upgrade jupyter add remove"),
        run_verbs=_words("run task"),
        long_options=_words("allow-all allow-run allow-write allow-ffi allow-sys allow-scripts"),
        short_options="A",
    ),
    "kubectl": Program(
        subcommand=True,
        prefix_subcommands=_words(
            "get describe logs version explain top api-resources api-versions cluster-info"
        ),
        long_options=_words("kubeconfig"),
    ),
    "dotnet": Program(
        subcommand=True, exact_subcommands=_words("tool add remove new nuget workload dev-certs sdk")
    ),
    **dict.fromkeys(("mvn", "mvnw"), Program(subcommand=True)),
    **dict.fromkeys(
        ("gradle", "gradlew"),
        Program(subcommand=True, long_options=_words("init-script"), short_options="I"),
    ),
    "rustup": Program(subcommand=True, prefix_subcommands=_words("show which")),
    "brew": Program(
        subcommand=True,
        prefix_subcommands=_words("list ls info search outdated deps doctor config leaves desc"),
    ),
    "pre-commit": Program(subcommand=True, prefix_subcommands=_words("run")),
    "rg": Program(long_options=_words("pre")),
    **dict.fromkeys(("fd", "fdfind"), Program(long_options=_words("exec exec-batch"), short_options="xX")),
    "sort": Program(long_options=_words("compress-program output"), short_options="o"),
    "man": Program(long_options=_words("pager html preprocessor"), short_options="PHp"),
}


def command_prefix(command: str, arg_ok: Callable[[str], bool] | None = None) -> tuple[str, ...] | None:
    """The argv prefix an "always" answer for `command` covers, or None when only the exact command may be
    covered (see the module docstring). `arg_ok(value)`: whether an argument (or an option's value) may
    appear in a command a prefix rule covers; the session passes its workspace test."""
    plain = _plain_argv(command)
    if plain is None or _expands_wildcards(command):
        return None
    argv, name = plain
    if name in EXACT_ONLY:
        return None
    if _is_interpreter(name):
        if len(argv) < 2:
            return None  # the bare interpreter reads its program from somewhere else
        if argv[1] == "-m" and _PYTHON.fullmatch(name):
            # `python -m pip install x` is judged as `pip install x`
            if len(argv) < 3 or argv[2].startswith("-") or argv[2] in EXACT_ONLY:
                return None
            program = PROGRAMS.get(argv[2], _PLAIN)
            length = _prefix_length(program, argv, 2)
        elif argv[1].startswith("-"):
            return None  # inline code (-c, -e) or interpreter options: no safe generalisation
        else:
            length, program = 2, _PLAIN  # the script: its own arguments are its business
    else:
        program = PROGRAMS.get(name, _PLAIN)
        length = _prefix_length(program, argv, 0)
    if length is None or not _arguments_ok(program, argv[1:], arg_ok):
        return None
    return tuple(argv[:length])


def reject_prefix(command: str) -> tuple[str, ...] | None:
    """The argv prefix an "always reject" answer for `command` covers: the program, with its sub-command or
    script (`rm`, `git push`, `python3 app.py`), whatever the rest; None (the exact command only) for
    shell syntax or unparsable quoting. Broad on purpose: rejecting more than was asked is safe."""
    plain = _plain_argv(command)
    if plain is None:
        return None
    argv, name = plain
    takes_word = _is_interpreter(name) or PROGRAMS.get(name, _PLAIN).subcommand
    if takes_word and len(argv) > 1 and not argv[1].startswith(("-", "+")):
        return tuple(argv[:2])
    return tuple(argv[:1])


def _plain_argv(command: str) -> tuple[list[str], str] | None:
    """The argv of a command that is one plain program invocation, and its program's name (case-folded:
    a case-insensitive file system (macOS) runs `RM` as `rm`); None for an empty command, shell syntax,
    quoting `shlex` cannot split, or a leading `NAME=value` assignment."""
    if not command or any(syntax in command for syntax in _SHELL_SYNTAX):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or "=" in argv[0]:
        return None
    return argv, os.path.basename(argv[0]).lower()


def _is_interpreter(name: str) -> bool:
    """Whether the program runs a script or inline code it is given (`python3`, `node`, `bash`)."""
    return name in _INTERPRETERS or _PYTHON.fullmatch(name) is not None


def _expands_wildcards(command: str) -> bool:
    return bool(_GLOB_CHARS.intersection(command)) and bool(
        _GLOB_CHARS.intersection(_QUOTED.sub("", command))
    )


def _prefix_length(program: Program, argv: list[str], at: int) -> int | None:
    """How many words of `argv` (the program word at index `at`) a prefix keeps, or None for exact."""
    length = at + 1
    if not program.subcommand:
        return length
    if len(argv) <= length:
        return None  # the bare tool: a prefix would cover every sub-command
    sub = argv[length]
    if sub.startswith(("-", "+")) or "=" in sub:
        return None  # global options or a variable before the sub-command change what it does
    if sub in program.exact_subcommands:
        return None
    if program.prefix_subcommands is not None and sub not in program.prefix_subcommands:
        return None
    length += 1
    if sub in program.run_verbs and len(argv) > length:
        if argv[length].startswith("-"):
            return None  # `uv run --with x`, `deno run -A`: options of the runner itself
        length += 1
    return length


def _arguments_ok(program: Program, args: list[str], arg_ok: Callable[[str], bool] | None) -> bool:
    positional = 0
    for arg in args:
        value: str | None = arg
        if len(arg) > 1 and arg.startswith("-"):
            if _dangerous_option(program, arg):
                return False
            if "=" in arg:
                value = arg.split("=", 1)[1]
            elif not arg.startswith("--") and "/" in arg:
                value = arg[arg.index("/") :]  # an attached value (`-o/tmp/x`)
            else:
                value = None
        else:
            positional += 1
            if program.one_positional and positional > 1:
                return False
        if value and arg_ok is not None and not arg_ok(value):
            return False
    return True


def _dangerous_option(program: Program, arg: str) -> bool:
    if not program.long_options and not program.short_options:
        return False
    name = arg.lstrip("-").split("=", 1)[0]
    if not name:
        return False
    if program.single_dash_long:
        return name in program.long_options or name[0] in program.short_options
    if arg.startswith("--"):
        return any(option.startswith(name) for option in program.long_options)
    return any(letter in program.short_options for letter in arg[1:])
