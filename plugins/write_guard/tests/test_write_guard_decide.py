"""Table-driven attack cases (each must be denied by the named rule) and controls (allowed)."""

from __future__ import annotations

from typing import Any

import pytest
from write_guard._decide import GitHold, GuardDenial, decide
from write_guard._paths import PathContext
from write_guard._policy import Policy, Preset
from write_guard._quick import sink_redirections, writes_nothing
from write_guard._surface import extract_surface

W, E, B = "Write", "Edit", "Bash"
OUT = "outside-roots"
PROT = "protected-path"
GIT = "git-gate"

ATTACKS: list[tuple[str, str, Any, str]] = [
    # (case id, tool, input or path/command, expected rule)
    ("abs-outside", W, "/etc/passwd", OUT),
    ("outside-dir", W, "{out}/x", OUT),
    ("dotdot-rel", W, "../x", OUT),
    ("dotdot-deep", W, "sub/../../x", OUT),
    ("dotdot-abs", W, "{ws}/../outside/x", OUT),
    ("symlink-parent-new-file", W, "escape/new.txt", OUT),
    ("symlink-file", W, "evil.txt", OUT),
    ("symlink-then-dotdot", W, "inner/../../outside/x", OUT),
    ("tilde", W, "~/x", OUT),
    ("home-var", W, "$HOME/.bashrc", OUT),
    ("home-braced", W, "${{HOME}}/.profile", OUT),
    ("project-var-escape", W, "$CLAUDE_PROJECT_DIR/../x", OUT),
    ("double-slash", W, "//etc/passwd", OUT),
    ("repeated-separators", W, "{ws}//..//..//x", OUT),
    ("nul-byte", W, "a\x00b.txt", "bad-path"),
    ("non-utf8", W, "bad\udcff.txt", "bad-path"),
    ("empty-path", W, "", "malformed-input"),
    ("unknown-var", W, "$SOMEWHERE/x", "unresolvable-path"),
    ("other-users-home", W, "~root/x", "unresolvable-path"),
    ("planted-tmp-symlink", W, "{scratch}/planted/x", OUT),
    ("git-config", E, ".git/config", PROT),
    ("git-config-case", E, ".GIT/CONFIG", PROT),
    ("git-hook", W, ".git/hooks/pre-commit", PROT),
    ("git-hook-case", W, ".Git/Hooks/post-merge", PROT),
    ("claude-settings", W, ".claude/settings.json", PROT),
    ("claude-settings-local", W, ".claude/settings.local.json", PROT),
    ("claude-settings-case", W, ".CLAUDE/Settings.JSON", PROT),
    ("hookchain-config", "MultiEdit", "hookchain.toml", PROT),
    ("hookchain-data", W, ".hookchain/store.sqlite3", PROT),
    ("notebook-hook", "NotebookEdit", ".git/hooks/x.ipynb", PROT),
    ("notebook-outside", "NotebookEdit", "{out}/n.ipynb", OUT),
    ("patch-add-outside", "apply_patch", "*** Begin Patch\n*** Add File: ../x\n+hi", OUT),
    ("patch-update-protected", "apply_patch", "*** Update File: .git/config\n@@\n-a\n+b", PROT),
    ("patch-move-outside", "apply_patch", "*** Update File: a.py\n*** Move to: {out}/a.py", OUT),
    ("unified-diff-protected", "apply_patch", "--- a/x\n+++ b/.claude/settings.json\n@@", PROT),
    ("redirect", B, "echo x > /etc/passwd", OUT),
    ("append-home", B, "echo x >> ~/.bashrc", OUT),
    ("amp-redirect", B, "make &> {out}/log", OUT),
    ("fd-redirect", B, "cmd 2> {out}/err", OUT),
    ("noclobber-redirect", B, "echo x >| {out}/c", OUT),
    ("tee", B, "ls | tee {out}/x", OUT),
    ("tee-protected", B, "ls | tee -a .git/config", PROT),
    ("sed-inplace", B, "sed -i 's/a/b/' {out}/f", OUT),
    ("sed-inplace-suffix", B, "sed -i.bak -e s/a/b/ .git/config", PROT),
    ("cp", B, "cp a.txt {out}/", OUT),
    ("cp-target-dir", B, "cp -t {out} a.txt b.txt", OUT),
    ("mv", B, "mv a.txt {out}/b", OUT),
    ("mv-protected-away", B, "mv .git/config x.txt", PROT),
    ("rm", B, "rm -rf {out}", OUT),
    ("rm-git-dir", B, "rm -rf .git", PROT),
    ("install", B, "install -m 644 a {out}/a", OUT),
    ("touch", B, "touch {out}/x", OUT),
    ("mkdir", B, "mkdir -p {out}/d", OUT),
    ("dd", B, "dd if=/dev/zero of={out}/disk bs=1M", OUT),
    ("truncate", B, "truncate -s 0 {out}/f", OUT),
    ("chmod", B, "chmod 777 {out}/target.txt", OUT),
    ("ln", B, "ln -sf a {out}/l", OUT),
    ("curl-output", B, "curl -o {out}/x https://example.com", OUT),
    ("tar-extract", B, "tar -xf a.tar -C {out}", OUT),
    ("env-wrapper", B, "env FOO=1 tee {out}/x < a", OUT),
    ("sudo-wrapper", B, "sudo -u root rm {out}/x", OUT),
    ("nested-wrappers", B, "nohup timeout 5 nice -n 5 rm {out}/t", OUT),
    ("xargs-explicit", B, "find . -name x | xargs rm -rf {out}", OUT),
    ("bash-c", B, "bash -c 'echo x > {out}/y'", OUT),
    ("sh-c-home", B, 'sh -c "rm -rf ~/"', OUT),
    ("eval", B, "eval 'touch {out}/e'", OUT),
    ("and-chain", B, "true && echo x > {out}/y", OUT),
    ("or-chain", B, "false || rm {out}/y", OUT),
    ("semicolon", B, "ls; touch {out}/z", OUT),
    ("newline", B, "ls\ntouch {out}/z", OUT),
    ("subshell-cd", B, "(cd {out} && touch y)", OUT),
    ("cd-escape", B, "cd .. && touch x", OUT),
    ("cd-abs", B, "cd /etc; echo x > passwd", OUT),
    ("cmd-substitution", B, "echo $(touch {out}/sub)", OUT),
    ("backticks", B, "echo `rm {out}/q`", OUT),
    ("quoted-substitution", B, 'echo "$(rm {out}/q)"', OUT),
    ("time-output-outside", B, "/usr/bin/time -o {out}/t true", OUT),
    ("time-output-long", B, "command time --output={out}/t true", OUT),
    ("hard-link-outside", B, "ln {out}/target.txt here.txt && echo x >> here.txt", OUT),
    ("hard-link-protected", B, "ln .git/config c && echo x >> c", PROT),
    ("cp-link-outside", B, "cp -l {out}/target.txt here.txt", OUT),
    ("chmod-dash-mode-hook", B, "chmod -x .git/hooks/pre-commit", PROT),
    ("chmod-dash-mode-settings", B, "chmod -rw,g-w .claude/settings.json", PROT),
    ("heredoc-target", B, "cat <<EOF > {out}/h\nbody\nEOF", OUT),
    ("line-continuation", B, "echo hi \\\n > {out}/cont", OUT),
    # Bash reads a comment up to its newline, `#` inside a word as a character, and an escaped
    # backslash before a newline as no continuation: each line below runs the second command.
    ("comment-then-newline", B, "echo hi # note\nrm -rf {out}/x", OUT),
    ("hash-inside-word", B, "echo a#; rm -rf {out}/x", OUT),
    ("escaped-backslash-newline", B, "echo a\\\\\nrm -rf {out}/x", OUT),
    ("symlink-parent-bash", B, "echo x > escape/new", OUT),
    ("project-var-bash", B, "echo x > ${{CLAUDE_PROJECT_DIR}}/../x", OUT),
    ("unparsable-protected", B, "echo 'unterminated .git/hooks/x", "unparsable-protected"),
    ("python-protected", B, "python3 -c \"open('.git/config','w')\"", "unparsable-protected"),
    ("git-reset-hard", B, "git reset --hard", GIT),
    ("git-C-push-force", B, "git -C {ws} push --force origin main", GIT),
    ("git-push-f", B, "git push -f", GIT),
    ("git-push-fu-cluster", B, "git push -fu origin main", GIT),
    ("git-force-with-lease", B, "git push --force-with-lease", GIT),
    ("git-plus-refspec", B, "git push origin +main", GIT),
    ("git-rebase", B, "git rebase main", GIT),
    ("git-checkout-discard", B, "git checkout -- .", GIT),
    ("git-branch-D", B, "git branch -D feature", GIT),
    ("git-branch-delete-force", B, "git branch --delete --force feature", GIT),
    ("git-clean", B, "git clean -fdx", GIT),
    ("git-stash-drop", B, "git stash drop", GIT),
    ("git-stash-clear", B, "git stash clear", GIT),
    ("git-amend", B, "git commit --amend -m x", GIT),
    ("git-compound", B, "git status && git reset --hard HEAD~1", GIT),
    ("git-dash-c", B, "git -c core.pager=cat rebase -i HEAD~3", GIT),
    ("git-alias", B, "git -c alias.nuke='reset --hard' nuke", GIT),
    ("git-in-bash-c", B, "bash -c 'git push --force'", GIT),
    ("git-sudo", B, "sudo git clean -f", GIT),
    ("git-subshell", B, "(cd sub && git stash drop)", GIT),
]

