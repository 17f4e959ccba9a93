"""
Where the end-to-end tests find Node.js with the npm package ethers 6
(installed outside the repository; C{.ci/run} installs it and names its
C{node_modules} in C{NODE_PATH}).
"""

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from twisted.trial.unittest import SkipTest


@dataclass(frozen=True)
class NodeJS:
    """
    Node.js and the environment its scripts find ethers in.

    @ivar binary: the path of the C{node} binary.
    @ivar environment: this process's environment with the C{node_modules}
        that holds ethers first in C{NODE_PATH}: a script finds the ethers the
        check found, wherever the script lies (Node.js also looks in the
        C{node_modules} folders above a script, which differ between the
        check's working directory and the script's).
    """

    binary: str
    environment: dict[str, str]


def node_with_ethers() -> NodeJS:
    """
    Node.js, once it has shown that it can load ethers.

    @raise SkipTest: node is not installed, or cannot find ethers.
    """
    node = shutil.which("node")
    if node is None:
        raise SkipTest("node is not installed: the ethers check needs node and the ethers npm package")
    probe = subprocess.run(
        [node, "-e", "console.log(require.resolve('ethers'))"], capture_output=True, text=True, env=os.environ.copy()
    )
    if probe.returncode != 0:
        raise SkipTest("the ethers npm package is not installed (set NODE_PATH to a node_modules holding ethers 6)")
    modules = Path(probe.stdout.strip())
    while modules.name != "node_modules" and modules != modules.parent:
        modules = modules.parent
    search = [str(modules), *filter(None, os.environ.get("NODE_PATH", "").split(os.pathsep))]
    return NodeJS(node, {**os.environ, "NODE_PATH": os.pathsep.join(search)})


__all__ = ["NodeJS", "node_with_ethers"]
