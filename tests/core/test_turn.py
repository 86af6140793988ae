# SPDX-License-Identifier: Apache-2.0
"""The turn layer both machines share: one classification, one lifecycle, one driver contract."""

from __future__ import annotations

import pytest
from openai_harmony import Role

from trtllm_stream_fix.core import chat_chunks as cc
from trtllm_stream_fix.core.chat_machine import ChatChunkMachine, ChatContext
from trtllm_stream_fix.core.drivers import NOT_CONTENT, HarmonyDriver, new_driver
from trtllm_stream_fix.core.facts import ContentDelta, MessageClosed, MessageOpened
from trtllm_stream_fix.core.harmony_tokens import CALL
from trtllm_stream_fix.core.machine import ResponsesEventMachine
from trtllm_stream_fix.core.turn import LifecycleError, Stage
from trtllm_stream_fix.defaults import new_context

pytestmark = pytest.mark.cpu_only


class _OneCallDriver:
    """Reports one function call to ``recipient`` with arguments ``{}``, whatever is fed."""

    def __init__(self, recipient: str) -> None:
        self.recipient = recipient
        self.tokens_fed = 0

    def take_content(self, token: int):
        return NOT_CONTENT

    def feed(self, token_ids, facts=None):
        facts = [] if facts is None else facts
        self.tokens_fed = 4
        facts += [
            MessageOpened("commentary", self.recipient, "json", 2, Role.ASSISTANT),
            ContentDelta("{}"),
            MessageClosed(CALL, 4),
        ]
        return facts

    def finish(self, facts=None):
        return [] if facts is None else facts


def _responses_call(encoding, recipient: str) -> tuple[str | None, str | None]:
    """(function name, error message) of the Responses machine's stream."""
    machine = ResponsesEventMachine(new_context(response_id="resp_ws"), encoding=encoding)
    machine.start()
    machine._driver = _OneCallDriver(recipient)
    events = machine.feed([1, 2, 3, 4], finished=True, finish_reason="stop")
    names = [e.item.name for e in events if e.type == "response.output_item.added"]
    errors = [e.message for e in events if e.type == "error"]
    return (names[0] if names else None), (errors[0] if errors else None)


def _chat_call(encoding, recipient: str) -> tuple[str | None, str | None]:
    """(function name, error message) of the chat machine's stream."""
    context = ChatContext(completion_id="chatcmpl-ws", model="m", created=0)
    machine = ChatChunkMachine(context, encoding=encoding)
    machine.start()
    machine._driver = _OneCallDriver(recipient)
    frames = machine.feed([1, 2, 3, 4], finished=True, finish_reason="stop")
    payloads = [cc.to_dict(f) for f in frames]
    names = [
        call["function"]["name"]
        for p in payloads
        if isinstance(p, dict) and p.get("choices")
        for call in p["choices"][0]["delta"].get("tool_calls") or []
        if call["function"].get("name") is not None
    ]
    errors = [p["error"]["message"] for p in payloads if isinstance(p, dict) and "error" in p]
    return (names[0] if names else None), (errors[0] if errors else None)


@pytest.mark.parametrize(
    ("recipient", "name"),
    [("functions. get_weather ", "get_weather"), ("functions.\u00a0", None), ("functions. ", None)],
)
def test_both_machines_read_a_function_name_alike(encoding, recipient, name):
    responses_name, responses_error = _responses_call(encoding, recipient)
    chat_name, chat_error = _chat_call(encoding, recipient)
    assert responses_name == chat_name == name
    if name is None:  # blanks only: no name, the turn fails in both
        assert "without a function name" in responses_error
        assert "without a name" in chat_error
    else:
        assert responses_error is None and chat_error is None


@pytest.mark.parametrize("parser", ["fast", "reference"])
def test_both_drivers_keep_the_driver_contract(encoding, parser):
    driver = new_driver(encoding, parser)
    assert isinstance(driver, HarmonyDriver)
    assert new_driver(encoding).__class__.__name__ == "FastHarmonyDriver"  # as both configs


def test_the_chat_machine_has_the_responses_lifecycle(encoding):
    context = ChatContext(completion_id="chatcmpl-life", model="m", created=0)
    machine = ChatChunkMachine(context, encoding=encoding)
    assert machine.stage is Stage.NEW
    with pytest.raises(LifecycleError, match="before the generation finished"):
        machine.completion()
    assert len(machine.start()) == 1  # the role chunk
    with pytest.raises(LifecycleError, match="starts once"):
        machine.start()
    tokens = encoding.encode("<|channel|>final<|message|>Hi", allowed_special="all")
    frames = machine.feed(tokens, finished=True, finish_reason="stop")
    assert frames[-1] is cc.DONE and machine.stage is Stage.DONE and machine.finished
    assert machine.final_response == machine.completion()
    assert machine.feed(tokens) == [] and machine.fail("late") == []


