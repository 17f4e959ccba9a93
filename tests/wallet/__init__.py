"""
Tests of the wallet's pure parts (L{nodex.wallet}).
"""
