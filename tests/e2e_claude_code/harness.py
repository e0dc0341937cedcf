"""Where the suite's Claude Code binary comes from: one pinned npm install in a gitignored folder.

`python tests/e2e_claude_code/harness.py install` is what `make test` runs first. Standard library
only, so it runs before anything else is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Package:
    """One harness from npm: its package, pinned version, and the file the suite runs."""

    name: str
    spec: str
    entry: Path
    env: str

    @property
    def folder(self) -> Path:
        return REPO / ".cache" / "harnesses" / self.name

    def path(self) -> Path:
        override = os.environ.get(self.env)
        return Path(override) if override else self.folder / self.entry


CODEX = Package(
    "codex",
    "@openai/codex@0.171.0",
    Path("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"),
    "HOOKCHAIN_E2E_CODEX",
)
GEMINI = Package(
    "gemini",
    "@google/gemini-cli@0.61.0",
    Path("node_modules/@google/gemini-cli/bundle/gemini.js"),
    "HOOKCHAIN_E2E_GEMINI",
)
OTHER_HARNESSES = (CODEX, GEMINI)
"""The other harnesses' suites (tests/e2e_codex, tests/e2e_gemini) install theirs here too."""


def install_package(package: Package) -> Path:
    """`npm install` a pinned harness unless it is there; raises with npm's own output."""
    entry = package.folder / package.entry
    if entry.exists():
        return entry
    package.folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--prefix", str(package.folder), "--no-audit", "--no-fund",
         "--loglevel=error", package.spec],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not entry.exists():
        raise RuntimeError(
            f"npm could not install {package.spec} into {package.folder} "
            f"(exit {done.returncode}): {done.stderr.strip()[-800:]}"
        )
    return entry


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
        others = [install_package(p) for p in OTHER_HARNESSES if not os.environ.get(p.env)]
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        print(f"hookchain: {error}", file=sys.stderr)
        return 1
    print(f"hookchain: Claude Code {CLAUDE_VERSION} at {binary}")
    for entry in others:
        print(f"hookchain: {entry}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