def test_chat_call_ids_come_from_the_injected_factory(encoding):
    context = ChatContext(completion_id="chatcmpl-ids", model="m", created=0)
    text = "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>"
    tokens = encoding.encode(text, allowed_special="all")
    derived = ChatChunkMachine(context, encoding=encoding)
    derived.start()
    derived.feed(tokens, finished=True, finish_reason="stop")
    assert derived.completion().choices[0].message.tool_calls[0].id == context.call_id(0)
    injected = ChatChunkMachine(context, encoding=encoding, new_id=lambda prefix: f"{prefix}_x")
    injected.start()
    injected.feed(tokens, finished=True, finish_reason="stop")
    assert injected.completion().choices[0].message.tool_calls[0].id == "call_x"


def test_the_machine_numbers_on_from_the_number_it_is_handed(encoding):
    machine = ResponsesEventMachine(
        new_context(response_id="resp_seq"), encoding=encoding, first_sequence_number=5
    )
    assert [e.sequence_number for e in machine.start()] == [5, 6]
    machine.sequence_number = 40  # the processor's count, handed in before a feed
    tokens = encoding.encode("<|channel|>final<|message|>One two three", allowed_special="all")
    events = [e for token in tokens for e in machine.feed([token])]
    events += machine.feed([], finished=True, finish_reason="stop")
    assert [e.sequence_number for e in events] == list(range(40, 40 + len(events)))
    assert machine.sequence_number == 40 + len(events)


def test_each_machine_words_a_nameless_call_its_own_way(encoding):
    """Responses reports an invalid Harmony sequence with its position; chat names the call."""
    assert _responses_call(encoding, "functions. ") == (
        None,
        "invalid Harmony token sequence: function call without a function name "
        "(recipient 'functions. ', header ending at position 1)",
    )
    assert _chat_call(encoding, "functions. ") == (
        None,
        "function call without a name (recipient 'functions. ')",
    )


def _cut_at_a_held_back_byte(encoding) -> list[int]:
    """A final answer "ab" then the first byte of a three-byte character, no stop token."""
    lead = next(t for t in range(256) if bytes(encoding._inner.decode_bytes([t])) == b"\xe2")
    return [*encoding.encode("<|channel|>final<|message|>ab", allowed_special="all"), lead]


def test_an_unknown_finish_reason_settles_the_open_item_in_responses(encoding):
    """The failed item carries the text the parser settles at the end of stream."""
    machine = ResponsesEventMachine(new_context(response_id="resp_eos"), encoding=encoding)
    machine.start()
    events = machine.feed(_cut_at_a_held_back_byte(encoding), finished=True, finish_reason="abort")
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["ab\ufffd"]
    done = next(e for e in events if e.type == "response.output_item.done")
    assert done.item.status == "incomplete" and done.item.content[0].text == "ab\ufffd"
    assert [e.type for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2].message == "generation ended with finish reason 'abort'"


def test_an_unknown_finish_reason_sends_no_settled_text_in_chat(encoding):
    """Chat has no item to close: the stream ends with the text streamed so far, then the error."""
    context = ChatContext(completion_id="chatcmpl-eos", model="m", created=0)
    machine = ChatChunkMachine(context, encoding=encoding)
    frames = machine.start() + machine.feed(
        _cut_at_a_held_back_byte(encoding), finished=True, finish_reason="abort"
    )
    payloads = [cc.to_dict(f) for f in frames]
    deltas = [
        p["choices"][0]["delta"] for p in payloads if isinstance(p, dict) and p.get("choices")
    ]
    assert deltas == [{"role": "assistant"}, {"content": "ab"}]
    assert payloads[-2:] == [
        {
            "error": {
                "message": "generation ended with finish reason 'abort'",
                "type": "server_error",
                "code": "server_error",
            }
        },
        "[DONE]",
    ]


def test_the_output_lists_are_typed():
    """The hooks' output list and the machines' ``Turn`` parameters name their types: no
    ``list[Any]``, each machine states what it emits and what its hooks append."""
    import ast
    import inspect

    from trtllm_stream_fix.core import chat_machine, machine, turn

    for module in (turn, machine, chat_machine):
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AnnAssign, ast.arg)):
                annotation = node.returns if isinstance(node, ast.FunctionDef) else node.annotation
                where = (module.__name__, getattr(node, "lineno", None))
                if annotation is not None:
                    assert "list[Any]" not in ast.unparse(annotation), where
    for cls in (ResponsesEventMachine, ChatChunkMachine):
        (base,) = cls.__orig_bases__
        assert len(base.__args__) == 2, cls
