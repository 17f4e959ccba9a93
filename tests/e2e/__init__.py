"""
End-to-end tests: start the node as an operator would and talk to it over real HTTP.
"""
