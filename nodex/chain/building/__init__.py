"""
Building blocks this node makes: the requests and their outcome, the builder that
fills a block on a parent, and the work service's template reads (C{docs/mining.md}).
"""
