"""
The dev chain's data (Anvil's and Hardhat's methods): blocks written by dev methods,
and the state snapshots of C{anvil_dumpState} / C{anvil_loadState} (C{docs/devchain.md}).
"""
