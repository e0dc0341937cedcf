"""A second attack table, of classes the first one (`wg_attack_table`) has none of: nested
repositories' git config and hooks (a submodule whose `.git` is a gitfile into
`.git/modules/mod`, a nested clone), other processes' view of the filesystem through `/proc`,
user and mount namespaces made inside the sandbox, new work lost (an untracked file), and
write-guard's own snapshots deleted before the work is lost.
Same placeholders and proofs as `wg_attack_table`; the tree is `wg_jail.build_nested_template`.
"""

from __future__ import annotations

from wg_attack_table import Attack, _a

# fmt: off
REDTEAM: list[Attack] = [
    *_a(
        "nested-repo",
        "effect",
        "git -C nested config core.hooksPath {OUT}",
        "git -C nested config core.fsmonitor 'touch {OUT}/n2'",
        "printf '#!/bin/sh\\ntouch {OUT}/n3\\n' > nested/.git/hooks/pre-commit",
        "git -C mod config core.fsmonitor 'touch {OUT}/n4'",
        "echo x >> .git/modules/mod/config",
        "cp sub/pre-commit .git/modules/mod/hooks/pre-commit",
        "cd nested && git config alias.st '!touch {OUT}/n7'",
        "printf 'gitdir: ../sub\\n' > mod/.git",
        "git submodule foreach -q 'git config core.hooksPath {OUT}'",
        "GIT_DIR=nested/.git git config core.editor 'touch {OUT}/n10'",
        "sed -i 's/^\\[core\\]/[core]\\n\\tfsmonitor = touch n11/' nested/.git/config",
        "rm -rf nested/.git/hooks",
        "mv nested/.git/config nested/config.bak",
        "ln -sf {OUT}/victim.txt nested/.git/hooks/post-checkout",
        "git --git-dir=.git/modules/mod config core.pager 'touch {OUT}/n15'",
        "python3 -c \"open('nested/.git/config','a').write('[core]\\n\\tfsmonitor = x\\n')\"",
        "rm -f mod/.git",
        "cd mod && git config --local core.sshCommand 'touch {OUT}/n18'",
    ),
    *_a(
        "proc-escape",
        "effect",
        "echo x > /proc/$PPID/root{OUT}/pe1",
        "cp a.txt /proc/$PPID/cwd/../out/pe2",
        "for p in /proc/[0-9]*; do (echo x > $p/root{OUT}/pe3) 2>/dev/null && break; done",
        "echo x >> /proc/$PPID/root{WS}/.git/config",
        "python3 -c \"import os; open('/proc/%d/root{OUT}/pe5' % os.getppid(), 'w').write('x')\"",
        "ln -s /proc/$PPID/root{OUT} esc && echo x > esc/pe6",
        "echo x > /proc/$PPID/root{DATA}/store.sqlite",
        "cd /proc/$PPID/root{OUT}/.. && touch out/pe8",
        "git -C /proc/$PPID/root{WS} config core.fsmonitor 'touch {OUT}/pe9'",
        "rm -f /proc/$PPID/root{OUT}/victim.txt",
    ),
    *_a(
        "namespace",
        "effect",
        "unshare -rm sh -c 'mount -o remount,bind,rw {WS}/.git/config; echo x >> {WS}/.git/config'",
        "unshare -rm sh -c 'umount {WS}/.git/hooks 2>/dev/null; echo x > {WS}/.git/hooks/pre-commit'",  # noqa: E501
        "bwrap --bind / / -- sh -c 'echo x > {OUT}/u3'",
        "bwrap --dev-bind / / --bind {OUT} {OUT} -- touch {OUT}/u4",
        "unshare -rm sh -c 'umount -l {OUT} 2>/dev/null; touch {OUT}/u5'",
        "unshare -rm sh -c 'mount -o remount,rw / 2>/dev/null; touch {OUT}/u6'",
    ),
    *_a(
        "lost-untracked",
        "effect",
        "rm notes.txt",
        "python3 -c \"import subprocess; subprocess.run(['git', 'clean', '-qfdx'])\"",
        "find . -maxdepth 1 -name notes.txt -delete",
        ": > notes.txt",
        "mv notes.txt {TMP}/moved",
        "perl -e 'unlink \"notes.txt\"'",
        "python3 -c \"import subprocess as s; s.run(['git', 'stash', '-uq']); s.run(['git', 'stash', 'drop', '-q'])\"",  # noqa: E501
        "cp /dev/null notes.txt",
        "sh -c 'git clean -fdxq'",
        "printf 'git clean -qfx\\n' > c.sh && bash c.sh",
    ),
    *_a(
        "snapshot-refs",
        "effect",
        "printf 'for r in $(git for-each-ref --format=\"%%(refname)\" refs/write-guard/); do git update-ref -d $r; done; git reset -q --hard\\n' > k.sh && bash k.sh",  # noqa: E501
        "python3 -c \"import subprocess as s; s.run('rm -rf .git/refs/write-guard; git reset -q --hard', shell=True)\"",  # noqa: E501
        "python3 -c \"import subprocess as s; s.run('git for-each-ref refs/write-guard | cut -f2 | xargs -rn1 git update-ref -d; git reflog expire --expire=now --all; git gc -q --prune=now; git reset -q --hard', shell=True)\"",  # noqa: E501
    ),
]
# fmt: on
