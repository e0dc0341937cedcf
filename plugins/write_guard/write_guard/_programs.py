"""What the line analysis knows of programs it does not read the writes of: those that never
run a command named in their arguments. Any other program may (`strace git …`, `script -c`,
`ssh host 'git …'`, a build tool): its arguments are searched for a git call (see `_bash`)."""

from __future__ import annotations

RUNS_NOTHING = frozenset({
    # Output and text filters.
    "echo", "printf", "cat", "tac", "head", "tail", "wc", "grep", "egrep", "fgrep", "cut",
    "paste", "join", "comm", "diff", "cmp", "nl", "fold", "fmt", "column", "rev", "expand",
    "unexpand", "od", "hexdump", "xxd", "strings", "tr", "sort", "uniq", "shuf", "tsort",
    "numfmt", "iconv", "base32", "base64", "jq", "md5sum", "sha1sum", "sha224sum", "sha256sum",
    "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "seq", "yes", "factor", "expr",
    # Files and the system, read.
    "ls", "dir", "tree", "stat", "file", "du", "df", "realpath", "readlink", "basename",
    "dirname", "pwd", "which", "type", "whoami", "id", "groups", "uname", "hostname", "date",
    "printenv", "locale", "nproc", "uptime", "free", "ps", "pgrep", "pidof", "lsof", "tty",
    "tput", "clear", "sleep", "true", "false", "test", "[", "[[", ":",
    # Shell builtins and keywords that run nothing named in their words.
    "cd", "pushd", "popd", "dirs", "read", "mapfile", "readarray", "export", "declare",
    "typeset", "local", "readonly", "unset", "set", "shopt", "shift", "exit", "return", "break",
    "continue", "let", "wait", "jobs", "umask", "ulimit", "getopts", "times", "caller",
    "disown", "for", "select", "in", "function",
})  # fmt: skip
