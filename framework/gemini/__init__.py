"""The Gemini CLI adapter: Gemini's command hooks served by the warm host (docs/harnesses.md)."""
