# SPDX-License-Identifier: Apache-2.0
"""Ship the import-hook ``.pth`` at the root of site-packages (where Python reads it).

Everything else is in ``pyproject.toml``. Package data lands under ``trtllm_stream_fix/``,
where Python ignores ``.pth`` files, so ``build_py`` copies the file to the build root; the
wheel then installs it next to the package, in every environment it is installed into.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "_trtllm_stream_fix.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        source = Path(__file__).parent / "trtllm_stream_fix" / PTH
        target = Path(self.build_lib) / PTH
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)

    def get_outputs(self, include_bytecode: bool = True) -> list:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH)]


setup(cmdclass={"build_py": BuildPyWithPth})
