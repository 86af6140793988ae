# SPDX-License-Identifier: Apache-2.0
"""SSE reader: WHATWG framing, chunking invariance, strict UTF-8, limits, unterminated tail."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtllm_stream_fix.checker import (
    SSEDecodeError,
    SSEEvent,
    SSELimitError,
    SSELimits,
    SSEProtocolError,
    SSEReader,
    parse_sse,
)

pytestmark = pytest.mark.cpu_only

BODY = (
    '\ufeffevent: response.created\r\ndata: {"a": 1}\r\n\r\n'
    ": keep-alive\n"
    "data: line one\ndata:line two\rdata\r\n\n"
    "id: 7\nevent: x\ndata: h\u00e9llo \U0001f600\n\n"
    "retry: 100\n\n"
    "event: only-event\n\n"
    "data: tail"
).encode()

EXPECTED = [
    SSEEvent("response.created", '{"a": 1}'),
    SSEEvent("message", "line one\nline two\n"),
    SSEEvent("x", "h\u00e9llo \U0001f600", "7"),
]


def read_chunks(chunks: list[bytes]) -> tuple[list[SSEEvent], SSEReader]:
    reader = SSEReader()
    events = [ev for chunk in chunks for ev in reader.feed(chunk)]
    reader.close()
    return events, reader


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(set(cuts)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def test_whole_body() -> None:
    events, reader = parse_sse(BODY)
    assert events == EXPECTED
    assert reader.discarded == "data: tail"
    assert reader.comments == 1
    assert reader.retry == 100
    assert reader.last_event_id == "7"
    assert any("without data" in w for w in reader.warnings)


def test_byte_by_byte() -> None:
    events, reader = read_chunks([BODY[i : i + 1] for i in range(len(BODY))])
    assert events == EXPECTED
    assert reader.discarded == "data: tail"


@pytest.mark.parametrize("cut", range(1, len(BODY)))
def test_every_single_boundary(cut: int) -> None:
    events, reader = read_chunks([BODY[:cut], BODY[cut:]])
    assert events == EXPECTED
    assert reader.discarded == "data: tail"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(BODY) - 1), max_size=30))
def test_any_chunking_parses_identically(cuts: list[int]) -> None:
    events, reader = read_chunks(split_at(BODY, cuts))
    assert events == EXPECTED
    assert reader.discarded == "data: tail"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "response.output_text.delta", "error"]),
            st.lists(
                st.text(
                    alphabet=st.characters(
                        blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)
                    ),
                    max_size=12,
                ),
                min_size=1,
                max_size=3,
            ),
            st.sampled_from(["\n", "\r", "\r\n"]),
        ),
        max_size=6,
    ),
    st.data(),
)
def test_generated_streams_roundtrip(
    spec: list[tuple[str, list[str], str]], data: st.DataObject
) -> None:
    body = ""
    expected = []
    for name, lines, eol in spec:
        if name:
            body += f"event: {name}{eol}"
        body += "".join(f"data: {line}{eol}" for line in lines) + eol
        expected.append(SSEEvent(name or "message", "\n".join(lines)))
    raw = body.encode()
    cuts = data.draw(st.lists(st.integers(0, max(len(raw), 1)), max_size=10))
    events, reader = read_chunks(split_at(raw, cuts))
    assert events == expected
    assert reader.discarded is None


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_line_endings(eol: bytes) -> None:
    body = b"data: a" + eol + b"data: b" + eol + eol
    assert parse_sse(body)[0] == [SSEEvent("message", "a\nb")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    reader = SSEReader()
    assert reader.feed(b"data: a\r") == []
    assert reader.feed(b"\n\r") == [SSEEvent("message", "a")]
    # the LF after this CR belongs to the same line end, not a second (empty) line
    assert reader.feed(b"\ndata: b\r\n") == []
    assert reader.feed(b"\r\n") == [SSEEvent("message", "b")]


def test_cr_cr_is_two_line_ends() -> None:
    assert parse_sse(b"data: a\r\r")[0] == [SSEEvent("message", "a")]


def test_field_parsing_details() -> None:
    events, reader = parse_sse(b"data:no-space\ndata:  two spaces\ndata\nfoo: bar\nid: a\x00b\n\n")
    assert events == [SSEEvent("message", "no-space\n two spaces\n")]
    assert any("unknown field" in w for w in reader.warnings)
    assert any("NUL" in w for w in reader.warnings)


def test_bom_only_stripped_once() -> None:
    events, _ = parse_sse(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n")
    # the second BOM makes the first field name "\ufeffdata", an unknown field
    assert events == [SSEEvent("message", "y")]


def test_bom_split_across_chunks() -> None:
    events, _ = read_chunks([b"\xef", b"\xbb", b"\xbfdata: x\n\n"])
    assert events == [SSEEvent("message", "x")]


@pytest.mark.parametrize(
    "bad", [b"data: \xff\n\n", b"data: \xc3\x28\n\n", b"data: \xed\xa0\x80\n\n"]
)
def test_invalid_utf8_is_an_error(bad: bytes) -> None:
    reader = SSEReader()
    with pytest.raises(SSEDecodeError, match="invalid UTF-8"):
        reader.feed(bad)
    with pytest.raises(SSEDecodeError):  # sticky
        reader.feed(b"data: fine\n\n")


def test_multibyte_split_is_fine_but_truncated_tail_is_discarded() -> None:
    snowman = "\u2603".encode()
    events, _ = read_chunks([b"data: " + snowman[:1], snowman[1:] + b"\n\n"])
    assert events == [SSEEvent("message", "\u2603")]
    _, reader = read_chunks([b"data: ok\n\ndata: " + snowman[:2]])
    assert reader.discarded is not None


def test_line_limit() -> None:
    reader = SSEReader(SSELimits(max_line=16))
    reader.feed(b"data: 0123456789")  # 16 characters, at the limit
    with pytest.raises(SSELimitError, match="line exceeds 16"):
        reader.feed(b"X")  # raised before the line ends


def test_event_limit() -> None:
    reader = SSEReader(SSELimits(max_event=10))
    reader.feed(b"data: 12345\n")
    with pytest.raises(SSELimitError, match="event exceeds 10"):
        reader.feed(b"data: 12345\n")


def test_event_limit_resets_per_event() -> None:
    reader = SSEReader(SSELimits(max_event=10))
    for _ in range(5):
        assert reader.feed(b"data: 12345\n\n") == [SSEEvent("message", "12345")]


def test_total_limit() -> None:
    reader = SSEReader(SSELimits(max_total_bytes=20))
    reader.feed(b"data: 1234567\n\n")
    with pytest.raises(SSELimitError, match="in total"):
        reader.feed(b"data: 1234567\n\n")


def test_limit_error_is_protocol_error() -> None:
    assert issubclass(SSELimitError, SSEProtocolError)
    assert issubclass(SSEDecodeError, SSEProtocolError)


@pytest.mark.parametrize(
    ("body", "tail"),
    [
        (b"data: a\n\ndata: b", "data: b"),
        (b"data: a\n\ndata: b\n", "data: b"),
        (b"data: a\n\nevent: e\ndata: b\n", "event: e\ndata: b"),
        (b"data: a\n\n", None),
        (b"data: a\n\n: comment only", None),
    ],
)
def test_unterminated_last_event_is_discarded_and_reported(body: bytes, tail: str | None) -> None:
    events, reader = parse_sse(body)
    assert events == [SSEEvent("message", "a")]
    assert reader.discarded == tail


def test_feed_after_close_raises() -> None:
    reader = SSEReader()
    reader.close()
    with pytest.raises(SSEProtocolError, match="closed"):
        reader.feed(b"data: x\n\n")
