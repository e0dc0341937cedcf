"""The Claude Agent SDK adapter: hookchain's plugins as in-process SDK hook callbacks.

    from framework import Host
    from framework.agent_sdk import hooks_for

    async with Host() as host, hooks_for(host) as hooks:
        options = ClaudeAgentOptions(hooks=hooks, ...)
        async for message in query(prompt=..., options=options):
            ...

Needs `pip install 'hookchain[agent-sdk]'` (the `claude-agent-sdk` package).
"""

from framework.agent_sdk.hooks import SDK_EVENTS, SdkHooks, hooks_for

__all__ = ["SDK_EVENTS", "SdkHooks", "hooks_for"]
