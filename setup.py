"""
Setuptools entry point; the metadata lives in setup.cfg.

C{twisted.plugins} is added to the packages here because setuptools' package
discovery cannot see a namespace that another distribution (Twisted) owns,
and twistd finds the C{nodex} plugin only if its module is installed there.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["nodex", "nodex.*"]) + ["twisted.plugins"],
)
