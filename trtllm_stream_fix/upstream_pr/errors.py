# SPDX-License-Identifier: Apache-2.0
"""The ``upstream-pr`` command's errors (each ends the command with status 2 and its message).

Hierarchy::

    StreamFixError
    ├── SourceTreeError (ValueError): not a TensorRT-LLM tree, or one lacking an edited file
    ├── UnknownVersionError (ValueError): the tree matches no recorded version line
    ├── ConversionError (ValueError): a module refers to something with no place upstream
    ├── EditError (ValueError): a file lacks something an edit is located by
    └── HarnessUnavailableError (RuntimeError): the harness's ``tests/`` are not installed
"""

from __future__ import annotations

from ..core.errors import StreamFixError


class SourceTreeError(StreamFixError, ValueError):
    """The folder is not a TensorRT-LLM tree (or lacks the files the change edits)."""


class UnknownVersionError(StreamFixError, ValueError):
    """The tree matches no recorded version line."""


class ConversionError(StreamFixError, ValueError):
    """A module refers to something that has no place in the upstream tree."""


class EditError(StreamFixError, ValueError):
    """The file lacks something an edit is located by."""


class HarnessUnavailableError(StreamFixError, RuntimeError):
    """The harness lives in the repository's ``tests/``, which this install lacks."""