CONTROLS: list[tuple[str, str, Any]] = [
    ("write-rel", W, "src/app.py"),
    ("write-abs", W, "{ws}/README.md"),
    ("write-dotdot-inside", E, "./sub/../b.txt"),
    ("write-project-var", W, "$CLAUDE_PROJECT_DIR/x.py"),
    ("write-extra-root", W, "{scratch}/x"),
    ("write-internal-symlink", W, "inner/y.txt"),
    ("notebook", "NotebookEdit", "nb.ipynb"),
    ("claude-commands", W, ".claude/commands/x.md"),
    ("git-other-file", W, ".github/workflows/ci.yml"),
    ("patch-inside", "apply_patch", "*** Add File: src/new.py\n+x\n*** Update File: a.py"),
    ("read-protected", "Read", ".git/config"),
    ("read-outside", "Read", "/etc/passwd"),
    ("grep", "Grep", "/etc"),
    ("ls", B, "ls -la"),
    ("git-status", B, "git status"),
    ("git-diff", B, "git diff HEAD~1 -- src"),
    ("git-log", B, "git log --oneline | head -20"),
    ("git-branch-d", B, "git branch -d merged"),
    ("git-push", B, "git push origin main"),
    ("git-commit", B, "git commit -m 'fix: a > b'"),
    ("git-stash", B, "git stash"),
    ("git-stash-list", B, "git stash list"),
    ("git-rebase-abort", B, "git rebase --abort"),
    ("git-bare-checkout", B, "git checkout"),
    # A branch switch: git itself refuses one that would overwrite local changes.
    ("git-checkout-branch", B, "git checkout main"),
    ("git-checkout-new-branch", B, "git checkout -b feature/x"),
    ("git-switch", B, "git switch dev"),
    ("dev-null", B, "echo hi > /dev/null"),
    ("stderr-null", B, "cmd 2>/dev/null"),
    ("dup-fd", B, "make 2>&1 | tee build.log"),
    ("to-stderr", B, "echo oops >&2"),
    ("redirect-inside", B, "cat a > b.txt"),
    ("sed-print", B, "sed -n 1p /etc/passwd"),
    ("sed-inplace-inside", B, "sed -i 's/a/b/' src/x.py"),
    ("cp-in", B, "cp /etc/hosts local.txt"),
    ("mkdir-inside", B, "mkdir -p build/out && rm -rf build"),
    ("npm-quiet", B, "npm test > /dev/null 2>&1"),
    ("find-delete", B, "find . -name '*.pyc' -delete"),
    ("xargs-unknown", B, "find . -name '*.o' | xargs rm"),
    ("python-inline", B, "python3 -c 'print(1)'"),
    ("quoted-arrow", B, 'echo "> /etc/passwd"'),
    ("heredoc-body-ignored", B, "cat <<'EOF' > notes.txt\nrm -rf / > /etc/x\nEOF"),
    ("tmp-scratch", B, "echo x > {scratch}/log && cat {scratch}/log"),
    ("subshell-restores-cwd", B, "(cd sub && touch a); touch b"),
    ("github-not-git", B, "for f in .github/*.yml; do python3 -c \"print('$f')\"; done"),
    ("bsd-sed-empty-suffix", B, "sed -i '' '1,2s/a/b/' src/x.py"),
    ("plan-file-home", W, "{home}/.claude/plans/plan.md"),
]

