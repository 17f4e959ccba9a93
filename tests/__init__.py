"""
Tests for nodex; the layout mirrors the C{nodex} package.
"""
