"""
Where the end-to-end tests find Node.js with the npm package ethers 6
(installed outside the repository; C{.ci/run} installs it and names its
C{node_modules} in C{NODE_PATH}).
"""

import os
import shutil
import subprocess

from twisted.trial.unittest import SkipTest


def node_with_ethers() -> str:
    """
    The path of the C{node} binary, once it has shown that it can load ethers.

    @raise SkipTest: node is not installed, or cannot find ethers.
    """
    node = shutil.which("node")
    if node is None:
        raise SkipTest("node is not installed: the ethers check needs node and the ethers npm package")
    probe = subprocess.run([node, "-e", "require.resolve('ethers')"], capture_output=True, env=os.environ.copy())
    if probe.returncode != 0:
        raise SkipTest("the ethers npm package is not installed (set NODE_PATH to a node_modules holding ethers 6)")
    return node


__all__ = ["node_with_ethers"]
