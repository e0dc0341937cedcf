"""Every hookchain plugin inside a Claude Agent SDK program: one Host, in this process.

    pip install 'hookchain[agent-sdk]' hookchain-write-guard
    python examples/agent_sdk_guarded.py "tidy up the README"

The plugins installed in this environment (entry points, `hookchain plugins` lists them) run on
every tool call, prompt and stop of the agent, with the store of `hookchain.toml`; a write-guard
denial reaches the model as the tool's error, exactly as under Claude Code's own hooks.
"""

from __future__ import annotations

import sys

import anyio
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, TextBlock, query

from framework import Host
from framework.agent_sdk import hooks_for


async def main(prompt: str) -> None:
    async with Host() as host, hooks_for(host) as hooks:
        options = ClaudeAgentOptions(hooks=hooks, permission_mode="acceptEdits")
        async for message in query(prompt=prompt, options=options):
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        print(block.text)


if __name__ == "__main__":
    anyio.run(main, " ".join(sys.argv[1:]) or "Say hello.")
