"""
The local wallet's pure parts (below the services, no Twisted): the Web3
Secret Storage keyfile format and the keystore directory, the EIP-191
message digest of C{eth_sign}, and EIP-712 typed-data hashing.
"""
