"""The Codex CLI adapter: Codex's command hooks served by the warm host (see docs/harnesses.md)."""
