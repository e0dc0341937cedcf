"""Where the suite's Claude Code binary comes from: one pinned npm install in a gitignored folder.

`python tests/e2e_claude_code/harness.py install` is what `make test` runs first. Standard library
only, so it runs before anything else is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CLAUDE_VERSION = "2.1.197"
REPO = Path(__file__).resolve().parents[2]
HARNESS_DIR = REPO / ".cache" / "harnesses" / "claude-code"
NATIVE = Path("node_modules") / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
CLAUDE_ENV = "HOOKCHAIN_E2E_CLAUDE"
"""Points at an already unpacked `claude` binary (local speed); CI installs its own."""
INSTALL_TIMEOUT_S = 300


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def claude_binary() -> Path:
    """The binary the suite runs: `$HOOKCHAIN_E2E_CLAUDE`, else the pinned npm install."""
    override = os.environ.get(CLAUDE_ENV)
    return Path(override) if override else HARNESS_DIR / NATIVE


def missing_tools() -> list[str]:
    return [tool for tool in ("node", "npm") if shutil.which(tool) is None]


def install() -> Path:
    """`npm install` the pinned Claude Code unless it is there; raises with npm's own output."""
    binary = HARNESS_DIR / NATIVE
    if binary.exists():
        return binary
    HARNESS_DIR.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            "npm",
            "install",
            "--prefix",
            str(HARNESS_DIR),
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            f"@anthropic-ai/claude-code@{CLAUDE_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not binary.exists():
        raise RuntimeError(
            f"npm could not install @anthropic-ai/claude-code@{CLAUDE_VERSION} into "
            f"{HARNESS_DIR} (exit {done.returncode}): {done.stderr.strip()[-800:]}"
        )
    return binary


def main(argv: list[str]) -> int:
    if argv != ["install"]:
        print("usage: harness.py install", file=sys.stderr)
        return 2
    if os.environ.get(CLAUDE_ENV):
        return 0
    missing = missing_tools()
    if missing:
        print(
            f"hookchain: {' and '.join(missing)} not found: "
            + (
                "CI needs them for the Claude Code end-to-end tests (apt-get install nodejs npm)"
                if under_ci()
                else "the Claude Code end-to-end tests will be skipped"
            ),
            file=sys.stderr,
        )
        return 1 if under_ci() else 0
    try:
        binary = install()
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        print(f"hookchain: {error}", file=sys.stderr)
        return 1
    print(f"hookchain: Claude Code {CLAUDE_VERSION} at {binary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
