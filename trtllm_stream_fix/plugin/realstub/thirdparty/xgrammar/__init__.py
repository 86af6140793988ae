# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``xgrammar`` when it is not installed: ``openai_protocol`` types the
``structural_tag`` response format with ``xgrammar.structural_tag.Format``."""

from . import structural_tag

__all__ = ["structural_tag"]
