# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``xgrammar.structural_tag.Format``: any JSON object."""

from pydantic import BaseModel, ConfigDict


class Format(BaseModel):
    model_config = ConfigDict(extra="allow")