ORCHESTRATOR: list[tuple[str, bool]] = [
    ("reports/summary.md", True),
    ("reports/src/x.ts", True),
    ("lab/x/reports/y.md", True),
    ("docs/planning/a/b.md", True),
    ("audit-1/case-1.md", True),
    ("audit-7/notes/x.txt", True),
    ("case-1.md", True),
    ("state.md", True),
    ("src/x.py", False),
    ("src/reports/x.ts", False),
    ("src/docs/planning/x.md", False),
    ("app/state.md", False),
    ("docs/planning/x.ts", False),
    ("docs/other.md", False),
    ("audit-1/src/case-y.md", False),
    ("README.md", False),
]


def _context(layout: Any) -> PathContext:
    return PathContext(cwd=str(layout.ws), home=str(layout.home), project_dir=str(layout.ws))


def _policy(layout: Any, preset: Preset = "workspace") -> Policy:
    extra = (str(layout.scratch), str(layout.home / ".claude" / "plans"))
    return Policy(preset=preset, workspace_root=str(layout.ws), extra_roots=extra)


def _tool_input(tool: str, value: str) -> dict[str, Any]:
    if tool == "Bash":
        return {"command": value}
    if tool == "apply_patch":
        return {"patch": value}
    if tool == "NotebookEdit":
        return {"notebook_path": value}
    if tool == "Grep":
        return {"pattern": "x", "path": value}
    return {"file_path": value}


