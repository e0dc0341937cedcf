"""Codex's own sandbox (`sandbox_mode = "workspace-write"`), the real binary, no hookchain: the
facts a Codex route of write-guard would rest on, checked here so a Codex release that changes
them fails this suite rather than a guard.

- `writable_roots` are writable besides the workspace; anything else is read-only.
- `/tmp` and `$TMPDIR` are writable unless `exclude_slash_tmp` / `exclude_tmpdir_env_var`: a
  workspace under /tmp makes every other folder under /tmp writable too without them.
- `.git` inside the workspace stays read-only (Codex's own rule, not configurable).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kit import Sandbox
from mock_responses import Call, MockResponses, Say
from suites import run_jailed

pytestmark = pytest.mark.slow
RUN_TIMEOUT_S = 90.0


def _config(api: MockResponses, extra: Path, exclude_tmp: bool) -> str:
    tmp = "true" if exclude_tmp else "false"
    return (
        'model = "gpt-5-codex"\nmodel_provider = "mock"\nsandbox_mode = "workspace-write"\n\n'
        f'[sandbox_workspace_write]\nwritable_roots = ["{extra}"]\n'
        f"exclude_tmpdir_env_var = {tmp}\nexclude_slash_tmp = {tmp}\n\n"
        f'[model_providers.mock]\nname = "mock"\nbase_url = "{api.url}"\n'
        'env_key = "MOCK_API_KEY"\nwire_api = "responses"\n'
    )


def _run_sandboxed(box: Sandbox, command: str, extra: Path, exclude_tmp: bool) -> tuple[str, Path]:
    """Run `command` as the model's shell call under Codex's sandbox; its output, the project."""
    project = box.project()
    config = Path(box.env["CODEX_HOME"]) / "config.toml"
    with MockResponses([Call(command), Say("Done.")], max_requests=20, max_seconds=100) as api:
        config.write_text(_config(api, extra, exclude_tmp), encoding="utf-8")
        argv = [
            str(box.root / "bin" / "codex"),
            "exec", "--json", "--skip-git-repo-check", "-C", str(project.path), "do it",
        ]  # fmt: skip
        done = run_jailed(box.root, argv, box.env, project.path, RUN_TIMEOUT_S)
        outputs = api.outputs()
    assert done.returncode == 0 and len(outputs) == 1, done.stderr[-1500:]
    return outputs[0], project.path


def _codes(output: str) -> dict[str, int]:
    return {name: int(code) for name, code in re.findall(r"rc_(\w+)=(\d+)", output)}


def test_workspace_write_holds_outside_writes_and_keeps_git_read_only(box: Sandbox) -> None:
    extra = box.root / "extra"
    extra.mkdir()
    outside = box.outside / "stolen.txt"
    command = (
        f"echo a > {outside}; echo rc_outside=$?; echo b > inside.txt; echo rc_inside=$?; "
        f"echo c >> .git/config; echo rc_git=$?; echo d > {extra}/e.txt; echo rc_extra=$?"
    )
    output, project = _run_sandboxed(box, command, extra, exclude_tmp=True)
    assert _codes(output) == {"outside": 1, "inside": 0, "git": 1, "extra": 0}, output
    assert not outside.exists()
    assert (extra / "e.txt").read_text() == "d\n"
    assert (project / "inside.txt").read_text() == "b\n"
    assert "c\n" not in (project / ".git" / "config").read_text()
    assert "Read-only file system" in output


def test_without_the_tmp_exclusions_tmp_is_writable(box: Sandbox) -> None:
    # Why a Codex route must set both exclusions: the default leaves TMPDIR writable.
    target = Path(box.env["TMPDIR"]) / "left.txt"
    command = f"echo x > {target}; echo rc_tmp=$?"
    output, _project = _run_sandboxed(box, command, box.root / "outside", exclude_tmp=False)
    assert _codes(output) == {"tmp": 0}, output
    assert target.exists()
