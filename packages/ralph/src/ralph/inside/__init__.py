"""Programs that run inside the sandbox, as Claude Code hooks: standard library only."""
