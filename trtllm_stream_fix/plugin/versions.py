# SPDX-License-Identifier: Apache-2.0
"""Every fetched upstream version of the patched files, by sha256 (docs/upstream-versions.md).

``doctor --fingerprint`` names the recorded version a file of a tree or of the installed
TensorRT-LLM is, by its sha256. Adding a file is one row here and one in each table of
docs/upstream-versions.md (the census) and docs/real-upstream.md (the trees' lock).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The files ``doctor --fingerprint`` reports (under ``tensorrt_llm/serve/``).
PATCHED_FILES = (
    "responses_utils.py",
    "postprocess_handlers.py",
    "openai_protocol.py",
    "openai_server.py",
    "harmony_adapter.py",
)


@dataclass(frozen=True)
class LockedFile:
    name: str  # file name under tensorrt_llm/serve/
    line: str  # version line(s) it belongs to
    origin: str  # commit, or code-index id where the commit is not exposed
    chars: int
    sha256: str


LOCK: tuple[LockedFile, ...] = (
    LockedFile(
        "responses_utils.py",
        "tool-call-ids",
        "index id 71051154162",
        151006,
        "e5ab7d554ccdad85ed9e1fb2f5165e3076d844a73a7bf2ee9e1209bd84e66788",
    ),
    LockedFile(
        "responses_utils.py",
        "271a1eda",
        "271a1edadcfa14c29b9fe4396b2cbee66b812b05",
        159565,
        "0de0112da70d801341c50dd4db0abab72477739c4ce11bde40356adce5bf53cb",
    ),
    LockedFile(
        "responses_utils.py",
        "terminal-event",
        "index id 71053574395",
        180040,
        "6da517b2adb6f193d3d3d14cd1a46b96dc0b3793e31349568c1bd13ef4c977d3",
    ),
    LockedFile(
        "responses_utils.py",
        "993c0eec",
        "993c0eec9327a503caebf2ba8b733ec20a0fbc40",
        131605,
        "3066b72c1af7667cef24b4ab69786815ac5c705e9fbd3d593e0819c1d2976373",
    ),
    LockedFile(
        "responses_utils.py",
        "993c0eec",
        "index id 71356448852",
        131201,
        "b7e70c69d8d55c77e09fe808099b33cfa65d564d26745b8113cb2c4c32785ec6",
    ),
    LockedFile(
        "responses_utils.py",
        "early-2026",
        "02238b67ef3a25ae4d8c50d5f1942ddee2f8f00b",
        74546,
        "536006eeca72031541604bf860e0993d010624171ce7bc8fdb3ea4ad4d209c67",
    ),
    LockedFile(
        "responses_utils.py",
        "pre-class",
        "83ab45a50d169b08e29e9bf2f46fc66b3838cc37",
        36703,
        "bb9fc1a102f805ead9aed329b829ec6c0b2fca367c50cbbc90b1d256ac3bc105",
    ),
    LockedFile(
        "harmony_adapter.py",
        "all",
        "38134b130944ed5c037949456df20300126ec728",
        73533,
        "3d6ef7e06e634e390e7cc9d6ba57d71991f50b2cc3ff9d83fe47c82274ea13e7",
    ),
    LockedFile(
        "openai_protocol.py",
        "all (18643ffd)",
        "18643ffda86feb241b3cf8896657595e48a6a1b6",
        96138,
        "e0f7c90a3468079d8dd6e95251ae58377bc8b42a3cf9dd9668a7f892f8c7618a",
    ),
    LockedFile(
        "openai_protocol.py",
        "271a1eda-op0076e939 (0076e939)",
        "0076e9390e1ed11515f149eec356f5a03f4a00d8",
        99678,
        "0bd34dc44c80eebc13295ec8844b30d74ee6daf53664791807995fd1a832753d",
    ),
    LockedFile(
        "postprocess_handlers.py",
        "all (01bf1923)",
        "01bf19231d29d8f0766e31c117d1cf39ed00d3d5",
        33925,
        "d665b747f0eb4d96b119c86f763a0296b8bea8cf9ce08fc67da1ccebf6b1c894",
    ),
    LockedFile(
        "openai_server.py",
        "271a1eda, terminal-event (server)",
        "271a1edadcfa14c29b9fe4396b2cbee66b812b05",
        197617,
        "9061601e503de5f2918d28e814fd8c836076de6eb1a45eb791e7726c31c774fb",
    ),
    LockedFile(
        "openai_server.py",
        "993c0eec (server)",
        "993c0eec9327a503caebf2ba8b733ec20a0fbc40",
        194652,
        "623c73e9d4a42d1180780da2a3be6e6bad70a34120ebd93e9e3cf5fa320588a6",
    ),
    LockedFile(
        "openai_protocol.py",
        "pre-class",
        "index id 1179858508",
        35407,
        "4bf7482c889ec0bbb88ff0adef5ade33baf8e7fe5e3c41c4be4dcc376da73d2a",
    ),
    LockedFile(
        "postprocess_handlers.py",
        "pre-class (harmony-38134b13)",
        "index id 45575800",
        19020,
        "35a3fc9781d87c70fead62c929b9ba29ea9cad3cd6d1a541d21b7c61c0a444ed",
    ),
    LockedFile(
        "openai_server.py",
        "pre-class (server)",
        "e7f7345e31e574b5d0918b756b871882c7346b3c",
        48667,
        "1f8dc96fefd3311138e1452f7ad227ba9429e80c1324968d78dad8eec411caf5",
    ),
)


def recorded(name: str, sha256: str) -> LockedFile | None:
    """The lock row of file ``name`` with this sha256, if any."""
    return next((f for f in LOCK if f.name == name and f.sha256 == sha256), None)
