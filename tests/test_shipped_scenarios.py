"""The branches of the scenarios `--offline` plays that the walkthrough does not take
(tests/test_e2e_offline.py takes the others with the real CLI): each is played here through
the scripted model's engine, one turn at a time, with the tool results a project would give.
"""

from __future__ import annotations

import json

from ralph.testing.conversation import Request
from ralph.testing.engine import Engine
from ralph.testing.scenario import load_scenario
from ralph.testing.wire import MessageReply, TextBlock, ToolUseBlock
from sgf.loop import offline
from sgf.stages import Stage

SENTINEL = 'echo "$RALPH_LOOP_ID" > .ralph-complete'
INDEX = "| Spec | Code | Purpose |\n|------|------|---------|\n"
GREETER = INDEX + "| [greeter](greeter.md) | greet.py, __main__.py | Greets a name |\n"


def issue(id_: str, title: str, **fields: object) -> dict[str, object]:
    return {"id": id_, "title": title, "issue_type": "task", "spec": None, "fixes": None, **fields}


class Agent:
    """One agent session against a shipped scenario: the prompt, then a result per turn."""

    def __init__(self, stage: Stage, prompt: str = "the stage's prompt") -> None:
        self.engine = Engine(load_scenario(offline.scenario(stage, "claude")))
        self.prompt = prompt
        self.said = [prompt]
        self.fresh = True

    def turn(self, *results: str) -> tuple[str, list[str]]:
        """The model's next reply to `results`: its text and each tool call's command or tool."""
        last = "\n".join(results)
        self.said += results
        request = Request(
            prompt=self.prompt,
            conversation="\n".join(self.said),
            last_result=last,
            session="s",
            is_fresh=self.fresh,
            cwd="/p",
        )
        self.fresh = False
        reply = self.engine.decide(request).reply
        assert isinstance(reply, MessageReply)
        text = " ".join(b.text for b in reply.blocks if isinstance(b, TextBlock))
        calls = [
            str(b.input.get("command", b.name)) for b in reply.blocks if isinstance(b, ToolUseBlock)
        ]
        self.said += [
            text,
            *(json.dumps(b.input) for b in reply.blocks if isinstance(b, ToolUseBlock)),
        ]
        return text, calls


def test_a_second_offline_interview_ends_at_once_without_planning_twice() -> None:
    agent = Agent(Stage.SPEC)
    _, calls = agent.turn()
    assert calls == ["Read", "Read", "pn list --json"]
    text, calls = agent.turn(GREETER, "# Backpressure", "[]")
    assert "specified and planned already" in text
    assert calls == [SENTINEL]


def test_the_build_claims_the_way_its_prompt_says_with_the_loops_spec() -> None:
    agent = Agent(Stage.BUILD, "Run `pn claim-next -t task -t chore --spec greeter --json` (the")
    agent.turn()
    _, calls = agent.turn("# Backpressure", GREETER)
    assert calls == ["pn claim-next -t task -t chore --spec greeter --json"]
    _, calls = agent.turn("null")
    assert calls == [SENTINEL]


def test_the_build_gives_back_a_task_it_does_not_know() -> None:
    agent = Agent(Stage.BUILD)
    agent.turn()
    _, calls = agent.turn("# Backpressure", INDEX)
    assert calls == ["pn claim-next -t task -t chore --json"]  # the prompt named none
    text, calls = agent.turn(json.dumps(issue("pn-0000beef", "Add OAuth")))
    assert "knows only the greeter walkthrough's tasks" in text
    [release] = calls
    assert release.endswith("&& pn release pn-0000beef")


def test_the_build_gives_a_task_back_when_its_checks_fail() -> None:
    agent = Agent(Stage.BUILD)
    agent.turn()
    agent.turn("# Backpressure", INDEX)
    _, calls = agent.turn(json.dumps(issue("pn-0000f00d", "Write the greet function")))
    assert calls == ["Write"]
    _, [checks] = agent.turn("File created")
    assert "python3 -m doctest greet.py" in checks
    text, [release] = agent.turn("Traceback (most recent call last):\nSyntaxError")
    assert "The checks fail" in text
    assert release.endswith("&& pn release pn-0000f00d")


def test_verify_has_nothing_to_do_without_the_greeter_spec() -> None:
    agent = Agent(Stage.VERIFY)
    agent.turn()
    text, calls = agent.turn("# Backpressure", INDEX)
    assert "knows only the greeter walkthrough's spec" in text
    assert calls == [SENTINEL]


def test_verify_writes_no_report_when_the_checks_do_not_run() -> None:
    agent = Agent(Stage.VERIFY)
    agent.turn()
    agent.turn("# Backpressure", GREETER)
    _, [investigate] = agent.turn("")  # never verified
    assert investigate.startswith("git rev-parse --short HEAD")
    text, calls = agent.turn("abc1234\n2026-01-01\nModuleNotFoundError: No module named 'greet'")
    assert "stopping without a report" in text
    assert calls == []


def test_issues_plan_leaves_a_bug_it_does_not_know_to_a_human() -> None:
    agent = Agent(Stage.ISSUES_PLAN)
    agent.turn()
    agent.turn("# Backpressure", GREETER)
    bug = issue("pn-000000b6", "auth: tokens expire early", issue_type="bug")
    _, calls = agent.turn(json.dumps([bug]))
    assert calls == ["pn list -t task --json"]
    _, calls = agent.turn("[]")
    assert calls == ["pn update pn-000000b6 --claim --json"]
    text, [release] = agent.turn(json.dumps({**bug, "status": "in_progress"}))
    assert "plan only the greeter walkthrough's bug" in text
    assert release.endswith("&& pn release pn-000000b6")


def test_issues_plan_leaves_a_bug_another_loop_holds() -> None:
    agent = Agent(Stage.ISSUES_PLAN)
    agent.turn()
    agent.turn("# Backpressure", GREETER)
    bug = issue("pn-000000b7", "greeter: a name of only spaces", issue_type="bug")
    agent.turn(json.dumps([bug]))
    agent.turn("[]")
    text, calls = agent.turn(
        '{"error": "pn-000000b7 is already claimed", "code": "already_claimed"}'
    )
    assert "Another loop holds pn-000000b7" in text
    assert calls == []