def _decide(layout: Any, tool: str, value: str, preset: Preset = "workspace") -> Any:
    surface = extract_surface(tool, _tool_input(tool, layout.fill(value)))
    return decide(surface, _context(layout), _policy(layout, preset))


def test_tables_are_large_enough() -> None:
    assert len(ATTACKS) >= 60
    assert len(CONTROLS) >= 30
    assert len({case[0] for case in ATTACKS}) == len(ATTACKS)


@pytest.mark.parametrize(("case", "tool", "value", "rule"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_is_denied(layout: Any, case: str, tool: str, value: str, rule: str) -> None:
    outcome = _decide(layout, tool, value)
    if rule == GIT:
        assert isinstance(outcome, GitHold), outcome
        assert outcome.command == layout.fill(value).strip()
        return
    assert isinstance(outcome, GuardDenial), outcome
    assert outcome.rule == rule
    assert f"({rule})" in outcome.reason
    assert "Instead:" in outcome.reason


@pytest.mark.parametrize(("case", "tool", "value", "rule"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_takes_the_full_analysis(
    layout: Any, case: str, tool: str, value: str, rule: str
) -> None:
    """No Bash attack is waved through by the shortcut for lines that write nothing."""
    if tool == B:
        assert not writes_nothing(layout.fill(value))
        assert sink_redirections(layout.fill(value)) is None


@pytest.mark.parametrize(("case", "tool", "value"), CONTROLS, ids=[c[0] for c in CONTROLS])
def test_control_is_allowed(layout: Any, case: str, tool: str, value: str) -> None:
    assert _decide(layout, tool, value) is None


@pytest.mark.parametrize(("path", "allowed"), ORCHESTRATOR)
def test_orchestrator_roots(layout: Any, path: str, allowed: bool) -> None:
    outcome = _decide(layout, W, path, "orchestrator")
    if allowed:
        assert outcome is None
    else:
        assert isinstance(outcome, GuardDenial)
        assert outcome.rule == "orchestrator-roots"


def test_orchestrator_denies_outside_the_session_directory(layout: Any) -> None:
    outcome = _decide(layout, W, "{scratch}/reports/x.md", "orchestrator")
    assert isinstance(outcome, GuardDenial)
    assert outcome.rule == OUT


def test_read_only_denies_every_write_but_not_sinks(layout: Any) -> None:
    denied = _decide(layout, W, "src/app.py", "read-only")
    assert isinstance(denied, GuardDenial)
    assert denied.rule == "read-only"
    assert _decide(layout, B, "ls 2>/dev/null", "read-only") is None
    assert _decide(layout, "Read", "src/app.py", "read-only") is None


def test_protected_paths_win_in_every_preset(layout: Any) -> None:
    for preset in ("workspace", "orchestrator", "read-only"):
        outcome = _decide(layout, W, "reports/../.claude/settings.json", preset)
        assert isinstance(outcome, GuardDenial)
        assert outcome.rule == PROT


def test_denial_names_the_resolved_path(layout: Any) -> None:
    outcome = _decide(layout, W, "escape/new.txt")
    assert isinstance(outcome, GuardDenial)
    assert str(layout.out / "new.txt") in outcome.reason
    assert str(layout.ws / "escape" / "new.txt") in outcome.reason


@pytest.mark.parametrize(
    ("tool", "value", "denied"),
    [
        (W, "{scratch}/vault", True),
        (W, "{scratch}/vault/key.txt", True),
        (W, "{scratch}/Vault/deeper/key.txt", True),
        (B, "rm -rf {scratch}", True),
        (B, "rm -rf {scratch}/", True),
        (B, "mv {scratch}/vault/../vault {scratch}/other", True),
        (W, "{scratch}/vaulted.txt", False),
        (W, "{scratch}/vault.txt", False),
        (B, "rm -rf {scratch}/other", False),
    ],
)
def test_a_protected_path_covers_what_is_below_it_and_what_contains_it(
    layout: Any, tool: str, value: str, denied: bool
) -> None:
    policy = Policy(
        preset="workspace",
        workspace_root=str(layout.ws),
        extra_roots=(str(layout.scratch),),
        protected_paths=(str(layout.scratch / "vault"),),
    )
    surface = extract_surface(tool, _tool_input(tool, layout.fill(value)))
    outcome = decide(surface, _context(layout), policy)
    if denied:
        assert isinstance(outcome, GuardDenial), outcome
        assert outcome.rule == PROT
    else:
        assert outcome is None
